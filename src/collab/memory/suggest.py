"""memory/suggest on the worker: count the precedent for and against, widening the scope from the document to the
organization to the whole API key until one side has enough, then have the model phrase the reasons (ADR 0059).

The counting is deterministic given the retrieved records; the model only words `topReasons`, and when it cannot
(no key, quota spent, a failure) the reviewers' own reasoning stands in."""

import asyncio
import logging
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from collab.judgments import search
from collab.judgments.schemas import SearchJudgments
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.services import Services
from collab.knowledge import retrieval
from collab.memory.ask import relevant
from collab.memory.schemas import SuggestDecision
from collab.workspaces import ai

log = logging.getLogger("collab.memory")

APPROVE = frozenset({"approved", "agree", "endorse", "document_approved"})
REJECT = frozenset({"rejected", "disagree", "document_rejected"})
LABELS = {"document": "This document", "organization": "This organization", "apiKey": "All content"}
NOUNS = {"document": "document's", "organization": "organization's", "apiKey": "API key's"}
MIN_SUPPORT = 2  # records behind a primary, and on each side of a conflict (Velt's documented thresholds)
DAY_MS = 86_400_000
STALE_AGE_MS, STALE_SHARE = 182 * DAY_MS, 0.7  # "over 70% of the supporting data is older than 6 months"
KNOWLEDGE_FRESH_S = 48 * 3600
REASONS, REASON_CHARS = 3, 120
PHRASED_FROM = 12  # distinct reasoning lines the model words the reasons from
STALE = "Stale pattern: >70% of supporting data is older than 6 months"
KNOWLEDGE = "Knowledge updated in the last 48 hours: precedent may predate it"
_SPACES = re.compile(r"\s+")


class _Reasons(BaseModel):
    reasons: list[str] = Field(max_length=20)


@dataclass
class Side:
    """One side's supporting records in the scope that decided."""

    recommendation: str
    records: list[dict[str, Any]]

    @property
    def weight(self) -> float:
        return sum(max(r["similarity"], 0.0) for r in self.records)


def sides(records: list[dict[str, Any]]) -> tuple[Side, Side]:
    """(approve, reject): the records counting toward each; any other decision counts toward neither."""
    return (Side("approve", [r for r in records if r["decision"] in APPROVE]),
            Side("reject", [r for r in records if r["decision"] in REJECT]))


def scopes(data: SuggestDecision) -> list[tuple[str, str | None, str | None]]:
    """The scopes tried, narrowest first: a documentId counts only with its organizationId."""
    org, doc = data.organizationId, data.documentId
    tried: list[tuple[str, str | None, str | None]] = []
    if org and doc:
        tried.append(("document", org, doc))
    if org:
        tried.append(("organization", org, None))
    return [*tried, ("apiKey", None, None)]


def _reviewers(records: list[dict[str, Any]]) -> int:
    return len({(r["actionUser"] or {}).get("userId") for r in records} - {None})


def fallback_reasons(side: Side, limit: int = REASONS) -> list[str]:
    """The most frequent reasoning lines of the side (most similar first among equals), shortened."""
    counts = Counter(_SPACES.sub(" ", r["reasoning"]).strip().rstrip(".") for r in side.records)
    ordered = sorted(counts, key=lambda text: -counts[text])  # sorted() is stable: similarity order among equals
    return [_short(text) for text in ordered if text][:limit]


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1].rstrip() + "…"


def tally(records: list[dict[str, Any]], *, scope: str, now_ms: int, knowledge_fresh: bool,
          partial: list[str]) -> dict[str, Any]:
    """`{primary, conflict}` from one scope's relevant records; reasons are the fallback's until phrased."""
    approve, reject = sides(records)
    lead, other = sorted((approve, reject), key=lambda s: (len(s.records), s.weight), reverse=True)
    if len(lead.records) < MIN_SUPPORT:
        return {"primary": None, "conflict": None}
    total = lead.weight + other.weight
    split = len(other.records) >= MIN_SUPPORT

    def suggestion(side: Side, caveats: list[str]) -> dict[str, Any]:
        n = len(side.records)
        share = side.weight / total if total > 0 else 0.0
        return {
            "recommendation": side.recommendation, "confidence": round(share * n / (n + MIN_SUPPORT), 2), "basedOn": n,
            "scope": scope, "scopeLabel": LABELS[scope], "topReasons": fallback_reasons(side),
            "uniqueReviewers": _reviewers(side.records), "caveats": caveats
        }

    caveats = []
    if split:
        caveats.append(f"Conflicting precedent: {len(other.records)} judgment(s) support {other.recommendation}")
    if knowledge_fresh:
        caveats.append(KNOWLEDGE)
    old = sum(1 for r in lead.records if now_ms - r["createdAt"] > STALE_AGE_MS)
    if old > STALE_SHARE * len(lead.records):
        caveats.append(STALE)
    caveats += [f"Partial data: the {NOUNS[s]} precedent timed out and was skipped" for s in partial]
    conflict = None
    if split:
        minority = [
            f"Minority view: {len(other.records)} judgment(s) support {other.recommendation}, "
            f"{len(lead.records)} support {lead.recommendation}"
        ]
        conflict = suggestion(other, minority)
    return {"primary": suggestion(lead, caveats), "conflict": conflict}


async def _retrieve(svc: Services, embedder: Any, *, tenant: Tenant, query: str, scope: str, org: str | None,
                    doc: str | None) -> list[dict[str, Any]]:
    """The scope's records related to the query, by their review text and by their content (best of the two)."""
    best: dict[str, dict[str, Any]] = {}
    for kind in ("review", "content"):
        where = {"organizationId": org, "documentId": doc}
        request = SearchJudgments.model_validate({
            "query": query, "embeddingType": kind, "scope": scope, "limit": svc.settings.memory_suggest_records,
            **{k: v
               for k, v in where.items() if v is not None}
        })
        found = await search.run(svc, embedder, api_key_id=tenant.api_key_id, data=request)
        for record in relevant(found["results"], svc.settings.memory_min_similarity):
            if record["recordId"] not in best or record["similarity"] > best[record["recordId"]]["similarity"]:
                best[record["recordId"]] = record
    return sorted(best.values(), key=lambda r: -r["similarity"])


async def suggest(ctx: dict, *, tenant: Tenant, data: SuggestDecision, embedder: Any) -> dict[str, Any]:
    """The suggested decision and the dissent, from the narrowest scope with enough precedent."""
    svc: Services = ctx["svc"]
    settings = svc.settings
    partial: list[str] = []
    now = svc.clock()
    async with svc.reader.connection() as conn:
        fresh = await retrieval.updated_since(conn, api_key_id=tenant.api_key_id, since=_utc(now - KNOWLEDGE_FRESH_S))
    outcome: dict[str, Any] = {"primary": None, "conflict": None}
    records: list[dict[str, Any]] = []
    for scope, org, doc in scopes(data):
        try:
            records = await asyncio.wait_for(
                _retrieve(svc, embedder, tenant=tenant, query=data.query, scope=scope, org=org, doc=doc),
                settings.memory_suggest_scope_timeout_s)
        except asyncio.TimeoutError:
            partial.append(scope)
            continue
        outcome = tally(records, scope=scope, now_ms=int(now * 1000), knowledge_fresh=fresh, partial=partial)
        if outcome["primary"] is not None:
            break
    lines = {side.recommendation: fallback_reasons(side, PHRASED_FROM) for side in sides(records)}
    for key in ("primary", "conflict"):
        if outcome[key] is not None:
            found = outcome[key]
            found["topReasons"] = await _phrased(svc, tenant, data.query, found["recommendation"],
                                                 lines[found["recommendation"]], found["topReasons"])
    return outcome


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


async def _phrased(svc: Services, tenant: Tenant, query: str, recommendation: str, lines: list[str],
                   fallback: list[str]) -> list[str]:
    """The model's wording of the side's reasons; the reviewers' own lines when it gives none."""
    try:
        reply = await ai.structured(
            svc, tenant=tenant, provider=svc.settings.memory_provider, prompt_name="memory_suggest_reasons",
            shape=_Reasons, timeout_s=min(10.0, svc.settings.memory_timeout_s / 4),
            variables={"recommendation": recommendation, "query": query, "reasonings": "\n".join(lines)})
    except (ApiError, ai.Malformed) as exc:
        log.info("suggest: reasons left as the reviewers wrote them (%s)", exc)
        return fallback
    phrased = [_short(_SPACES.sub(" ", r).strip()) for r in reply.reasons if r.strip()]
    return phrased[:REASONS] or fallback
