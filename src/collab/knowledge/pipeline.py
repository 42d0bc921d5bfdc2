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

_ITEM = re.compile(r"^\s{0,8}(?:[-*+•]|\d{1,4}[.)]|\[[ xX]?\]|[-*+]\s+\[[ xX]?\])\s+(?P<text>\S.*)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?P<text>.+?)\s*#*\s*$")
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
    for block in re.split(r"\n\s*\n", markdown):
        block = block.strip()
        while len(block) > max_chars:
            if current:
                out.append(current)
                current = ""
            cut = block.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            out.append(block[:cut].strip())
            block = block[cut:].strip()
        if not block:
            continue
        if current and len(current) + 2 + len(block) > max_chars:
            out.append(current)
            current = ""
        current = f"{current}\n\n{block}" if current else block
        if len(out) >= max_chunks:
            break
    if current:
        out.append(current)
    return [c for c in out if c.strip()][:max_chunks]


@dataclass
class Candidate:
    """A line that reads like a rule, with the heading it sits under."""

    text: str
    category: str | None


def candidates(markdown: str) -> tuple[list[Candidate], int]:
    """The list lines carrying directive wording (with their section), and how many list lines there are."""
    found: list[Candidate] = []
    items = 0
    heading: str | None = None
    for line in markdown.splitlines():
        match = _HEADING.match(line)
        if match:
            heading = match.group("text").strip()[:MAX_CATEGORY_CHARS] or None
            continue
        match = _ITEM.match(line)
        if not match:
            continue
        items += 1
        text = re.sub(r"^\[[ xX]?\]\s+", "", match.group("text")).strip()
        if _DIRECTIVE.search(text):
            found.append(Candidate(text[:MAX_RULE_CHARS], heading))
    return found, items


def rule_based(markdown: str) -> bool:
    """Velt's classification: enough list lines (bullets, numbers, checkboxes) carry directive wording."""
    found, items = candidates(markdown)
    return len(found) >= MIN_RULE_LINES and len(found) >= MIN_RULE_SHARE * items


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
