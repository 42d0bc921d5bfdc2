"""Shared types, limits, text clean-up, byte decoding and task collection for the checklist decoders."""

import codecs
import re
import unicodedata
from dataclasses import dataclass, field

import charset_normalizer

MAX_CANONICAL_CHARS = 2_000_000
# Skipped entries are diagnostics; past this many only a count is kept so hostile inputs stay bounded.
MAX_SKIPPED = 1_000
MIN_TASK_LETTERS = 2
# Non-blank rows or lines a file may hold: far more than any checklist, and a bound on the work per upload.
MAX_UNITS = 200_000

_WHITESPACE = re.compile(r"\s+")
_TERMINAL = ".!?;"


@dataclass
class Task:
    text: str
    category: str | None
    source: str


@dataclass
class Skipped:
    originalText: str
    reason: str


@dataclass
class Decoded:
    tasks: list[Task]
    skipped: list[Skipped]
    canonical_text: str
    meta: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 5 * 1024 * 1024
    max_uncompressed_bytes: int = 100 * 1024 * 1024
    max_compression_ratio: float = 100.0
    max_pdf_pages: int = 500
    pdf_timeout_s: float = 20.0
    pdf_memory_bytes: int = 512 * 1024 * 1024
    # Text, Markdown, CSV and TSV are decoded whole in a child process with these caps (files/sandbox.py).
    text_timeout_s: float = 20.0
    text_memory_bytes: int = 512 * 1024 * 1024
    max_tasks: int = 20_000
    max_task_chars: int = 4_000


class DecodeError(Exception):
    """A file that cannot be turned into tasks; kind is "limits", "unreadable" or "unsupported"."""

    KINDS = frozenset({"limits", "unreadable", "unsupported"})

    def __init__(self, kind: str, message: str):
        if kind not in self.KINDS:
            raise ValueError(f"unknown DecodeError kind: {kind!r}")
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


def check_units(count: int, *, what: str) -> None:
    """Raise DecodeError("limits") once a file has more than MAX_UNITS non-blank rows or lines."""
    if count > MAX_UNITS:
        raise DecodeError("limits", f"the file has more than {MAX_UNITS} non-blank {what}")


def clean(text: str) -> str:
    """Strip NUL bytes and collapse every whitespace run to one space."""
    return _WHITESPACE.sub(" ", text.replace("\x00", "")).strip()


def cap_canonical(text: str) -> str:
    """The storable text: NUL-free and at most MAX_CANONICAL_CHARS long."""
    return text.replace("\x00", "")[:MAX_CANONICAL_CHARS]


def ends_sentence(text: str) -> bool:
    """Whether the text ends with sentence punctuation (ignoring closing quotes and brackets)."""
    return text.rstrip(" \"')]”’").endswith(tuple(_TERMINAL))


class Collector:
    """Accumulates tasks: normalises, truncates, drops blanks, fragments and duplicates, enforces max_tasks."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.tasks: list[Task] = []
        self.skipped: list[Skipped] = []
        self.skipped_total = 0
        self._seen: set[str] = set()

    def skip(self, original: str, reason: str) -> None:
        """Record a skipped piece of input (bounded)."""
        self.skipped_total += 1
        if len(self.skipped) < MAX_SKIPPED:
            self.skipped.append(Skipped(originalText=clean(original)[:self.limits.max_task_chars], reason=reason))

    def add(self, text: str, *, category: str | None, source: str) -> Task | None:
        """Add one candidate task; returns the Task, or None when it was skipped."""
        text = clean(text)
        if not text:
            self.skip(text, "blank")
            return None
        if len(text) < 3 or sum(ch.isalpha() for ch in text[:64]) < MIN_TASK_LETTERS:
            self.skip(text, "too short to be a check")
            return None
        text = text[:self.limits.max_task_chars]
        key = text.casefold()
        if key in self._seen:
            self.skip(text, "duplicate")
            return None
        if len(self.tasks) >= self.limits.max_tasks:
            raise DecodeError("limits", f"the file holds more than {self.limits.max_tasks} tasks")
        self._seen.add(key)
        category = (clean(category)[:200] or None) if category else None
        task = Task(text=text, category=category, source=source)
        self.tasks.append(task)
        return task

    def meta(self) -> dict:
        """Counts worth reporting alongside format-specific meta."""
        return {"tasks": len(self.tasks), "skipped": self.skipped_total}

    def decoded(self, text: str, **meta: object) -> "Decoded":
        """The decoder's result: what was collected, the capped canonical text, and meta with the counts."""
        return Decoded(tasks=self.tasks, skipped=self.skipped, canonical_text=cap_canonical(text),
                       meta={**meta, **self.meta()})


# --- bytes -> text -----------------------------------------------------------------------------

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_BAD_CATEGORIES = frozenset({"Cc", "Cn", "Co", "Cs"})
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v\x00")
BINARY_RATIO = 0.30


def _utf16_without_bom(data: bytes) -> str | None:
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even = sample[0::2].count(0) / len(sample[0::2])
    odd = sample[1::2].count(0) / len(sample[1::2])
    if odd > 0.4 and even < 0.05:
        return "utf-16-le"
    if even > 0.4 and odd < 0.05:
        return "utf-16-be"
    return None


def _suspicious_ratio(text: str, *, single_byte: bool) -> float:
    sample = text[:200_000]
    if not sample:
        return 0.0
    bad = 0.0
    for ch in sample:
        if ch == "\ufffd" or ch == "\x00":
            bad += 1
        elif ch in _ALLOWED_CONTROLS:
            continue
        elif unicodedata.category(ch) in _BAD_CATEGORIES:
            bad += 1
        elif single_byte and ord(ch) > 0x7F:
            # A blind single-byte guess maps random bytes to accented letters; real Western text has few.
            bad += 0.5
    return bad / len(sample)


def decode_bytes(data: bytes) -> tuple[str, str]:
    """Decode text bytes (BOM, UTF-8, UTF-16, charset-normalizer, cp1252); returns (text, encoding)."""
    text: str | None = None
    encoding = ""
    single_byte_guess = False
    for bom, name in _BOMS:
        if data.startswith(bom):
            try:
                text, encoding = data[len(bom):].decode(name), name
            except UnicodeDecodeError as exc:
                message = f"the file starts with a {name} byte-order mark but is not {name}"
                raise DecodeError("unreadable", message) from exc
            break
    if text is None:
        utf16 = _utf16_without_bom(data)
        for name in ([utf16] if utf16 else []) + ["utf-8"]:
            try:
                text, encoding = data.decode(name), name
                break
            except UnicodeDecodeError:
                continue
    if text is None:
        best = charset_normalizer.from_bytes(data[:1_000_000]).best()
        if best is not None:
            name = best.encoding
            # charset-normalizer often names a sibling Windows code page; cp1252 is by far the likeliest.
            if name in {"cp1250", "cp1252", "latin_1", "iso8859_15", "iso8859_2", "cp1257", "mac_roman"}:
                try:
                    text, encoding = data.decode("cp1252"), "cp1252"
                except UnicodeDecodeError:
                    pass
            if text is None:
                try:
                    text, encoding = data.decode(name), name
                except (UnicodeDecodeError, LookupError):
                    text = None
    if text is None:
        try:
            text, encoding = data.decode("cp1252"), "cp1252"
            single_byte_guess = True
        except UnicodeDecodeError as exc:
            raise DecodeError("unreadable", "the file is not text in any supported encoding (binary data?)") from exc
    if _suspicious_ratio(text, single_byte=single_byte_guess) > BINARY_RATIO:
        raise DecodeError("unreadable", "the file looks like binary data, not text")
    return text.replace("\x00", ""), encoding
