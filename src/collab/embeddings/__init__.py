"""Sentence embeddings: the model (loaded once per process, offline) and its registry in Postgres."""
