"""Builders for checklist files used by the tests/files suite: hand-written PDFs, in-memory XLSX and zips."""

import io
import zipfile
import zlib

import openpyxl

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _content(lines: list[str]) -> bytes:
    ops = ["BT", "/F1 11 Tf", "14 TL", "72 720 Td"]
    for line in lines:
        ops.append(f"({_escape(line)}) Tj T*")
    ops.append("ET")
    return "\n".join(ops).encode("latin-1")


def build_pdf(objects: list[bytes], *, root: int = 1, trailer_extra: bytes = b"") -> bytes:
    """A PDF from numbered object bodies (object n is objects[n-1]) with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, trailer_extra,
                                                                                  xref)
    return bytes(out)


def stream(data: bytes, *, extra: bytes = b"") -> bytes:
    """A stream object body."""
    return b"<< /Length %d %s>>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal text PDF: one Helvetica line per string, one page per list."""
    count = len(pages)
    page_ids = [4 + 2 * i for i in range(count)]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % p for p in page_ids), count),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    ]
    for i, lines in enumerate(pages):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (page_ids[i] + 1))
        objects.append(stream(_content(lines)))
    return build_pdf(objects)


def make_xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    """An XLSX workbook with the given sheets (title -> rows)."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def zip_bomb_xlsx(*, member_bytes: int = 200 * 1024 * 1024) -> bytes:
    """A zip whose sheet member is member_bytes of zeros, written in chunks so the test stays light."""
    buffer = io.BytesIO()
    chunk = b"\0" * (1024 * 1024)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member:
            for _ in range(member_bytes // len(chunk)):
                member.write(chunk)
    return buffer.getvalue()


def flate_bomb_pdf(*, raw_bytes: int) -> bytes:
    """A one-page PDF whose content stream inflates to raw_bytes of spaces."""
    compressor = zlib.compressobj(1)
    chunk = b" " * (1024 * 1024)
    packed = b"".join(compressor.compress(chunk) for _ in range(raw_bytes // len(chunk))) + compressor.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        stream(packed, extra=b"/Filter /FlateDecode ")
    ]
    return build_pdf(objects)
