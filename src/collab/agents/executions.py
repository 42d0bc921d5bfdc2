"""Agent executions on the API side: run (pinned, at most one per agent and document), get, list, count, and the
token analytics (ADR 0055). The run itself is the `run_agent_execution` job (agents/tasks.py)."""

import json
from typing import Any

from collab.agents import execution_repository as xrepo
from collab.agents import repository as repo
from collab.agents.execution_schemas import (
    CountExecutions,
    Execution,
    GetAnalytics,
    GetExecution,
    ListExecutions,
    RunExecution,
)
from collab.agents.schemas import strategy_of
from collab.comments import access
from collab.kit import paging, ratelimit
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services

RUNNING_SUMMARY = {
    "totalFindings": 0, "totalAnnotationsCreated": 0, "urlsProcessed": 0, "urlsWithFindings": 0, "issuesCreated": 0,
    "summary": None
}


def _skip_reason(agent: dict[str, Any]) -> str | None:
    """Why an agent's execution is `skipped` at once (a precondition it does not meet), if it is."""
    if not agent["enabled"]:
        return "The agent is disabled."
    strategy = strategy_of((agent["config"] or {}).get("execution"))
    if strategy != "ai":
        return f"collab runs the 'ai' execution strategy only; this agent uses '{strategy}'."
    return None


def _already_running(execution_id: str) -> ApiError:
    return ApiError("ALREADY_EXISTS", f"An execution is already running for this agent and document: {execution_id}")


# Each string in a userContext (a key or a value, at any depth) is at most this long; the whole is bounded in bytes
# by COLLAB_AGENT_EXECUTION_USER_CONTEXT_MAX_BYTES.
MAX_CONTEXT_STRING = 4000
# Finished executions dropped past the kept count by one run at most (a run adds one: the count stays bounded).
PRUNE_BATCH = 50


def _longest_string(value: Any) -> int:
    """The length of the longest string in a JSON value (keys included), walked without recursion."""
    longest, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict):
            longest = max([longest, *(len(k) for k in item)])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return longest


def _user_context(context: dict[str, Any] | None, max_bytes: int) -> dict[str, Any]:
    """The run's userContext when it is within its bounds, else INVALID_ARGUMENT naming it (or its key)."""
    if not context:
        return {}
    size = len(json.dumps(context, ensure_ascii=False).encode())
    if size > max_bytes:
        message = f"userContext is at most {max_bytes} bytes of JSON (this one is {size})."
        raise invalid(message, [issue(["userContext"], message, "too_big")])
    issues = []
    for key, value in context.items():
        if max(len(key), _longest_string(value)) > MAX_CONTEXT_STRING:
            issues.append(
                issue(["userContext", key], f"Each string in userContext is at most {MAX_CONTEXT_STRING} characters.",
                      "too_big"))
    if issues:
        raise invalid(issues[0]["message"], issues)
    return context


async def run(svc: Services, *, tenant: Tenant, data: RunExecution) -> dict[str, Any]:
    """Start an execution of the agent's current version on a document; it runs on the worker's ai lane."""
    if data.crossPageExecute:
        message = "collab does not crawl: run each page as an execution of its own (crossPageExecute false)."
        raise invalid(message, [issue(["crossPageExecute"], message, "invalid")])
    settings = svc.settings
    user_context = _user_context(data.userContext, settings.agent_execution_user_context_max_bytes)
    # Every run counts against the workspace's AI rate, as Ask AI and memory do; a running one also holds one of
    # the workspace's AI slots (agents/tasks.py).
    await ratelimit.check(svc.redis, bucket=f"ai:{tenant.workspace_id}", rate=settings.rate_limit_ai, now=svc.clock(),
                          message="Too many AI requests for this workspace; retry later.")
    now, execution_id = svc.now_ms(), new_id("exec_")
    where = {
        "api_key_id": tenant.api_key_id, "agent_id": data.agentId, "organization_id": data.organizationId,
        "document_id": data.documentId
    }
    request = {
        "seedUrl": data.url, "crossPageExecute": False, "maxUrlsToProcess": data.maxUrlsToProcess,
        "deviceType": data.deviceType, "annotationVisibility": data.annotationVisibility, "userContext": user_context,
        "aiConfig": data.aiConfig.model_dump(exclude_none=True) if data.aiConfig else None
    }
    async with transaction(svc.pool, svc.redis) as tx:
        agent = await repo.get_agent(tx.conn, api_key_id=tenant.api_key_id, id=data.agentId)
        if agent is None:
            raise not_found("agent")
        if not await access.document_exists(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                            document_id=data.documentId):
            raise not_found("document")
        await xrepo.lock_executions(tx.conn, workspace_id=tenant.workspace_id)
        running = await xrepo.running_on(tx.conn, **where)
        if running is not None:
            raise _already_running(running)
        skipped = _skip_reason(agent)
        cap = settings.agent_executions_max_running
        if skipped is None and await xrepo.count_running(tx.conn, workspace_id=tenant.workspace_id) >= cap:
            raise ApiError("RESOURCE_EXHAUSTED", f"This workspace already has {cap} executions running; retry when "
                           "one has finished.", details={"retryAfterSeconds": 5}, headers={"Retry-After": "5"})
        previous = await xrepo.latest_on(tx.conn, **where)
        summary = RUNNING_SUMMARY if skipped is None else {**RUNNING_SUMMARY, "summary": skipped}
        inserted = await xrepo.insert_execution(
            tx.conn, **where, id=execution_id, agent_name=agent["name"], agent_version=agent["version"],
            behaviour=agent["config"], request=request, trigger=data.trigger,
            workflow_execution_id=data.workflowExecutionId, previous_execution_id=previous,
            ran_by=data.ranBy.model_dump() if data.ranBy else None, status="running" if skipped is None else "skipped",
            now=now, completed_at=None if skipped is None else now, results_summary=summary)
        if not inserted:  # the unique index's word, should a run ever get past the lock and the check above
            raise _already_running(await xrepo.running_on(tx.conn, **where) or "")
        await xrepo.prune_executions(tx.conn, api_key_id=tenant.api_key_id,
                                     keep=settings.agent_executions_kept_per_api_key, batch=PRUNE_BATCH)
        if skipped is None:
            await xrepo.count_run(tx.conn, api_key_id=tenant.api_key_id, agent_id=data.agentId, now=now)
            await tx.enqueue("run_agent_execution", api_key_id=tenant.api_key_id, execution_id=execution_id,
                             workspace_id=tenant.workspace_id)
    return {"executionId": execution_id}


async def get(svc: Services, *, tenant: Tenant, data: GetExecution) -> dict[str, Any]:
    """One execution; with includeResults, its per-URL results too."""
    async with svc.pool.connection() as conn:
        row = await xrepo.get_execution(conn, api_key_id=tenant.api_key_id, id=data.executionId)
    if row is None:
        raise not_found("agent_execution")
    answer: dict[str, Any] = {"execution": Execution.wire(row)}
    if data.includeResults:
        answer["results"] = row["results"] or []
    return answer


async def list_(svc: Services, *, tenant: Tenant, data: ListExecutions) -> dict[str, Any]:
    """A page of one agent's, one document's, or one agent's on one document executions, newest first."""
    filters = {"agentId": data.agentId, "organizationId": data.organizationId, "documentId": data.documentId}
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "agent_executions", filters)
    after_at, after_id = pager.after(data.pageToken, 2)
    async with svc.pool.connection() as conn:
        rows = await xrepo.list_executions(conn, api_key_id=tenant.api_key_id, agent_id=data.agentId,
                                           organization_id=data.organizationId, document_id=data.documentId,
                                           after_at=after_at, after_id=after_id, limit=data.pageSize + 1)
    records, token = pager.cut(rows, data.pageSize, "started_at", "id", render=Execution.wire,
                               budget=svc.settings.max_response_bytes)
    return {"executions": records} | ({"nextPageToken": token} if token else {})


async def count(svc: Services, *, tenant: Tenant, data: CountExecutions) -> dict[str, Any]:
    """Executions per agent id asked (0 for an unknown one), or the workspace's total; optionally of one status."""
    ids = data.ids()
    async with svc.pool.connection() as conn:
        if ids is None:
            return {"total": await xrepo.count_executions(conn, api_key_id=tenant.api_key_id, status=data.status)}
        found = await xrepo.count_by_agent(conn, api_key_id=tenant.api_key_id, agent_ids=ids, status=data.status)
    return {"counts": {agent_id: found.get(agent_id, 0) for agent_id in ids}}


def model_key(llm_model: str) -> str:
    """Velt's key of a model in analytics: `provider/model` with slashes and dots as underscores."""
    return llm_model.replace("/", "_").replace(".", "_")


def _usage(rows: list[dict[str, Any]]) -> dict[str, int]:
    prompt, completion = sum(int(r["prompt_tokens"]) for r in rows), sum(int(r["completion_tokens"]) for r in rows)
    return {
        "requestCount": sum(int(r["requests"]) for r in rows), "promptTokens": prompt, "completionTokens": completion,
        "thoughtsTokens": 0, "totalTokens": prompt + completion
    }


def _by_model(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    models = sorted({r["llm_model"] for r in rows})
    return {model_key(m): _usage([r for r in rows if r["llm_model"] == m]) for m in models}


async def analytics(svc: Services, *, tenant: Tenant, data: GetAnalytics) -> dict[str, Any]:
    """Model calls and tokens of the executions (all time, by year and model, by month of a year, by model) and
    each agent's execution count."""
    async with svc.pool.connection() as conn:
        rows = await xrepo.usage_by_month(conn, api_key_id=tenant.api_key_id, agent_id=data.agentId)
        counts = await xrepo.execution_counts(conn, api_key_id=tenant.api_key_id, agent_id=data.agentId)
    usage: dict[str, Any] = {"allTime": _usage(rows)}
    years = sorted({r["year"] for r in rows})
    if years:
        usage["yearly"] = {year: _by_model([r for r in rows if r["year"] == year]) for year in years}
    if data.year is not None:
        in_year = [r for r in rows if r["year"] == data.year and data.month in (None, r["month"])]
        usage["monthly"] = {
            m: _by_model([r for r in in_year if r["month"] == m])
            for m in sorted({r["month"]
                             for r in in_year})
        }
    if data.model is not None:
        usage["byModel"] = _by_model([r for r in rows if model_key(r["llm_model"]) == model_key(data.model)])
    elif rows:
        usage["byModel"] = _by_model(rows)
    executions = {
        r["id"]: {"executionCount": int(r["execution_count"]), "lastExecutedAt": r["last_executed_at"]}
        for r in counts
    }
    return {"analytics": {"tokenUsage": usage, "executionCounts": executions}}
