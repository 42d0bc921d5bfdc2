"""Reproducible benchmarks: each prints a table and updates its section of docs/benchmarks.md."""
