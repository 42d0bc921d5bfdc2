"""The LLM layer: the only package that imports litellm. Routing by model prefix, per-call keys and bases."""
