"""Helpers the tests share: HTTP basics, builders, servers and clients they start, hostile inputs."""
