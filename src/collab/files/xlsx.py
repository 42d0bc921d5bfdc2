"""XLSX checklists: vet the zip container, then read every sheet with openpyxl (read-only, values only)."""

import datetime as dt
import io
import warnings
import zipfile

import openpyxl
import openpyxl.xml

from .common import Collector, DecodeError, Decoded, Limits, cap_canonical, clean
from .table import MAX_COLUMNS, table_tasks

MAX_MEMBERS = 10_000
# Excel's own row limit; anything past it is a forged sheet.
MAX_ROWS_PER_SHEET = 1_048_576

if not openpyxl.xml.DEFUSEDXML:  # pragma: no cover - openpyxl falls back to expat when told to skip defusedxml
    import defusedxml

    defusedxml.defuse_stdlib()


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
                f"XLSX member {member.filename!r} expands {ratio:.0f}x (limit {limits.max_compression_ratio:.0f}x)",
            )
    if total > limits.max_uncompressed_bytes:
        raise DecodeError(
            "limits", f"the XLSX file expands to {total} bytes (limit {limits.max_uncompressed_bytes})"
        )
    if total / max(compressed, 1) > limits.max_compression_ratio:
        raise DecodeError("limits", f"the XLSX file expands {total / max(compressed, 1):.0f}x overall")


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        return value.date().isoformat()
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return value.isoformat()
    return str(value)


def _sheet_rows(sheet) -> list[tuple[int, list[str]]]:
    rows = []
    # Declared dimensions can claim a million rows; ignore them and trust only the cells present.
    sheet.reset_dimensions()
    for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
        if number > MAX_ROWS_PER_SHEET:
            raise DecodeError("limits", f"sheet {sheet.title!r} has more than {MAX_ROWS_PER_SHEET} rows")
        if values and any(v is not None for v in values):
            rows.append((number, [_cell_text(v) for v in values[:MAX_COLUMNS]]))
    return rows


def decode_xlsx(data: bytes, *, limits: Limits) -> Decoded:
    """Decode an XLSX workbook: every sheet through the table logic, sheet name as fallback category."""
    check_zip(data, limits=limits)
    collector = Collector(limits)
    sheets_meta = []
    canonical: list[str] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            for sheet in workbook.worksheets:
                rows = _sheet_rows(sheet)
                title = clean(sheet.title)
                canonical.append(f"## {title}")
                canonical.extend("\t".join(cells).rstrip("\t") for _, cells in rows)
                meta = table_tasks(rows, collector=collector, source_prefix=f"{title}!", default_category=title)
                sheets_meta.append({"name": title, **meta})
        finally:
            workbook.close()
    except DecodeError:
        raise
    except MemoryError as exc:
        raise DecodeError("limits", "the XLSX file needs too much memory to read") from exc
    except Exception as exc:  # openpyxl, zipfile and defusedxml raise many unrelated types for bad input
        raise DecodeError("unreadable", f"the XLSX file cannot be read: {type(exc).__name__}: {exc}") from exc
    return Decoded(
        tasks=collector.tasks,
        skipped=collector.skipped,
        canonical_text=cap_canonical("\n".join(canonical)),
        meta={"format": "xlsx", "sheets": sheets_meta, **collector.meta()},
    )
