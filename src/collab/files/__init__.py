"""Decode uploaded review checklists (CSV, TSV, XLSX, PDF, text, Markdown) into task texts."""

from .common import Decoded, DecodeError, Limits, Skipped, Task
from .decode import SUPPORTED_MIME_TYPES, decode, normalise_mime_type

__all__ = [
    "SUPPORTED_MIME_TYPES", "DecodeError", "Decoded", "Limits", "Skipped", "Task", "decode", "normalise_mime_type"
]
