"""collab: a self-hostable backend for embedded collaboration features with an AI core."""

__version__ = "0.1.0"
