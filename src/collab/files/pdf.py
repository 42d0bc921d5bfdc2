"""PDF checklists: text extraction in a child process with time, memory and page caps, then list parsing."""

import json
import math
import subprocess
import sys
from pathlib import Path

from .common import Collector, DecodeError, Decoded, Limits, cap_canonical
from .outline import Line, outline_tasks, parse_blocks

CHILD = Path(__file__).with_name("_pdf_child.py")


def extract_pages(data: bytes, *, limits: Limits) -> list[str]:
    """Page texts from a child process; DecodeError on timeout, limits, encryption or corruption."""
    command = [
        sys.executable, "-I", str(CHILD),
        str(limits.max_pdf_pages), str(limits.pdf_memory_bytes), str(math.ceil(limits.pdf_timeout_s) + 1),
    ]
    try:
        # run() kills the child when the timeout expires, so a looping parser cannot outlive the request.
        done = subprocess.run(command, input=data, capture_output=True, timeout=limits.pdf_timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DecodeError("limits", f"reading the PDF took longer than {limits.pdf_timeout_s:g}s") from exc
    except OSError as exc:
        raise DecodeError("unreadable", f"the PDF reader could not be started: {exc}") from exc
    try:
        verdict = json.loads(done.stdout)
    except ValueError:
        verdict = None
    if not isinstance(verdict, dict):
        if done.returncode < 0 or b"MemoryError" in done.stderr:
            # Killed by a signal: SIGXCPU from the CPU cap or SIGKILL/SIGSEGV after exhausting memory.
            raise DecodeError("limits", "reading the PDF exceeded the time or memory allowed")
        raise DecodeError("unreadable", "the PDF reader failed on this file")
    if not verdict.get("ok"):
        kind = verdict.get("kind") if verdict.get("kind") in {"limits", "unreadable"} else "unreadable"
        raise DecodeError(kind, str(verdict.get("message") or "the PDF cannot be read"))
    pages = verdict.get("pages")
    if not isinstance(pages, list):
        raise DecodeError("unreadable", "the PDF reader returned no pages")
    return [str(page).replace("\x00", "") for page in pages]


def decode_pdf(data: bytes, *, limits: Limits) -> Decoded:
    """Decode a PDF checklist into tasks (source "page N")."""
    pages = extract_pages(data, limits=limits)
    lines = [
        Line(raw, f"page {number}")
        for number, page in enumerate(pages, start=1)
        for raw in page.splitlines()
    ]
    blocks = parse_blocks(lines, markdown=False, loose_headings=True)
    collector = Collector(limits)
    meta = outline_tasks(blocks, collector=collector)
    return Decoded(
        tasks=collector.tasks,
        skipped=collector.skipped,
        canonical_text=cap_canonical("\n\n".join(pages)),
        meta={"format": "pdf", "pages": len(pages), **meta, **collector.meta()},
    )
