"""XLSX checklists: vet the zip container, read every sheet in a sandboxed child, then apply the table logic."""

import io
import json
import math
import zipfile

from .common import MAX_CANONICAL_CHARS, MAX_UNITS, Collector, Decoded, DecodeError, Limits, clean
from .sandbox import run_child
from .table import MAX_COLUMNS, table_tasks

MAX_MEMBERS = 10_000
# Limits has no XLSX knobs for these; openpyxl needs more room and time than pypdf for the same upload.
TIMEOUT_S = 30.0
MEMORY_BYTES = 1024 * 1024 * 1024
MAX_CELL_CHARS = 32_000
MAX_OUTPUT_CHARS = 64 * 1024 * 1024


def check_zip(data: bytes, *, limits: Limits) -> None:
    """Refuse corrupt zips and zip bombs using the sizes declared in the central directory."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise DecodeError("unreadable", f"the XLSX file is not a readable zip archive: {exc}") from exc
    if len(members) > MAX_MEMBERS:
        raise DecodeError("limits", f"the XLSX archive has more than {MAX_MEMBERS} members")
    total = compressed = 0
    for member in members:
        total += member.file_size
        compressed += member.compress_size
        ratio = member.file_size / max(member.compress_size, 1)
        if ratio > limits.max_compression_ratio:
            raise DecodeError(
                "limits",
                f"XLSX member {member.filename!r} expands {ratio:.0f}x (limit {limits.max_compression_ratio:g}x)")
    if total > limits.max_uncompressed_bytes:
        raise DecodeError("limits", f"the XLSX file expands to {total} bytes (limit {limits.max_uncompressed_bytes})")
    if total / max(compressed, 1) > limits.max_compression_ratio:
        raise DecodeError("limits", f"the XLSX file expands {total / max(compressed, 1):.0f}x overall")


def read_sheets(data: bytes) -> list[tuple[str, list[tuple[int, list[str]]]]]:
    """(title, [(row number, cells)]) for every worksheet, read by the sandboxed child."""
    args = [MAX_UNITS, MAX_COLUMNS, MAX_CELL_CHARS, MAX_OUTPUT_CHARS, MEMORY_BYTES, math.ceil(TIMEOUT_S) + 1]
    output = run_child("_xlsx_child.py", [str(a) for a in args], data, timeout_s=TIMEOUT_S, what="XLSX file")
    sheets: list[tuple[str, list[tuple[int, list[str]]]]] = []
    verdict = None
    for line in output.decode("utf-8", "replace").splitlines():
        item = json.loads(line)
        if isinstance(item, list):
            sheets[-1][1].append((int(item[0]), [str(c) for c in item[1]]))
        elif "sheet" in item:
            sheets.append((str(item["sheet"]), []))
        else:
            verdict = item
    if verdict is None:
        raise DecodeError("unreadable", "the XLSX reader stopped without a verdict")
    if "error" in verdict:
        kind = verdict["error"] if verdict["error"] in {"limits", "unreadable"} else "unreadable"
        raise DecodeError(kind, str(verdict.get("message") or "the XLSX file cannot be read"))
    return sheets


def _canonical(sheets: list[tuple[str, list[tuple[int, list[str]]]]]) -> str:
    lines, size = [], 0
    for title, rows in sheets:
        for line in [f"## {clean(title)}"] + ["\t".join(cells).rstrip("\t") for _, cells in rows]:
            lines.append(line)
            size += len(line) + 1
            if size > MAX_CANONICAL_CHARS:
                return "\n".join(lines)
    return "\n".join(lines)


def decode_xlsx(data: bytes, *, limits: Limits) -> Decoded:
    """Decode an XLSX workbook: every sheet through the table logic, sheet name as fallback category."""
    check_zip(data, limits=limits)
    try:
        sheets = read_sheets(data)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise DecodeError("unreadable", "the XLSX reader returned malformed output") from exc
    collector = Collector(limits)
    sheets_meta = []
    for title, rows in sheets:
        title = clean(title)
        meta = table_tasks(rows, collector=collector, source_prefix=f"{title}!", default_category=title)
        sheets_meta.append({"name": title, **meta})
    return collector.decoded(_canonical(sheets), format="xlsx", sheets=sheets_meta)
