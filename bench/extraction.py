"""Extraction: decode throughput per format on ~5 MB inputs, and the pipeline's own overhead per call.

Overhead = end-to-end latency of POST /v2/agents/extract (API, queue, worker, decode, prompt rendering,
litellm, validation, persistence) minus the fake provider's own time, for a 40-task CSV.
"""

import asyncio
import base64
import csv
import io
import random
import time

import httpx
import openpyxl

from bench.ask_ai import _timed
from bench.common import machine, new_tenant, pct, stack, write_section
from collab.files import Limits, decode
from collab.testing.samples import make_pdf

TARGET = 5 * 1024 * 1024 - 64 * 1024  # just under the 5 MB upload limit
LIMITS = Limits(max_tasks=10**6)
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_SUBJECTS = [
    "price claims", "testimonials", "image alt text", "cookie banners", "pricing tables", "disclaimers",
    "product names", "contrast ratios", "consent forms", "data retention notes", "legal footers"
]
_VERBS = ["state", "disclose", "include", "link to", "avoid", "name", "show", "keep", "match", "explain"]


def _rows(n: int) -> list[tuple[str, str, str]]:
    rng = random.Random(7)
    return [(f"C-{i:06d}", rng.choice(_SUBJECTS).title(),
             f"Check that {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} the {rng.choice(_SUBJECTS)}"
             f" required by policy {i}") for i in range(n)]


def _table(delimiter: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow(["ID", "Category", "Check"])
    rows = _rows(80_000)
    for row in rows:
        writer.writerow(row)
        if out.tell() > TARGET:
            break
    return out.getvalue().encode()


def _text(markdown: bool) -> bytes:
    lines, size, i = [], 0, 0
    for row in _rows(80_000):
        if i % 50 == 0:
            lines.append(f"## {row[1]} {i}" if markdown else f"{row[1].upper()} {i}")
        lines.append(f"- {row[2]}")
        size += len(lines[-1]) + 1
        i += 1
        if size > TARGET:
            break
    return "\n".join(lines).encode()


def _xlsx() -> bytes:
    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet("Checks")
    sheet.append(["ID", "Category", "Check"])
    for row in _rows(60_000):
        sheet.append(list(row))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _pdf() -> bytes:
    # A policy document: one section a page, its rules numbered from 1; at most 490 pages (the cap is 500).
    rows = _rows(80_000)
    pages, per_page = [], 48
    for start in range(0, len(rows), per_page):
        section = [f"SECTION {len(pages) + 1}"]
        pages.append(section + [f"{j + 1}. {r[2]}" for j, r in enumerate(rows[start:start + per_page])])
        if len(pages) >= 490:
            break
    return make_pdf(pages)


def decode_throughput() -> list[tuple[str, float, int, float, float]]:
    """(format, MB, tasks, best seconds, MB/s) per format."""
    inputs = {
        "csv": (_table(","), "text/csv"), "tsv": (_table("\t"), "text/tab-separated-values"),
        "text": (_text(False), "text/plain"), "markdown": (_text(True), "text/markdown"), "xlsx": (_xlsx(), XLSX),
        "pdf": (_pdf(), "application/pdf")
    }
    rows = []
    for name, (data, mime) in inputs.items():
        best, tasks = float("inf"), 0
        for _ in range(3):
            started = time.perf_counter()
            decoded = decode(data, mime, limits=LIMITS)
            best = min(best, time.perf_counter() - started)
            tasks = len(decoded.tasks)
        mb = len(data) / 1024 / 1024
        rows.append((name, mb, tasks, best, mb / best))
    return rows


async def _calls(base: str, headers: dict, body: dict, n: int) -> list[float]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def one():
            response = await client.post("/v2/agents/extract", json={"data": body}, headers=headers)
            assert response.status_code == 200, response.text

        await _timed(10, 1, one)
        return await _timed(n, 1, one)


def pipeline_overhead(n: int = 100) -> tuple[float, float, float, float]:
    """(e2e p50, e2e p99, provider p50, provider p99) in ms for a 40-task CSV."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Category", "Check"])
    for row in _rows(40):
        writer.writerow(row[1:])
    body = {
        "fileBase64": base64.b64encode(out.getvalue().encode()).decode(), "mimeType": "text/csv",
        "fileName": "bench.csv"
    }
    with stack(fake_model="extraction", COLLAB_OPENAI_API_KEY="bench-platform-key") as (base, fake_root):
        with httpx.Client(base_url=base, timeout=30) as client:
            headers = new_tenant(client)
        httpx.get(f"{fake_root}/_stats")
        e2e = asyncio.run(_calls(base, headers, body, n))
        provider = httpx.get(f"{fake_root}/_stats").json()["durations_ms"][-n:]
    return pct(e2e, 50), pct(e2e, 99), pct(provider, 50), pct(provider, 99)


def main() -> str:
    lines = [
        "## Extraction", "", f"Machine: {machine()}.", "", "Decode throughput (best of 3, one process):", "",
        "| format | input MB | tasks | seconds | MB/s |", "|---|---:|---:|---:|---:|"
    ]
    for name, mb, tasks, seconds, rate in decode_throughput():
        lines.append(f"| {name} | {mb:.2f} | {tasks} | {seconds:.2f} | {rate:.1f} |")
    e50, e99, p50, p99 = pipeline_overhead()
    lines += [
        "", "Pipeline overhead per call (40-task CSV, 100 sequential calls, fake provider in its own process):", "",
        "| e2e p50 ms | e2e p99 ms | provider p50 ms | provider p99 ms | overhead p50 ms | overhead p99 ms |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {e50:.1f} | {e99:.1f} | {p50:.2f} | {p99:.2f} | {e50 - p50:.1f} | {e99 - p99:.1f} |"
    ]
    table = "\n".join(lines)
    write_section("extraction", table)
    return table


if __name__ == "__main__":
    print(main())
