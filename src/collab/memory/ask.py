"""memory/ask on the worker: retrieve judgments (the hybrid search, its scope rules and filters), knowledge
passages and rules, and the workspace's aggregates; have the model answer from them only; keep only the citations
of records it was shown (ADR 0059)."""

import json
import math
import re
import time
from typing import Any

from pydantic import BaseModel, Field

from collab.insights.context import for_ask
from collab.judgments import search
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.services import Services
from collab.knowledge import retrieval
from collab.memory.schemas import AskMemory
from collab.workspaces import ai

# What the model is shown of one record or passage, and what a snippet may quote.
RECORD_CHARS, PASSAGE_CHARS, SNIPPET_CHARS, NAME_CHARS = 1200, 1500, 240, 255
RULES_SHOWN = 10  # the scope's rules nearest the question, at most
# Confidence of an answer none of whose citations named a record that was shown.
UNCITED_CONFIDENCE = 0.3
_SPACES = re.compile(r"\s+")


class Cited(BaseModel):
    """One citation as the model gives it (checked before it reaches the caller)."""

    recordId: str = Field(max_length=500)
    snippet: str = Field(max_length=5000)


class ModelAnswer(BaseModel):
    """The model's answer to `prompts/memory_ask` (its schema)."""

    answer: str = Field(max_length=20_000)
    citations: list[Cited] = Field(max_length=100)
    confidence: float


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _data(text: str | None, limit: int) -> str:
    """Stored text as the prompt shows it: on one line (every kind of line break and space made one space), cut to
    `limit`, and fenced as data: a JSON string, so nothing in it can end the quote, start a line or pass as an id."""
    return json.dumps(_flat(text or "")[:limit], ensure_ascii=False)


def empty(records_searched: int = 0) -> dict[str, Any]:
    """The answer when there is no grounding: never an invented one."""
    return {"answer": "", "citations": [], "confidence": 0, "recordsSearched": records_searched}


def relevant(results: list[dict[str, Any]], floor: float) -> list[dict[str, Any]]:
    """Records related to the question: at least `floor` cosine (the shortcut paths answer 1.0 by definition)."""
    return [r for r in results if r["similarity"] is not None and r["similarity"] >= floor]


def snippet(quoted: str, text: str) -> str:
    """The model's quote when the record holds it (spacing and case aside), else the record's opening words."""
    quote = _flat(quoted)
    if quote and len(quote) <= SNIPPET_CHARS and quote.lower() in _flat(text).lower():
        return quote
    flat = _flat(text)
    return flat if len(flat) <= SNIPPET_CHARS else flat[:SNIPPET_CHARS - 1].rstrip() + "…"


def checked(answer: ModelAnswer, shown: dict[str, str]) -> dict[str, Any]:
    """The model's answer with only citations of shown records (one per record), its confidence within 0-1."""
    text = answer.answer.strip()
    if not text:
        return {"answer": "", "citations": [], "confidence": 0}
    citations: dict[str, dict[str, str]] = {}
    for cited in answer.citations:
        key = cited.recordId.strip().strip("[]")
        if key in shown and key not in citations:
            citations[key] = {"recordId": key, "snippet": snippet(cited.snippet, shown[key])}
    confidence = min(max(answer.confidence, 0.0), 1.0) if math.isfinite(answer.confidence) else 0.0
    if not citations:
        confidence = min(confidence, UNCITED_CONFIDENCE)
    return {"answer": text, "citations": list(citations.values()), "confidence": round(confidence, 2)}


def _id(value: str) -> str:
    return _flat(value).replace("[", "(").replace("]", ")")


def _records_block(records: list[dict[str, Any]]) -> str:
    return "\n".join(f"[{_id(r['recordId'])}] {_id(r['decision'])}: {_data(r['reasoning'], RECORD_CHARS)}"
                     for r in records)


def _knowledge_block(passages: list[dict[str, Any]], rules: list[dict[str, Any]]) -> str:
    lines = [
        f"[{_id(p['sourceId'])}] {_data(p['fileName'] or 'knowledge', NAME_CHARS)}: {_data(p['text'], PASSAGE_CHARS)}"
        for p in passages
    ]
    lines += [f"[{_id(r['sourceId'])}] rule: {_data(r['text'], PASSAGE_CHARS)}" for r in rules]
    return "\n".join(lines) or "none"


async def answer(ctx: dict, *, tenant: Tenant, data: AskMemory, embedder: Any) -> dict[str, Any]:
    """The grounded answer to one question, or the empty answer when nothing relevant was retrieved."""
    return (await respond(ctx, tenant=tenant, data=data, embedder=embedder))[0]


async def respond(ctx: dict, *, tenant: Tenant, data: AskMemory, embedder: Any) -> tuple[dict[str, Any], list[str]]:
    """The answer and the ids of the judgments shown to the model (the eval scores what was retrieved)."""
    svc: Services = ctx["svc"]
    settings = svc.settings
    deadline = time.monotonic() + settings.memory_timeout_s - 1  # the job's whole budget, retrieval included
    floor = settings.memory_min_similarity
    request = data.search(limit=settings.memory_ask_records)
    found = await search.run(svc, embedder, api_key_id=tenant.api_key_id, data=request)
    records = relevant(found["results"], floor)
    _, org, doc = search.resolve_scope(request)
    knowledge = await retrieval.relevant(ctx, api_key_id=tenant.api_key_id, query=data.question, organization_id=org,
                                         document_id=doc, passages=settings.memory_ask_passages, rules=RULES_SHOWN)
    passages = [p for p in knowledge["passages"] if p["similarity"] >= floor]
    rules = [r for r in knowledge["rules"] if r["similarity"] >= floor]
    if not records and not passages and not rules:
        return empty(), []
    async with svc.reader.connection() as conn:
        context = await for_ask(conn, api_key_id=tenant.api_key_id)
    shown = {r["recordId"]: r["reasoning"] for r in records}
    for item in [*passages, *rules]:
        shown[item["sourceId"]] = shown.get(item["sourceId"], "") + "\n" + item["text"]
    aggregates = json.dumps(context, ensure_ascii=False) if any(context.values()) else "none"
    left = deadline - time.monotonic()
    if left <= 0:
        raise ApiError("DEADLINE_EXCEEDED", "Memory ask ran out of time before the model could answer; retry later.")
    try:
        reply = await ai.structured(
            svc, tenant=tenant, provider=settings.memory_provider, prompt_name="memory_ask", shape=ModelAnswer,
            timeout_s=left, variables={
                "question": data.question, "records": _records_block(records) or "none",
                "knowledge": _knowledge_block(passages, rules), "context": aggregates
            })
    except ai.Malformed:
        raise ApiError("UNAVAILABLE", "The model's answer was malformed after a retry; retry later.") from None
    return {**checked(reply, shown), "recordsSearched": len(records)}, [r["recordId"] for r in records]
