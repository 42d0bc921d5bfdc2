"""Line-oriented documents (PDF text, plain text, Markdown) to tasks: list items, headings, wrapped lines."""

import re
from dataclasses import dataclass

from .common import Collector, check_units, clean, ends_sentence

# Numbered markers: "1." "1)" "(1)" "2.3" "2.3." "(a)" "a)" "a." "iv)"; bullets: - * + • and checkbox glyphs.
_NUMBERED = (r"\d{1,4}(?:\.\d{1,3})+\.?"
             r"|\d{1,4}[.)]"
             r"|\(\d{1,3}\)"
             r"|\([a-zA-Z]\)|[a-zA-Z][.)]"
             r"|\(?[ivxIVX]{1,5}[.)]")
_BULLETS = r"[-*+•●○▪▫◦‣∙·–—□■☐☑☒✓✔➢➤►]"
MARKER = re.compile(rf"^(?P<marker>{_NUMBERED}|{_BULLETS})\s+(?P<text>\S.*)$")
_CHECKBOX = re.compile(r"^\[[ xX✓]?\]\s+")
# Every pattern here runs on untrusted lines: no two adjacent quantifiers may match the same characters
# (that is what made "# x" + spaces + "y" cubic); the closing "#"s of an ATX heading are stripped in Python.
_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
_SETEXT = re.compile(r"^\s{0,3}(={2,}|-{2,})\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_RULE = re.compile(r"^\s{0,3}([-*_=]\s*){3,}$")
_SECTION = re.compile(r"^(section|part|chapter|appendix|annex|article)\s+[\dIVXLC]+[A-Za-z]?\b", re.IGNORECASE)
_PAGE_FURNITURE = re.compile(r"^(page\s+)?\d{1,4}(\s*(of|/)\s*\d{1,4})?$|^[-–]\s*\d{1,4}\s*[-–]$", re.IGNORECASE)
# Brackets and parentheses are excluded inside, so every scan stops at the next one: linear, not quadratic.
_LINK = re.compile(r"\[([^\[\]]+)\]\([^()]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")

MAX_HEADING_CHARS = 80
MAX_HEADING_WORDS = 10
WRAP_MIN_CHARS = 40
# Past this a block is far beyond max_task_chars; further wrapped lines are dropped to stay linear.
MAX_BLOCK_CHARS = 64_000
# Lines are cut to this before any pattern sees them (a task keeps at most max_task_chars anyway).
MAX_LINE_CHARS = 10_000
# Words that cannot end a line of a finished item: the sentence must go on.
_CONNECTORS = frozenset({
    "a", "an", "and", "or", "the", "of", "to", "with", "for", "in", "on", "by", "at", "from", "that", "is", "are", "be"
})


@dataclass
class Line:
    text: str
    source: str


class Block:
    """A list item, paragraph or heading; wrapped lines are appended as parts."""

    def __init__(self, kind: str, text: str, source: str, *, marker: str = "", tentative: bool = False):
        self.kind = kind  # "item", "para" or "heading"
        self.source = source
        self.marker = marker
        self.tentative = tentative  # a loose heading, kept only if something follows it
        self.parts = [text]
        self.size = len(text)
        self.last_len = len(text) + len(marker) + 1
        self.last_word = text.rsplit(" ", 1)[-1].casefold()

    @property
    def text(self) -> str:
        return " ".join(self.parts)

    @property
    def tail(self) -> str:
        return self.parts[-1]

    def extend(self, text: str) -> None:
        """Join a wrapped continuation line (a word hyphenated across lines is rejoined)."""
        self.last_len = len(text)
        self.last_word = text.rsplit(" ", 1)[-1].casefold()
        if self.size > MAX_BLOCK_CHARS:
            return
        tail = self.parts[-1]
        if tail.endswith("-") and len(tail) > 1 and tail[-2].isalpha() and text[:1].islower() and len(tail) < 1_000:
            self.parts[-1] = tail[:-1] + text
        else:
            self.parts.append(text)
        self.size += len(text) + 1


def _all_caps(text: str) -> bool:
    return text.isupper() and sum(ch.isalpha() for ch in text) >= 3


def _short(text: str) -> bool:
    return len(text) <= MAX_HEADING_CHARS and len(text.split()) <= MAX_HEADING_WORDS


def _strong_heading(text: str) -> bool:
    """'Section 2: Access', 'PART III', 'ACCESS CONTROL': headings wherever they appear."""
    return _short(text) and not ends_sentence(text) and (bool(_SECTION.match(text)) or _all_caps(text))


def _weak_heading(text: str, *, loose: bool) -> bool:
    """A short label ending in a colon; with loose (PDF) any short unpunctuated capitalised line."""
    if not _short(text) or ends_sentence(text):
        return False
    if text.endswith(":") and len(text.split()) <= 6:
        return True
    return loose and text[:1].isupper() and not text.endswith(",")


def _wraps_into(block: Block, text: str) -> bool:
    """Whether an unindented line is the wrapped continuation of the open block."""
    if text[:1] in ",;)]":
        return True
    tail = block.tail
    if ends_sentence(tail) or tail.endswith(":"):
        return False
    # Only a line that ran long was wrapped; a short line ended on its own unless it stopped mid-phrase.
    if block.last_len >= WRAP_MIN_CHARS:
        return True
    return text[:1].islower() and (tail.endswith(("-", ",")) or block.last_word in _CONNECTORS)


def _inline(text: str) -> str:
    return _EMPHASIS.sub("", _LINK.sub(r"\1", text))


def _atx_title(text: str) -> str:
    """A heading's text without the optional closing run of '#'."""
    return text.rstrip().rstrip("#").rstrip()


def parse_blocks(lines: list[Line], *, markdown: bool, loose_headings: bool) -> list[Block]:
    """Group lines into list items, paragraphs and headings."""
    blocks: list[Block] = []
    open_block: Block | None = None
    in_fence = False
    skip_next = False
    check_units(sum(1 for line in lines if line.text.strip()), what="lines")
    for index, line in enumerate(lines):
        if skip_next:
            skip_next = False
            continue
        raw = line.text[:MAX_LINE_CHARS].replace("\x00", "").rstrip()
        if markdown and _FENCE.match(raw):
            in_fence, open_block = not in_fence, None
            continue
        if in_fence:
            continue
        text = clean(raw)
        if not text:
            open_block = None
            continue
        indent = len(raw) - len(raw.lstrip())
        if markdown:
            atx = _ATX.match(raw)
            if atx:
                blocks.append(Block("heading", _inline(_atx_title(atx.group(2))), line.source))
                open_block = None
                continue
            following = lines[index + 1].text[:MAX_LINE_CHARS] if index + 1 < len(lines) else ""
            if open_block is None and _SETEXT.match(following) and not MARKER.match(text) and not _RULE.match(raw):
                blocks.append(Block("heading", _inline(text), line.source))
                open_block, skip_next = None, True
                continue
        if _RULE.match(raw):
            open_block = None
            continue
        if not markdown and _PAGE_FURNITURE.match(text):
            continue
        match = MARKER.match(text)
        if match:
            body = _CHECKBOX.sub("", match.group("text"))
            open_block = Block("item", _inline(body) if markdown else body, line.source, marker=match.group("marker"))
            blocks.append(open_block)
            continue
        if _CHECKBOX.match(text):
            body = _CHECKBOX.sub("", text)
            open_block = Block("item", _inline(body) if markdown else body, line.source, marker="[ ]")
            blocks.append(open_block)
            continue
        body = _inline(text) if markdown else text
        if open_block is not None and markdown and indent >= 2:
            open_block.extend(body)
            continue
        if _strong_heading(body):
            blocks.append(Block("heading", body.rstrip(":").strip(), line.source))
            open_block = None
            continue
        if open_block is not None and _wraps_into(open_block, body):
            open_block.extend(body)
            continue
        if _weak_heading(body, loose=loose_headings):
            tentative = not body.endswith(":")
            blocks.append(Block("heading", body.rstrip(":").strip(), line.source, tentative=tentative))
            open_block = None
            continue
        open_block = Block("para", body, line.source)
        blocks.append(open_block)
    return _promote_numbered_headings(_demote_empty_headings(blocks))


def _demote_empty_headings(blocks: list[Block]) -> list[Block]:
    """A guessed heading with nothing under it was a line of text after all."""
    for block, following in zip(blocks, blocks[1:] + [None]):
        if block.tentative and (following is None or following.kind == "heading"):
            block.kind = "para"
    return blocks


def _promote_numbered_headings(blocks: list[Block]) -> list[Block]:
    """'2. Access Control' followed by '2.1 ...' is a heading, not a task."""
    items = [b for b in blocks if b.kind == "item"]
    for current, following in zip(items, items[1:]):
        number = current.marker.rstrip(".)")
        if (number[:1].isdigit() and following.marker.startswith(number + ".")
                and following.marker.rstrip(".)") != number and _short(current.text)
                and not ends_sentence(current.text)):
            current.kind = "heading"
    return blocks


def outline_tasks(blocks: list[Block], *, collector: Collector) -> dict:
    """Add tasks: list items when there are any, else paragraphs; headings become categories."""
    has_items = any(b.kind == "item" for b in blocks)
    category: str | None = None
    for block in blocks:
        if block.kind == "heading":
            category = clean(block.text) or category
            continue
        if block.kind == "para" and has_items:
            collector.skip(block.text, "not a list item")
            continue
        collector.add(block.text, category=category, source=block.source)
    return {"listItems": has_items, "headings": sum(b.kind == "heading" for b in blocks)}
