"""Harnesses shared by the tests and the benchmarks: the service on loopback and fake model providers."""
