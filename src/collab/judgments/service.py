"""Search Judgments (spec rules 1-7) and the judgment listing."""

import math
import time
from datetime import datetime, timezone
from typing import Any

from collab.judgments import repository as repo
from collab.judgments.schemas import QueryJudgments, SearchJudgments
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.errors import invalid, issue
from collab.kit.jobs import run_sync
from collab.kit.services import Services

DAY_MS = 86_400_000


def resolve_scope(data: SearchJudgments) -> tuple[str, str | None, str | None]:
    """(scope, organizationId, documentId) after the spec's rules 1-4 (and 3's annotation exception)."""
    org, doc = data.organizationId, data.documentId
    annotation = data.filters.annotationId if data.filters else None
    if data.scope == "apiKey":
        return "apiKey", None, None
    if data.scope == "organization":
        if not org:
            raise invalid("scope 'organization' needs organizationId.", [issue(["organizationId"], "Required for scope 'organization'")])
        return "organization", org, None
    if data.scope == "document":
        problems = []
        if not org:
            problems.append(issue(["organizationId"], "Required for scope 'document'"))
        if not doc and not annotation:
            problems.append(issue(["documentId"], "Required for scope 'document'"))
        if problems:
            raise invalid("scope 'document' needs organizationId and documentId.", problems)
        return "document", org, doc
    if not org:
        return "apiKey", None, None  # rule 4: without organizationId, documentId is ignored
    return ("document", org, doc) if doc else ("organization", org, None)


def record(row: dict[str, Any], scope: str) -> dict[str, Any]:
    """A judgment as the spec's Judgment record."""
    user = row["action_user"] or {}
    agent = row["agent"]
    return {
        "recordId": row["id"],
        "reasoning": row["reasoning"],
        "decision": row["decision"],
        "confidence": row["confidence"],
        "actionUser": {k: user[k] for k in ("name", "userId") if k in user},
        "createdAt": row["created_at"],
        "similarity": round(float(row["similarity"]), 6) if row["similarity"] is not None else None,
        "scope": scope,
        "agent": (
            {k: agent.get(k) for k in ("agentId", "agentType", "executionId", "agentFields")} if isinstance(agent, dict) else None
        ),
    }


def _keep(row: dict[str, Any], data: SearchJudgments, *, skip_dates: bool) -> bool:
    f = data.filters
    if f is None:
        return True
    if f.decision and row["decision"] != f.decision:
        return False
    if f.judgeType and row["judge_type"] != f.judgeType:
        return False
    if f.contentType and row["content_type"] != f.contentType:
        return False
    if f.reviewerId and row["reviewer_id"] != f.reviewerId:
        return False
    if f.dateRange and not skip_dates:
        if f.dateRange.start is not None and row["created_at"] < f.dateRange.start:
            return False
        if f.dateRange.end is not None and row["created_at"] > f.dateRange.end:
            return False
    if f.excludeDocumentIds and row["document_id"] is not None:
        if row["document_id"].strip() in {d.strip() for d in f.excludeDocumentIds}:
            return False
    return True


async def _vector_rows(svc: Services, *, tenant: Tenant, data: SearchJudgments, org: str | None, doc: str | None, k: int):
    embedded = await run_sync(svc.redis, "embed_query", timeout_s=svc.settings.search_timeout_s, text=data.query)
    params = {
        "model": embedded["model"],
        "kind": data.embeddingType,
        "api_key_id": tenant.api_key_id,
        "organization_id": org,
        "document_id": doc,
        "vector": repo.vector_literal(embedded["vector"]),
    }
    threshold = svc.settings.search_exact_threshold
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            in_scope = await repo.count_scope(conn, cap=threshold + 1, **params)
            if in_scope == 0:
                return []
            exact = in_scope <= threshold
            if not exact:
                # pgvector 0.6 filters after the index scan: widen the beam to the scope's selectivity
                # (the table's row estimate is free; the scope count stops at the threshold).
                total = await repo.table_rows(conn)
                ef = min(svc.settings.search_ef_search_max, max(100, math.ceil(2 * k * total / in_scope)))
                await conn.execute(f"set local hnsw.ef_search = {int(ef)}")
            return await repo.nearest(conn, dimensions=len(embedded["vector"]), exact=exact, k=k, **params)


async def search(svc: Services, *, tenant: Tenant, data: SearchJudgments) -> dict[str, Any]:
    """Search past judgments: the annotation thread, the recent days, or by meaning (rules 1-7)."""
    started = time.perf_counter()
    scope, org, doc = resolve_scope(data)
    annotation = data.filters.annotationId if data.filters else None
    k = data.limit * 3
    skip_dates = False
    if annotation:
        if not org:
            raise invalid("filters.annotationId needs organizationId.", [issue(["organizationId"], "Required with filters.annotationId")])
        async with svc.pool.connection() as conn:
            rows = await repo.thread(
                conn, api_key_id=tenant.api_key_id, organization_id=org, document_id=doc, annotation_id=annotation, limit=k
            )
    elif data.recencyDays:
        today = datetime.fromtimestamp(svc.clock(), tz=timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        end_ms = int(today.timestamp() * 1000)
        skip_dates = True  # recencyDays overrides dateRange
        async with svc.pool.connection() as conn:
            rows = await repo.recent(
                conn,
                api_key_id=tenant.api_key_id,
                organization_id=org,
                document_id=doc,
                start_ms=end_ms - data.recencyDays * DAY_MS,
                end_ms=end_ms,
                limit=k,
            )
    else:
        rows = await _vector_rows(svc, tenant=tenant, data=data, org=org, doc=doc, k=k)
    results = [record(r, scope) for r in rows if _keep(r, data, skip_dates=skip_dates)][: data.limit]
    return {
        "results": results,
        "totalInScope": len(results),
        "searchLatencyMs": round((time.perf_counter() - started) * 1000, 2),
    }


async def query(svc: Services, *, tenant: Tenant, data: QueryJudgments) -> tuple[list[dict[str, Any]], str | None]:
    """Judgments by filters, newest first, without vector search."""
    pager = paging.Pager(svc.keyring, f"{tenant.api_key_id}:judgments")
    after_ts, after_id = pager.after(data.pageToken, 2)
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(
            conn,
            api_key_id=tenant.api_key_id,
            organization_id=data.organizationId,
            document_id=data.documentId if data.organizationId else None,
            decision=data.decision,
            judge_type=data.judgeType,
            reviewer_id=data.reviewerId,
            annotation_id=data.annotationId,
            after_ts=after_ts,
            after_id=after_id,
            limit=data.pageSize + 1,
        )
    rows, token = pager.page(rows, data.pageSize, "created_at", "id")
    scope = "document" if data.organizationId and data.documentId else "organization" if data.organizationId else "apiKey"
    return [record(r, scope) for r in rows], token
