"""Realtime jobs: the sweep that folds realtime updates no API process compacted (it died, or the room stays open)."""

import logging

from collab.crdt import repository as crdt_repo
from collab.crdt import service as crdt_service
from collab.kit.services import Services

log = logging.getLogger("collab.realtime")


async def compact_sweep(ctx: dict, *, limit: int = 200) -> int:
    """Cron: fold the pending updates of editors whose oldest one waited `realtime_compact_after_s`; the number
    of editors compacted. Each editor is its own transaction: one that fails is left for the next tick."""
    svc: Services = ctx["svc"]
    before = svc.now_ms() - int(svc.settings.realtime_compact_after_s * 1000)
    async with svc.pool.connection() as conn:
        editors = await crdt_repo.editors_to_compact(conn, before=before, limit=limit)
    done = 0
    for key in editors:
        try:
            done += await crdt_service.compact(svc, **key)
        except Exception:  # noqa: BLE001 - one tenant's editor never blocks another's
            log.exception("compaction of %s/%s (key %s) failed", key["document_id"], key["editor_id"],
                          key["api_key_id"])
    return done
