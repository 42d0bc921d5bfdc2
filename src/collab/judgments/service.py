"""Search Judgments (spec rules 1-7), the judgment listing and the backfill over HTTP."""

import time
from typing import Any

from collab.judgments import repository as repo
from collab.judgments import search as search_core
from collab.judgments.schemas import BackfillJudgments, QueryJudgments, SearchJudgments
from collab.judgments.search import record
from collab.kit import paging, usage
from collab.kit.auth import Tenant
from collab.kit.jobs import run_sync
from collab.kit.ratelimit import concurrency, workload
from collab.kit.services import Services


async def search(svc: Services, *, tenant: Tenant, data: SearchJudgments) -> dict[str, Any]:
    """Search past judgments: the whole search (shortcuts included) is one job on the interactive lane."""
    started = time.perf_counter()
    search_core.resolve_scope(data)  # bad scopes answer here, without a job
    # A workspace's searches in flight hold at most this share of the lane's slots (tests/fairness).
    async with concurrency(svc.redis, bucket=f"search:{tenant.workspace_id}",
                           limit=svc.settings.search_max_concurrency_per_workspace,
                           ttl_s=int(svc.settings.search_timeout_s) + 30,
                           message="Too many searches in flight for this workspace; retry shortly."):
        answer = await run_sync(svc.redis, "search_judgments", timeout_s=svc.settings.search_timeout_s,
                                api_key_id=tenant.api_key_id, data=data.model_dump(exclude_none=True))
    # The latency the caller saw from here, queue hop included.
    answer["searchLatencyMs"] = round((time.perf_counter() - started) * 1000, 2)
    usage.observe(svc, "searches", answer["searchLatencyMs"], workspace_id=tenant.workspace_id)
    return answer


async def query(svc: Services, *, tenant: Tenant, data: QueryJudgments) -> tuple[list[dict[str, Any]], str | None]:
    """Judgments by filters, newest first, without vector search: at most `pageSize` (or `limit`) records and about
    `max_response_bytes` of JSON (at least one record), and the token of the next page."""
    # The token is bound to the filters: a position in one listing means nothing in another.
    filters = data.model_dump(exclude={"pageSize", "pageToken", "limit"})
    filters["documentId"] = data.documentId if data.organizationId else None  # ignored without an organization
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "judgments", filters)
    after_ts, after_id = pager.after(data.pageToken, 2)
    # Velt's form (`limit` sent) carries the records twice (`data` and `results`): each copy gets half the bytes.
    budget = svc.settings.max_response_bytes // (2 if data.limit is not None else 1)
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    document_id=data.documentId if data.organizationId else None,
                                    decision=data.decision, judge_type=data.judgeType, content_type=data.contentType,
                                    reviewer_id=data.reviewerId, annotation_id=data.annotationId, after_ts=after_ts,
                                    after_id=after_id, limit=data.size + 1, budget=budget)
    scope = ("document"
             if data.organizationId and data.documentId else "organization" if data.organizationId else "apiKey")
    return pager.cut(rows, data.size, "created_at", "id", render=lambda r: record(r, scope), budget=budget)


async def backfill(svc: Services, *, tenant: Tenant, data: BackfillJudgments) -> dict[str, Any]:
    """Derive one batch of the key's activities again (resumable with `resumeFrom`, idempotent)."""
    settings = svc.settings
    # One backfill call at a time per workspace: a loop of calls must not take every bulk slot.
    async with workload(svc.redis, bucket=f"backfill:{tenant.workspace_id}", rate=settings.rate_limit_backfill, limit=1,
                        ttl_s=int(settings.memory_backfill_timeout_s) + 30, now=svc.clock(),
                        rate_message="Too many backfill calls for this workspace; retry later.",
                        busy_message="A backfill is already running for this workspace; retry when it has answered."):
        return await run_sync(svc.redis, "backfill_judgments", timeout_s=settings.memory_backfill_timeout_s,
                              api_key_id=tenant.api_key_id, after=data.resumeFrom or "",
                              since=data.timestampLowerBoundMs, until=data.timestampUpperBoundMs,
                              batch_size=data.batchSize, force=data.force)
