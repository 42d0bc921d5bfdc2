"""CSV and TSV checklists: detect encoding and delimiter, then hand the rows to the table logic."""

import csv
import io

from .common import Collector, DecodeError, Decoded, Limits, check_units, decode_bytes
from .table import table_tasks

DELIMITERS = ",;\t|"
SNIFF_CHARS = 32_000


def _delimiter(text: str) -> str:
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS:
        sample = sample[: sample.rfind("\n") + 1] or sample
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        pass
    # Fall back to the candidate that appears most consistently across the first lines.
    lines = [line for line in sample.splitlines()[:50] if line.strip()]
    best, best_score = ",", 0
    for candidate in DELIMITERS:
        counts = [line.count(candidate) for line in lines]
        if counts and min(counts) > 0 and min(counts) > best_score:
            best, best_score = candidate, min(counts)
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
