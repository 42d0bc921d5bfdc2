"""The deterministic stand-in extraction model, as the tests name it; it lives in collab.llm.fake."""

from collab.llm.fake import answer

__all__ = ["answer"]
