"""Memory insights: the reads and alert operations of the API, and the per-key computation the worker runs."""

import asyncio
import logging
import time
from typing import Any

from collab.insights import compute
from collab.insights import repository as repo
from collab.insights.schemas import (
    CONFIG_MAX_BYTES,
    CONFIG_MAX_KEYS,
    Alert,
    DismissAlert,
    GetProfile,
    UpdateAlertConfig,
)
from collab.kit import threads
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.envelope import dumps
from collab.kit.errors import invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services

log = logging.getLogger("collab.insights")
# Velt's documented ceilings: a count equal to one means "at least".
CEILINGS = {"judgments": 10_000, "profiles": 500, "patterns": 100}
MAX_ALERTS_LISTED = 50
# A queued computation not done after this long is taken as lost, and queued again.
REQUEUE_AFTER_MS = 15 * 60 * 1000


# --- reads -----------------------------------------------------------------------------------------
async def stats(svc: Services, *, tenant: Tenant) -> dict[str, int]:
    """Counts of the key's judgments, profiles and patterns (up to Velt's ceilings) and knowledge sources (exact)."""
    key = tenant.api_key_id
    async with svc.pool.connection() as conn:
        return {
            "totalActivities": await repo.count(conn, what="judgments", api_key_id=key, cap=CEILINGS["judgments"]),
            "totalProfiles": await repo.count(conn, what="profiles", api_key_id=key, cap=CEILINGS["profiles"]),
            "totalPatterns": await repo.count(conn, what="patterns", api_key_id=key, cap=CEILINGS["patterns"]),
            "totalKnowledgeSources": await repo.count(conn, what="knowledge_sources", api_key_id=key)
        }


async def patterns(svc: Services, *, tenant: Tenant) -> list[dict[str, Any]]:
    """The key's patterns as last computed, most recently updated first (at most 100)."""
    async with svc.pool.connection() as conn:
        return await repo.list_patterns(conn, api_key_id=tenant.api_key_id, limit=CEILINGS["patterns"])


async def profile(svc: Services, *, tenant: Tenant, data: GetProfile) -> dict[str, Any] | None:
    """A reviewer's profile as last computed; None without `targetUserId` or without a profile."""
    if data.targetUserId is None:
        return None
    async with svc.pool.connection() as conn:
        return await repo.profile(conn, api_key_id=tenant.api_key_id, user_id=data.targetUserId)


# --- alerts ----------------------------------------------------------------------------------------


async def alerts(svc: Services, *, tenant: Tenant) -> list[dict[str, Any]]:
    """The key's active alerts, newest first (at most 50)."""
    async with svc.pool.connection() as conn:
        rows = await repo.active_alerts(conn, api_key_id=tenant.api_key_id, limit=MAX_ALERTS_LISTED)
    return [Alert.wire(r) for r in rows]


async def action_alert(svc: Services, *, tenant: Tenant, alert_id: str) -> None:
    """Mark an alert actioned (it leaves the active list for good)."""
    async with svc.pool.connection() as conn:
        if not await repo.action_alert(conn, api_key_id=tenant.api_key_id, id=alert_id):
            raise not_found("alert")  # Velt answers a 500; a caller's bad id never is one here


async def dismiss_alert(svc: Services, *, tenant: Tenant, data: DismissAlert) -> None:
    """Dismiss an alert by `user.uid` ("" without a user); dismissing again moves its time."""
    by = data.user.uid if data.user is not None else ""
    async with svc.pool.connection() as conn:
        if not await repo.dismiss_alert(conn, api_key_id=tenant.api_key_id, id=data.alertId, by=by, now=svc.now_ms()):
            raise not_found("alert")


async def alert_config(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The stored alert settings over `{enabled: true}`."""
    async with svc.pool.connection() as conn:
        stored = await repo.alert_config(conn, api_key_id=tenant.api_key_id)
    return {"enabled": True, **(stored or {})}


async def update_alert_config(svc: Services, *, tenant: Tenant, data: UpdateAlertConfig) -> None:
    """Merge the sent keys into the stored alert settings (stored, not applied to alert generation: Velt's docs)."""
    sent = data.config.model_dump(exclude_unset=True)
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            stored = await repo.alert_config(conn, api_key_id=tenant.api_key_id, for_update=True) or {}
            merged = {**stored, **sent}
            # Each update is bounded by its model; what many updates add up to is bounded here.
            if len(merged) > CONFIG_MAX_KEYS + 4 or len(dumps(merged)) > CONFIG_MAX_BYTES:
                raise invalid("The stored config would exceed its bounds", [
                    issue(["config"], f"The stored config holds at most {CONFIG_MAX_KEYS + 4} keys and "
                          f"{CONFIG_MAX_BYTES} bytes of JSON", "too_big")
                ])
            await repo.save_alert_config(conn, api_key_id=tenant.api_key_id, config=merged, now=svc.now_ms())


# --- the computation -------------------------------------------------------------------------------


async def sweep(svc: Services) -> int:
    """Queue one computation per key whose judgments changed (COLLAB_INSIGHTS_KEYS_PER_SWEEP at most, least recently
    computed first, none more often than COLLAB_INSIGHTS_MIN_INTERVAL_S); how many were queued."""
    settings, now = svc.settings, svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        keys = await repo.due_keys(tx.conn, requeue_before=now - REQUEUE_AFTER_MS,
                                   computed_before=now - int(settings.insights_min_interval_s * 1000),
                                   limit=settings.insights_keys_per_sweep)
        await repo.mark_queued(tx.conn, keys=keys, now=now)
        for key in keys:
            await tx.enqueue("compute_insights", api_key_id=key)
    return len(keys)


async def compute_key(svc: Services, *, api_key_id: str) -> dict[str, Any]:
    """Compute and store one key's profiles, patterns and alerts from its newest judgments (at most
    COLLAB_INSIGHTS_JUDGMENTS_PER_RUN); idempotent. Read, compute, write: the reads take a pooled connection and give
    it back, the computation runs in a thread within COLLAB_INSIGHTS_COMPUTE_BUDGET_S (the event loop keeps serving
    other jobs), and only the writes take a transaction, under the key's lock."""
    now = svc.now_ms()
    async with svc.pool.connection() as conn:
        seen = await repo.changes(conn, api_key_id=api_key_id)
        judgments = await repo.newest_judgments(conn, api_key_id=api_key_id,
                                                limit=svc.settings.insights_judgments_per_run)
        stored = await repo.stored_patterns(conn, api_key_id=api_key_id)
    budget = svc.settings.insights_compute_budget_s
    try:
        found, profiles, candidates = await asyncio.wait_for(
            threads.run("insights", _compute, judgments, stored, now,
                        time.monotonic() + budget), budget + 5)
    except TimeoutError:  # compute.Overrun is one: the thread stopped at its deadline
        log.warning("insights of %s went past their %.0f s budget on %d judgments; the stored ones stay", api_key_id,
                    budget, len(judgments))
        async with transaction(svc.pool, svc.redis) as tx:
            await repo.computed(tx.conn, api_key_id=api_key_id, seen=seen, now=now)
        return {"judgments": len(judgments), "profiles": 0, "patterns": 0, "alerts": 0, "overrun": True}
    async with transaction(svc.pool, svc.redis) as tx:
        conn = tx.conn
        # One writer of a key at a time; a computation that stored what a later change count saw wins.
        await repo.lock(conn, api_key_id=api_key_id)
        if await repo.computed_seen(conn, api_key_id=api_key_id) > seen:
            return {"judgments": len(judgments), "profiles": 0, "patterns": 0, "alerts": 0, "superseded": True}
        recent = await repo.recent_alerts(conn, api_key_id=api_key_id, since=now - 7 * compute.DAY_MS)
        raised = compute.admit(candidates, recent=recent, now=now)
        await repo.replace_profiles(conn, api_key_id=api_key_id, rows=profiles)
        await repo.replace_patterns(conn, api_key_id=api_key_id, rows=found)
        for alert in raised:
            await repo.insert_alert(conn, api_key_id=api_key_id, id=new_id("alr_"), alert=alert, now=now)
        await repo.computed(conn, api_key_id=api_key_id, seen=seen, now=now)
    if raised:
        log.info("insights of %s raised %d alert(s): %s", api_key_id, len(raised), [a["dedup_key"] for a in raised])
    return {"judgments": len(judgments), "profiles": len(profiles), "patterns": len(found), "alerts": len(raised)}


def _compute(judgments: list[dict[str, Any]], stored: dict[str, dict[str, Any]], now: int,
             deadline: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(patterns, profiles, alert candidates) of a key's judgments; in a worker thread, `compute.Overrun` past
    `deadline`."""
    found = compute.patterns(judgments, stored=stored, now=now, deadline=deadline)
    issues = {jid: p["label"].replace(" ", "-") for p in found for jid in p["ids"]}
    profiles = compute.profiles(judgments, issues=issues, now=now)
    compute.check_time(deadline)
    candidates = compute.anomalies(judgments, now=now) + compute.pattern_shifts(found, stored=stored)
    return found, profiles, candidates
