"""Child process that reads XLSX rows with openpyxl (read-only, values only) under memory and CPU limits.

Reads the workbook from stdin; argv: max_rows max_columns max_cell_chars max_output_chars memory_bytes cpu_seconds.
Writes JSON lines to stdout: {"sheet": title}, then [row_number, [cell, ...]] per non-empty row, and last
{"done": true} or {"error": "limits"|"unreadable", "message": "..."}.
Kept free of package imports so it can run as a plain script (python -I _xlsx_child.py).
"""

import datetime as dt
import io
import json
import resource
import sys
import warnings
import zlib

MAX_ROWS_PER_SHEET = 1_048_576


def _cap(memory_bytes: int, cpu_seconds: int) -> None:
    for kind, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CPU, cpu_seconds)):
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, hard))


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


class _Limit(Exception):
    pass


def _root_cause(exc: BaseException) -> BaseException:
    # openpyxl re-raises parser errors as a generic ValueError; the original says what was wrong.
    seen = {id(exc)}
    while (nxt := exc.__cause__ or exc.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        exc = nxt
    return exc


def emit_rows(data: bytes, out, *, max_rows: int, max_columns: int, max_cell_chars: int, max_output_chars: int) -> None:
    """Write every sheet's non-empty rows as JSON lines."""
    import openpyxl
    from openpyxl.worksheet._read_only import ReadOnlyWorksheet

    # Without a <dimension> element openpyxl pre-scans each whole sheet just to size it; this process only
    # reads rows (with reset_dimensions), so skip that second parse. Patching is safe: the process is ours.
    ReadOnlyWorksheet._get_size = lambda self: None
    rows = written = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        for sheet in workbook.worksheets:
            out.write(json.dumps({"sheet": sheet.title}) + "\n")
            # Declared dimensions can claim a million rows; ignore them and trust only the cells present.
            sheet.reset_dimensions()
            for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
                if number > MAX_ROWS_PER_SHEET:
                    raise _Limit(f"sheet {sheet.title!r} has more than {MAX_ROWS_PER_SHEET} rows")
                if not values or all(v is None for v in values):
                    continue
                rows += 1
                if rows > max_rows:
                    raise _Limit(f"the workbook has more than {max_rows} non-blank rows")
                cells = [_cell_text(v)[:max_cell_chars] for v in values[:max_columns]]
                line = json.dumps([number, cells], ensure_ascii=False) + "\n"
                written += len(line)
                if written > max_output_chars:
                    raise _Limit(f"the workbook holds more than {max_output_chars} characters of text")
                out.write(line)
    finally:
        workbook.close()


def main() -> None:
    """Apply limits, emit rows, end with a verdict line."""
    max_rows, max_columns, max_cell_chars, max_output_chars, memory_bytes, cpu_seconds = (int(arg)
                                                                                          for arg in sys.argv[1:7])
    import openpyxl
    import openpyxl.xml

    if not openpyxl.xml.DEFUSEDXML:  # openpyxl only uses defusedxml when it is installed and not disabled
        import defusedxml

        defusedxml.defuse_stdlib()
    _cap(memory_bytes, cpu_seconds)
    data = sys.stdin.buffer.read()
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", write_through=False)
    try:
        emit_rows(data, out, max_rows=max_rows, max_columns=max_columns, max_cell_chars=max_cell_chars,
                  max_output_chars=max_output_chars)
        verdict: dict[str, object] = {"done": True}
    except _Limit as exc:
        verdict = {"error": "limits", "message": str(exc)}
    except MemoryError:
        verdict = {"error": "limits", "message": "the XLSX file needs more memory than allowed"}
    except Exception as exc:  # openpyxl, zipfile and defusedxml raise many unrelated types for bad input
        root = _root_cause(exc)
        if isinstance(root, MemoryError) or (isinstance(root, zlib.error) and "Error -4 " in str(root)):
            # zlib reports Z_MEM_ERROR (-4) when the address-space cap stops it from allocating.
            verdict = {"error": "limits", "message": "the XLSX file needs more memory than allowed"}
        else:
            message = f"the XLSX file cannot be read: {type(root).__name__}: {root}"
            verdict = {"error": "unreadable", "message": message}
    out.write(json.dumps(verdict) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
