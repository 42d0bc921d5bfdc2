"""Console page 6, AI playgrounds: judgment search (with the path it took), extraction of agents from an uploaded
checklist, and Ask AI. Each runs through the API's own service, so on the same worker lanes with the same limits."""

import base64
from pathlib import PurePath
from typing import Any, get_args

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile

from collab.ask_ai import service as ask_ai
from collab.ask_ai.schemas import AskAi
from collab.console import outcomes
from collab.console.outcomes import Outcome
from collab.console.render import render
from collab.console.session import Console, Signed, checked_form
from collab.extraction import service as extraction
from collab.extraction.schemas import MAX_FILE_BYTES, ExtractAgents
from collab.files import SUPPORTED_MIME_TYPES, normalise_mime_type
from collab.judgments import service as judgments
from collab.judgments.schemas import Decision, SearchJudgments
from collab.judgments.search import path_taken
from collab.llm.routing import EXTRACTION_PROVIDERS

router = APIRouter()
# The type of an upload by its name first: browsers label CSV files differently per platform.
_BY_SUFFIX = {
    ".csv": "text/csv", ".tsv": "text/tab-separated-values", ".pdf": "application/pdf",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".txt": "text/plain",
    ".md": "text/markdown", ".markdown": "text/markdown"
}
# Where the request models' field paths show on these forms.
_SEARCH_FIELDS = {
    "filters.dateRange.start": "dateStart", "filters.dateRange.end": "dateEnd", "filters.dateRange": "dateStart",
    "filters.decision": "decision", "filters.judgeType": "judgeType", "filters.reviewerId": "reviewerId",
    "filters.annotationId": "annotationId"
}
DECISIONS = [(d, d) for d in get_args(Decision)]
_FILE_FIELDS = {"fileBase64": "file", "mimeType": "file", "fileName": "file"}


def _placed(outcome: Outcome, fields: dict[str, str]) -> Outcome:
    """The outcome's errors moved under the names of this page's form fields."""
    for path, name in fields.items():
        if path in outcome.errors:
            outcome.errors.setdefault(name, outcome.errors[path])
    return outcome


def _page(request: Request, console: Console, template: str, *, title: str, keys, key: str, outcome=None, **context):
    outcome = outcome or Outcome()
    return render(request, console, template, title=title, status=outcome.status, errors=outcome.page_errors, keys=keys,
                  key=key, **context)


@router.get("/playground")
async def search_page(request: Request, key: str | None = None, console: Console = Signed):
    _, keys, key = await outcomes.selected_key(console, key)
    return _page(request, console, "playground_search.html", title="AI playground: judgment search", keys=keys, key=key,
                 values={"limit": 10}, decisions=DECISIONS)


def _search_values(form) -> dict[str, Any]:
    """The search form as SearchJudgments takes it (blank fields left out)."""
    text = outcomes.text
    filters: dict[str, Any] = {k: text(form.get(k)) for k in ("decision", "judgeType", "reviewerId", "annotationId")}
    dates = {"start": text(form.get("dateStart")), "end": text(form.get("dateEnd"))}
    if any(dates.values()):
        filters["dateRange"] = {k: v for k, v in dates.items() if v}
    filters = {k: v for k, v in filters.items() if v}
    values = {
        "query": form.get("query") or "", "embeddingType": text(form.get("embeddingType")),
        "scope": text(form.get("scope")), "organizationId": text(form.get("organizationId")),
        "documentId": text(form.get("documentId")), "limit": outcomes.number(form.get("limit")),
        "recencyDays": outcomes.number(form.get("recencyDays")), "filters": filters or None
    }
    return {k: v for k, v in values.items() if v is not None}


@router.post("/playground/search")
async def search(request: Request, console: Console = Signed):
    form = await checked_form(request, console)
    tenant, keys, key = await outcomes.selected_key(console, form.get("key"))
    values = _search_values(form)
    data, outcome = outcomes.parse(SearchJudgments, values)
    if data is not None:
        outcome = await outcomes.run(judgments.search(console.svc, tenant=tenant, data=data))
    shown = {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf"}
    return _page(request, console, "playground_search.html", title="AI playground: judgment search", keys=keys, key=key,
                 outcome=_placed(outcome, _SEARCH_FIELDS), values=shown, answer=outcome.value,
                 path=path_taken(data) if data is not None else None, decisions=DECISIONS)


def _providers(console: Console) -> list[tuple[str, str]]:
    default = console.svc.settings.extraction_default_provider
    return [(p, f"{p} (default)" if p == default else p) for p in EXTRACTION_PROVIDERS]


@router.get("/playground/extraction")
async def extraction_page(request: Request, key: str | None = None, console: Console = Signed):
    _, keys, key = await outcomes.selected_key(console, key)
    return _page(request, console, "playground_extraction.html", title="AI playground: extraction", keys=keys, key=key,
                 providers=_providers(console), values={}, max_mb=MAX_FILE_BYTES // (1024 * 1024))


async def _upload(form) -> tuple[dict[str, Any] | None, Outcome]:
    """The uploaded file as ExtractAgents' fields, or the error to show beside the file field."""
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return None, Outcome(errors={"file": "Choose a file to upload."}, status=400)
    content = await upload.read(MAX_FILE_BYTES + 1)
    if len(content) > MAX_FILE_BYTES:
        return None, Outcome(errors={"file": f"The file is over {MAX_FILE_BYTES // (1024 * 1024)} MB."}, status=400)
    if not content:
        return None, Outcome(errors={"file": "The file is empty."}, status=400)
    name = PurePath(upload.filename).name[:500]
    mime = _BY_SUFFIX.get(PurePath(name).suffix.lower()) or normalise_mime_type(upload.content_type or "")
    if mime not in SUPPORTED_MIME_TYPES:
        supported = "CSV, TSV, XLSX, PDF, text or Markdown"
        return None, Outcome(errors={"file": f"{name} is not a supported file type: upload {supported}."}, status=400)
    return {"fileBase64": base64.b64encode(content).decode(), "mimeType": mime, "fileName": name}, Outcome()


@router.post("/playground/extraction")
async def extract(request: Request, console: Console = Signed):
    form = await checked_form(request, console)
    tenant, keys, key = await outcomes.selected_key(console, form.get("key"))
    provider = outcomes.text(form.get("provider"))
    fields, outcome = await _upload(form)
    if fields is not None:
        data, outcome = outcomes.parse(ExtractAgents, {**fields, **({"provider": provider} if provider else {})})
        if data is not None:
            outcome = await outcomes.run(extraction.extract(console.svc, tenant=tenant, data=data))
    return _page(request, console, "playground_extraction.html", title="AI playground: extraction", keys=keys, key=key,
                 outcome=_placed(outcome, _FILE_FIELDS), providers=_providers(console), values={"provider": provider},
                 max_mb=MAX_FILE_BYTES // (1024 * 1024), answer=outcome.value,
                 file_name=fields["fileName"] if fields else None)


@router.get("/playground/ask")
async def ask_page(request: Request, key: str | None = None, console: Console = Signed):
    _, keys, key = await outcomes.selected_key(console, key)
    return _page(request, console, "playground_ask.html", title="AI playground: Ask AI", keys=keys, key=key, values={})


@router.post("/playground/ask")
async def ask(request: Request, console: Console = Signed):
    form = await checked_form(request, console)
    tenant, keys, key = await outcomes.selected_key(console, form.get("key"))
    values = {k: form.get(k) or "" for k in ("model", "prompt", "text")}
    data, outcome = outcomes.parse(AskAi, values)
    if data is not None:
        outcome = await outcomes.run(ask_ai.ask_ai(console.svc, tenant=tenant, data=data))
    return _page(request, console, "playground_ask.html", title="AI playground: Ask AI", keys=keys, key=key,
                 outcome=outcome, values=values, answer=outcome.value)
