"""Retention of uploaded knowledge-source bytes (COLLAB_KNOWLEDGE_SOURCE_RETENTION_DAYS, 0 = kept)."""

import logging
from datetime import datetime, timedelta, timezone

from collab.extraction import repository as repo
from collab.kit.services import Services

log = logging.getLogger("collab.extraction")
_BATCH = 500  # rows per transaction: a first run over a large backlog holds no long locks


async def drop_old_content(ctx: dict) -> int:
    """Drop the bytes of sources uploaded more than the retention ago; how many were dropped (worker cron)."""
    svc: Services = ctx["svc"]
    days = svc.settings.knowledge_source_retention_days
    if not days:
        return 0
    before = datetime.fromtimestamp(svc.clock(), tz=timezone.utc) - timedelta(days=days)
    dropped = 0
    while True:
        async with svc.pool.connection() as conn:
            async with conn.transaction():
                count = await repo.drop_old_content(conn, before=before, limit=_BATCH)
        dropped += count
        if count < _BATCH:
            break
    if dropped:
        log.info("dropped the stored bytes of %d knowledge source(s) older than %d days", dropped, days)
    return dropped
