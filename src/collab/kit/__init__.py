"""Shared infrastructure with no domain knowledge."""
