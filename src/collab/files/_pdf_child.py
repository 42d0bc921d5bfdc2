"""Child process that extracts PDF text with pypdf under memory and CPU limits.

Reads the PDF from stdin; argv: max_pages memory_bytes cpu_seconds. Writes one JSON object to stdout:
{"ok": true, "pages": [text, ...]} or {"ok": false, "kind": "limits"|"unreadable", "message": "..."}.
Kept free of package imports so it can run as a plain script (python -I _pdf_child.py).
"""

import json
import logging
import resource
import sys

MAX_TEXT_CHARS = 8_000_000


def _cap(memory_bytes: int, cpu_seconds: int) -> None:
    for kind, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CPU, cpu_seconds)):
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, hard))


def extract(data: bytes, *, max_pages: int) -> dict:
    """Text of every page, or an error verdict."""
    import io

    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, LimitReachedError, PdfReadError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                if not reader.decrypt(""):
                    return {"ok": False, "kind": "unreadable", "message": "the PDF is password-protected"}
            except (FileNotDecryptedError, NotImplementedError, PyPdfError) as exc:
                message = f"the PDF is encrypted and cannot be opened: {exc}"
                return {"ok": False, "kind": "unreadable", "message": message}
        count = len(reader.pages)
        if count > max_pages:
            return {"ok": False, "kind": "limits", "message": f"the PDF has {count} pages (limit {max_pages})"}
        pages, total, failures = [], 0, 0
        for page in reader.pages:
            try:
                text = page.extract_text() or ""
            except (LimitReachedError, MemoryError, RecursionError):
                raise
            except Exception:  # one broken page should not lose the rest of the document
                failures += 1
                text = ""
            text = text[:max(0, MAX_TEXT_CHARS - total)]
            total += len(text)
            pages.append(text)
        if count and failures == count:
            return {"ok": False, "kind": "unreadable", "message": "no page of the PDF could be read"}
        return {"ok": True, "pages": pages}
    except LimitReachedError as exc:
        return {"ok": False, "kind": "limits", "message": f"the PDF exceeds a decompression limit: {exc}"}
    except MemoryError:
        return {"ok": False, "kind": "limits", "message": "the PDF needs more memory than allowed"}
    except RecursionError:
        return {"ok": False, "kind": "unreadable", "message": "the PDF structure is too deeply nested or cyclic"}
    except (PdfReadError, PyPdfError) as exc:
        return {"ok": False, "kind": "unreadable", "message": f"the PDF cannot be read: {exc}"}
    except Exception as exc:  # pypdf surfaces malformed input as many builtin exception types
        return {"ok": False, "kind": "unreadable", "message": f"the PDF cannot be read: {type(exc).__name__}: {exc}"}


def main() -> None:
    """Apply limits, extract, print the verdict."""
    max_pages, memory_bytes, cpu_seconds = (int(arg) for arg in sys.argv[1:4])
    logging.disable(logging.CRITICAL)
    import pypdf  # noqa: F401  - imported before the memory cap so the cap only measures the document

    _cap(memory_bytes, cpu_seconds)
    data = sys.stdin.buffer.read()
    try:
        verdict = extract(data, max_pages=max_pages)
    except MemoryError:
        verdict = {"ok": False, "kind": "limits", "message": "the PDF needs more memory than allowed"}
    sys.stdout.write(json.dumps(verdict))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
