"""Plain-text and Markdown checklists: bullets, numbered items, headings as categories."""

from .common import Collector, Decoded, Limits, check_units, decode_bytes
from .outline import Line, outline_tasks, parse_blocks


def decode_text(data: bytes, *, markdown: bool, limits: Limits) -> Decoded:
    """Decode a text or Markdown checklist into tasks (source "line N")."""
    text, encoding = decode_bytes(data)
    raw_lines = text.splitlines()
    check_units(sum(1 for raw in raw_lines if raw.strip()), what="lines")
    lines = [Line(raw, f"line {number}") for number, raw in enumerate(raw_lines, start=1)]
    # Markdown headings and fences are honoured in .txt files too: people paste Markdown into them.
    blocks = parse_blocks(lines, markdown=True, loose_headings=False)
    collector = Collector(limits)
    meta = outline_tasks(blocks, collector=collector)
    return collector.decoded(
        text, format="markdown" if markdown else "text", encoding=encoding, lines=len(lines), **meta
    )
