"""The single entry point: check size and MIME type, dispatch to a decoder, wrap every failure."""

from .common import Decoded, DecodeError, Limits
from .csv_tsv import decode_csv
from .pdf import decode_pdf
from .sandbox import decode_in_child
from .text import decode_text
from .xlsx import decode_xlsx

CSV = "text/csv"
TSV = "text/tab-separated-values"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PDF = "application/pdf"
TEXT = "text/plain"
MARKDOWN = "text/markdown"

SUPPORTED_MIME_TYPES: frozenset[str] = frozenset({CSV, TSV, XLSX, PDF, TEXT, MARKDOWN})

# Spellings browsers and tools send for the same formats.
_ALIASES = {
    "application/csv": CSV, "text/x-csv": CSV, "text/tsv": TSV, "text/x-markdown": MARKDOWN, "application/x-pdf": PDF
}

# Decoded whole in a sandboxed child, so that no input can hold this process (and its GIL) for long. PDF and
# XLSX run only their parsers in children of their own; their line and table logic is linear and runs here.
_IN_CHILD = {CSV: "CSV file", TSV: "TSV file", TEXT: "text file", MARKDOWN: "Markdown file"}


def normalise_mime_type(mime_type: str) -> str:
    """Lowercase, drop parameters such as '; charset=utf-8', resolve common aliases."""
    base = (mime_type or "").split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def _dispatch(data: bytes, mime: str, limits: Limits) -> Decoded:
    if mime in (CSV, TSV):
        return decode_csv(data, tsv=mime == TSV, limits=limits)
    if mime == XLSX:
        return decode_xlsx(data, limits=limits)
    if mime == PDF:
        return decode_pdf(data, limits=limits)
    return decode_text(data, markdown=mime == MARKDOWN, limits=limits)


def decode_here(data: bytes, mime: str, *, limits: Limits) -> Decoded:
    """Run the decoder of a supported MIME type in this process; every failure surfaces as a DecodeError."""
    try:
        return _dispatch(data, mime, limits)
    except DecodeError:
        raise
    except MemoryError as exc:
        raise DecodeError("limits", "the file needs too much memory to decode") from exc
    except RecursionError as exc:
        raise DecodeError("unreadable", "the file is too deeply nested to decode") from exc
    except Exception as exc:  # a decoder bug or a library surprise must still surface as a DecodeError
        raise DecodeError("unreadable", f"the file cannot be decoded: {type(exc).__name__}: {exc}") from exc


def decode(data: bytes, mime_type: str, *, file_name: str | None = None, limits: Limits = Limits()) -> Decoded:
    """Turn an uploaded checklist into tasks; raises DecodeError ("limits", "unreadable", "unsupported")."""
    mime = normalise_mime_type(mime_type)
    if mime not in SUPPORTED_MIME_TYPES:
        raise DecodeError("unsupported", f"files of type {mime or 'unknown'!r} are not supported")
    if len(data) > limits.max_bytes:
        raise DecodeError("limits", f"the file is {len(data)} bytes (limit {limits.max_bytes})")
    if not data.strip():
        raise DecodeError("unreadable", "no readable content: the file is empty")
    if mime in _IN_CHILD:
        decoded = decode_in_child(bytes(data), mime, limits=limits, what=_IN_CHILD[mime])
    else:
        decoded = decode_here(bytes(data), mime, limits=limits)
    if not decoded.tasks:
        raise DecodeError("unreadable", "no readable content: no tasks were found in the file")
    if file_name:
        decoded.meta["fileName"] = file_name
    return decoded
