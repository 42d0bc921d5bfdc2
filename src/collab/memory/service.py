"""memory/ask and memory/suggest on the API side: validate, apply the workspace's AI limits, await the job."""

from typing import Any

from collab.judgments import search
from collab.kit.auth import Tenant
from collab.kit.jobs import run_sync
from collab.kit.ratelimit import workload
from collab.kit.services import Services
from collab.memory.schemas import AskMemory, SuggestDecision


async def ask(svc: Services, *, tenant: Tenant, data: AskMemory) -> dict[str, Any]:
    """A question answered from past judgments and knowledge, with checked citations (empty when ungrounded)."""
    search.resolve_scope(data.search(limit=1))  # bad scopes answer here, without a job
    return await _run(svc, tenant, "ask_memory", data.model_dump(exclude_none=True))


async def suggest(svc: Services, *, tenant: Tenant, data: SuggestDecision) -> dict[str, Any]:
    """A suggested decision (`primary`) and the dissent (`conflict`) from past judgments."""
    return await _run(svc, tenant, "suggest_decision", data.model_dump(exclude_none=True))


async def _run(svc: Services, tenant: Tenant, function: str, data: dict[str, Any]) -> dict[str, Any]:
    settings = svc.settings
    # The same per-workspace AI budget as Ask AI and the prompt tools: both may call the workspace's model.
    async with workload(svc.redis, bucket=f"ai:{tenant.workspace_id}", rate=settings.rate_limit_ai,
                        limit=settings.ai_max_concurrency, ttl_s=int(settings.memory_timeout_s) + 30, now=svc.clock(),
                        rate_message="Too many AI requests for this workspace; retry later.",
                        busy_message="Too many AI requests in flight for this workspace; retry shortly."):
        return await run_sync(svc.redis, function, timeout_s=settings.memory_timeout_s, api_key_id=tenant.api_key_id,
                              workspace_id=tenant.workspace_id, data=data)
