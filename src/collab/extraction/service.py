"""Extract Agents on the API side: validate, store the upload, run the job with a deadline."""

import hashlib
from typing import Any

from redis.exceptions import RedisError

from collab.extraction import repository as repo
from collab.extraction.schemas import ExtractAgents
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError
from collab.kit.jobs import run_sync, transaction
from collab.kit.ratelimit import workload
from collab.kit.services import Services
from collab.llm.routing import EXTRACTION_PROVIDERS as PROVIDERS


async def extract(svc: Services, *, tenant: Tenant, data: ExtractAgents) -> dict[str, Any]:
    """Draft agents from an uploaded checklist; the file is kept as a knowledge source."""
    provider = data.provider if data.provider is not None else svc.settings.extraction_default_provider
    if provider not in PROVIDERS:
        raise ApiError("INTERNAL", f"Unknown provider '{provider}': use {', '.join(PROVIDERS)}.")
    try:
        if svc.redis is None:
            raise RedisError("no queue configured")
        await svc.redis.ping()  # fail before writing anything when the queue is down
    except (RedisError, OSError) as exc:
        raise ApiError("UNAVAILABLE", "The ingest queue is unavailable; retry later.") from exc
    settings = svc.settings
    # Fairness: one workspace's bulk import must not take every worker slot (or the platform's keys).
    async with workload(svc.redis, bucket=f"extract:{tenant.workspace_id}", rate=settings.rate_limit_extraction,
                        limit=settings.extraction_max_concurrency_per_workspace,
                        ttl_s=int(settings.extraction_timeout_s) + 30, now=svc.clock(),
                        rate_message="Too many extractions for this workspace; retry later.",
                        busy_message="Too many extractions in flight for this workspace; retry when one has finished."):
        outcome = await _extract(svc, tenant=tenant, data=data, provider=provider)
    return {"extractionResult": outcome["extractionResult"]}


async def _extract(svc: Services, *, tenant: Tenant, data: ExtractAgents, provider: str) -> dict[str, Any]:
    """Store the upload as a knowledge source and run the extraction job on it, awaiting its outcome."""
    content = data.content()
    source_id = new_id("src_")
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.insert_source(tx.conn, id=source_id, api_key_id=tenant.api_key_id, file_name=data.fileName,
                                 mime_type=data.mimeType, size_bytes=len(content),
                                 sha256=hashlib.sha256(content).hexdigest(), content=content, provider=provider)
    try:
        outcome = await run_sync(svc.redis, "extract_agents", timeout_s=svc.settings.extraction_timeout_s,
                                 source_id=source_id, provider=provider)
    except ApiError as exc:
        async with svc.pool.connection() as conn:
            await repo.mark_failed(conn, source_id=source_id, error=f"{exc.code}: {exc.message}")
        raise
    return outcome
