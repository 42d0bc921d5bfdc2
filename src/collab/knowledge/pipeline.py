"""The pure steps of knowledge ingestion: the MIME check against the bytes, canonical markdown, chunks, the
rule-based classification, the candidate rule lines and the rule diff of an update."""

import re
from dataclasses import dataclass

from collab.files import Decoded

PDF = "application/pdf"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
CSV = "text/csv"
TEXT = "text/plain"
MARKDOWN = "text/markdown"
# Velt's four, and Markdown (text that the text decoder reads with its headings).
MIME_TYPES = (PDF, CSV, XLSX, TEXT, MARKDOWN)
MAX_RULE_CHARS = 1000
MAX_CATEGORY_CHARS = 200
# A line is matched on its first this many characters: a rule keeps 1,000 and a heading 200 of them anyway.
MAX_LINE_CHARS = 4000

# Both patterns are linear in the line: each `\s+` is followed by `\S`, so no two quantifiers share characters
# (a heading's closing `#`s are stripped in code, not matched: a lazy text before `\s*#*\s*$` is cubic).
_ITEM = re.compile(r"^\s{0,8}(?:[-*+•]|\d{1,4}[.)]|\[[ xX]?\]|[-*+]\s+\[[ xX]?\])\s+(?P<text>\S.*)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<text>\S.*)$")
_EMPTY_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*$")
_CHECKBOX = re.compile(r"^\[[ xX]?\]\s+")
_BLANK_LINES = re.compile(r"\n\s*\n")
_NOT_SPACE = re.compile(r"\S")
_DIRECTIVE = re.compile(
    r"\b(must|never|always|ensure|ensures|should|shall|required|requires|do not|don't|avoid|only|forbidden|"
    r"prohibited|mandatory)\b", re.IGNORECASE)
# A source is rule-based when at least this many list lines carry directive wording, and they are at least this
# share of its list lines (a prose document with one "must" in a bullet stays prose).
MIN_RULE_LINES = 2
MIN_RULE_SHARE = 0.3


def bytes_match(content: bytes, mime_type: str) -> str | None:
    """Why the bytes are not of the declared type (Velt checks the file's own bytes), or None when they are."""
    head = content[:8]
    if mime_type == PDF:
        return None if content.lstrip()[:5] == b"%PDF-" else "The file is not a PDF (no %PDF- header)."
    if mime_type == XLSX:
        return None if head.startswith(b"PK\x03\x04") else "The file is not an Excel workbook (not a ZIP container)."
    if head.startswith(b"%PDF-") or head.startswith(b"PK\x03\x04"):
        return f"The file is binary, not {mime_type}."
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return f"A {mime_type} file must be valid UTF-8."
    if b"\x00" in content:
        return f"A {mime_type} file must not hold NUL bytes."
    return None


def canonical_markdown(decoded: Decoded, mime_type: str) -> str:
    """The source's canonical markdown: tables as sections of bullets, documents as their text."""
    if mime_type in (CSV, XLSX):
        lines: list[str] = []
        category: str | None = "\0"
        for task in decoded.tasks:
            if task.category != category:
                category = task.category
                lines += ["", f"## {category}"] if category else [""]
            lines.append(f"- {task.text}")
        return "\n".join(lines).strip() + "\n"
    return decoded.canonical_text.strip() + "\n"


def chunks(markdown: str, *, max_chars: int, max_chunks: int) -> list[str]:
    """Paragraph-aligned passages of at most `max_chars` (a longer paragraph is cut), at most `max_chunks`."""
    out: list[str] = []
    current = ""
    for block in _BLANK_LINES.split(markdown):
        if len(out) >= max_chunks:
            break
        block = block.strip()
        start = 0  # a long paragraph is cut by offsets (slicing off its rest each time is quadratic)
        while len(block) - start > max_chars and len(out) < max_chunks:
            if current:
                out.append(current)
                current = ""
            cut = block.rfind(" ", start, start + max_chars)
            cut = cut if cut > start + max_chars // 2 else start + max_chars
            out.append(block[start:cut].strip())
            rest = _NOT_SPACE.search(block, cut)
            start = rest.start() if rest else len(block)
        block = block[start:] if len(out) < max_chunks else ""
        if not block:
            continue
        if current and len(current) + 2 + len(block) > max_chars:
            out.append(current)
            current = ""
        current = f"{current}\n\n{block}" if current else block
    if current:
        out.append(current)
    return [c for c in out if c.strip()][:max_chunks]


@dataclass
class Candidate:
    """A line that reads like a rule, with the heading it sits under."""

    text: str
    category: str | None


def heading(line: str) -> str | None:
    """The text of a Markdown ATX heading line (its closing `#`s dropped; "" for an empty heading), or None when
    the line is not one."""
    line = line[:MAX_LINE_CHARS]
    match = _HEADING.match(line)
    if not match:
        return "" if _EMPTY_HEADING.match(line) else None
    text = match.group("text").rstrip()
    return text.rstrip("#").rstrip() or text


def candidates(markdown: str) -> tuple[list[Candidate], int]:
    """The list lines carrying directive wording (with their section), and how many list lines there are."""
    found: list[Candidate] = []
    items = 0
    section: str | None = None
    for line in markdown.splitlines():
        line = line[:MAX_LINE_CHARS]
        title = heading(line)
        if title is not None:
            section = title.strip()[:MAX_CATEGORY_CHARS] or None
            continue
        match = _ITEM.match(line)
        if not match:
            continue
        items += 1
        text = _CHECKBOX.sub("", match.group("text")).strip()
        if _DIRECTIVE.search(text):
            found.append(Candidate(text[:MAX_RULE_CHARS], section))
    return found, items


def rule_based(markdown: str) -> bool:
    """Velt's classification: enough list lines (bullets, numbers, checkboxes) carry directive wording."""
    found, items = candidates(markdown)
    return ruled(len(found), items)


def ruled(found: int, items: int) -> bool:
    """Whether `found` directive lines among `items` list lines make a source rule-based."""
    return found >= MIN_RULE_LINES and found >= MIN_RULE_SHARE * items


def normalise(text: str) -> str:
    """A rule's text as compared across versions: case, spacing and trailing punctuation ignored."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".;!").casefold()


def diff(old: list[str], new: list[str]) -> dict[str, object]:
    """Velt's rule diff: the new version's added rules, the old one's removed ones, how many stayed."""
    before = {normalise(t) for t in old}
    after = {normalise(t) for t in new}
    return {
        "added": [t for t in new if normalise(t) not in before],
        "removed": [t for t in old if normalise(t) not in after], "unchanged": len(before & after)
    }
