"""Worker jobs of memory insights: the cron that finds keys whose judgments changed, and the per-key computation."""

from typing import Any

from collab.insights import service
from collab.kit.jobs import job
from collab.kit.services import Services


async def insights_sweep(ctx: dict) -> int:
    """Cron: queue a computation for each key whose judgments changed since its last one; the number queued."""
    svc: Services = ctx["svc"]
    return await service.sweep(svc)


@job(timeout=300, max_tries=3)
async def compute_insights(ctx: dict, *, api_key_id: str) -> dict[str, Any]:
    """Compute one key's reviewer profiles, patterns and alerts from its newest judgments; idempotent."""
    return await service.compute_key(ctx["svc"], api_key_id=api_key_id)
