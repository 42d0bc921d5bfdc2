"""Plain-text and Markdown checklists: bullets, numbered items, headings as categories."""

from .common import Collector, Decoded, Limits, check_units, decode_bytes
from .outline import MAX_LINE_CHARS, Line, outline_tasks, parse_blocks


def _lines(raw_lines: list[str]) -> list[Line]:
    """Numbered lines cut to MAX_LINE_CHARS; a run of blank lines is kept as one (it only ends a block)."""
    lines: list[Line] = []
    blank = False
    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            if blank:
                continue
            blank = True
        else:
            blank = False
        lines.append(Line(raw[:MAX_LINE_CHARS], f"line {number}"))
    return lines


def decode_text(data: bytes, *, markdown: bool, limits: Limits) -> Decoded:
    """Decode a text or Markdown checklist into tasks (source "line N")."""
    text, encoding = decode_bytes(data)
    raw_lines = text.splitlines()
    check_units(sum(1 for raw in raw_lines if raw.strip()), what="lines")
    lines = _lines(raw_lines)
    # Markdown headings and fences are honoured in .txt files too: people paste Markdown into them.
    blocks = parse_blocks(lines, markdown=True, loose_headings=False)
    collector = Collector(limits)
    meta = outline_tasks(blocks, collector=collector)
    return collector.decoded(text, format="markdown" if markdown else "text", encoding=encoding, lines=len(raw_lines),
                             **meta)
