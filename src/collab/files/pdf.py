"""PDF checklists: text extraction in a child process with time, memory and page caps, then list parsing."""

import json
import math

from .common import Collector, Decoded, DecodeError, Limits
from .outline import Line, outline_tasks, parse_blocks
from .sandbox import run_child


def extract_pages(data: bytes, *, limits: Limits) -> list[str]:
    """Page texts from a sandboxed child; DecodeError on timeout, limits, encryption or corruption."""
    args = [limits.max_pdf_pages, limits.pdf_memory_bytes, math.ceil(limits.pdf_timeout_s) + 1]
    output = run_child("_pdf_child.py", [str(a) for a in args], data, timeout_s=limits.pdf_timeout_s, what="PDF")
    try:
        verdict = json.loads(output)
    except ValueError:
        verdict = None
    if not isinstance(verdict, dict):
        raise DecodeError("unreadable", "the PDF reader failed on this file")
    if not verdict.get("ok"):
        kind = verdict["kind"] if verdict.get("kind") in {"limits", "unreadable"} else "unreadable"
        raise DecodeError(kind, str(verdict.get("message") or "the PDF cannot be read"))
    pages = verdict.get("pages")
    if not isinstance(pages, list):
        raise DecodeError("unreadable", "the PDF reader returned no pages")
    return [str(page).replace("\x00", "") for page in pages]


def decode_pdf(data: bytes, *, limits: Limits) -> Decoded:
    """Decode a PDF checklist into tasks (source "page N")."""
    pages = extract_pages(data, limits=limits)
    lines = [Line(raw, f"page {number}") for number, page in enumerate(pages, start=1) for raw in page.splitlines()]
    blocks = parse_blocks(lines, markdown=False, loose_headings=True)
    collector = Collector(limits)
    meta = outline_tasks(blocks, collector=collector)
    return collector.decoded("\n\n".join(pages), format="pdf", pages=len(pages), **meta)
