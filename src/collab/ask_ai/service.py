"""Ask AI: validate and route on the API side, run the model call as a worker job with a deadline."""

from typing import Any

from collab.ask_ai.schemas import AskAi
from collab.kit.auth import Tenant
from collab.kit.jobs import run_sync
from collab.kit.ratelimit import workload
from collab.kit.services import Services
from collab.llm.routing import resolve


async def ask_ai(svc: Services, *, tenant: Tenant, data: AskAi) -> dict[str, Any]:
    """Rewrite text through the model's provider; `{success: false, error}` when no key is configured."""
    route = resolve(data.model)  # an unknown prefix fails here, before anything is queued
    settings = svc.settings
    async with workload(svc.redis, bucket=f"ai:{tenant.workspace_id}", rate=settings.rate_limit_ai,
                        limit=settings.ai_max_concurrency, ttl_s=int(settings.ask_ai_timeout_s) + 30, now=svc.clock(),
                        rate_message="Too many AI requests for this workspace; retry later.",
                        busy_message="Too many AI requests in flight for this workspace; retry shortly."):
        outcome = await run_sync(svc.redis, "ask_ai", timeout_s=settings.ask_ai_timeout_s, api_key_id=tenant.api_key_id,
                                 workspace_id=tenant.workspace_id, model=route.name, prompt=data.prompt, text=data.text)
    return outcome
