"""Importing this module imports the model client (litellm, seconds): for processes that fork workers (drills)."""

from collab.llm.client import load_litellm

load_litellm()
