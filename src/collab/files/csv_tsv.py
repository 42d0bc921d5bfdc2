"""CSV and TSV checklists: detect encoding and delimiter, then hand the rows to the table logic."""

import csv
import io
from collections import Counter

from .common import Collector, Decoded, DecodeError, Limits, check_units, decode_bytes
from .table import table_tasks

DELIMITERS = ",;\t|"
SNIFF_CHARS = 32_000
SNIFF_ROWS = 50


def _widths(sample: str, delimiter: str) -> list[int]:
    """Cell counts of the sample's first non-blank rows, parsed by the csv module (linear, quote-aware)."""
    reader = csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter, strict=False)
    widths: list[int] = []
    try:
        for cells in reader:
            if "".join(cells).strip():
                widths.append(len(cells))
                if len(widths) == SNIFF_ROWS:
                    break
    except csv.Error:
        return []
    return widths


def _delimiter(text: str) -> str:
    """The candidate that splits the first rows into the same number (at least 2) of cells most often.

    Not csv.Sniffer: its quote-guessing patterns backtrack quadratically on crafted lines. This parses the
    bounded sample once per candidate with the csv module's C reader, so it is linear; ties go to the
    earlier candidate in DELIMITERS, and "," is the answer when no candidate splits anything.
    """
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS:
        sample = sample[:sample.rfind("\n") + 1] or sample
    best, best_key = ",", None
    for rank, candidate in enumerate(DELIMITERS):
        widths = _widths(sample, candidate)
        if not widths:
            continue
        width, count = Counter(widths).most_common(1)[0]
        if width < 2:
            continue
        key = (count / len(widths), -rank)
        if best_key is None or key > best_key:
            best, best_key = candidate, key
    return best


def decode_csv(data: bytes, *, tsv: bool, limits: Limits) -> Decoded:
    """Decode a CSV (or TSV) checklist into tasks."""
    text, encoding = decode_bytes(data)
    delimiter = "\t" if tsv else _delimiter(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    rows: list[tuple[int, list[str]]] = []
    try:
        for number, cells in enumerate(reader, start=1):
            if "".join(cells).strip():
                rows.append((number, cells))
                check_units(len(rows), what="rows")
    except csv.Error as exc:
        raise DecodeError("unreadable", f"the {'TSV' if tsv else 'CSV'} file cannot be parsed: {exc}") from exc
    collector = Collector(limits)
    meta = table_tasks(rows, collector=collector)
    return collector.decoded(text, format="tsv" if tsv else "csv", encoding=encoding, delimiter=delimiter, **meta)
