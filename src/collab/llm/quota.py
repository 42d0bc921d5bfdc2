"""The daily quota of platform-key model use per workspace, counted durably in Postgres.

Only calls made on the platform's own provider keys (COLLAB_*_API_KEY) count: a workspace that configured its
own key pays for its calls itself; a call that failed counts as a call (with no tokens). Checked before a job
starts and again before each of its model calls (against the totals the previous call returned), so a job stops
mid-way once the day is spent; calls already in flight then still finish, so a day can end up to the extraction's
concurrent calls over. 0 turns a limit off.
"""

from datetime import datetime, timedelta, timezone

from collab.config import Settings
from collab.kit.db import Queries, delete_in_batches, fetch_one, fetch_row
from collab.kit.services import Services

q = Queries.beside(__file__)
_DROP_BATCH = 5000

# What a call refused for the quota says (extraction, agents, prompt tools).
SPENT = ("This workspace has used today's quota of the platform's model keys; configure its own provider key, or "
         "retry tomorrow (UTC).")


def _day(now: float):
    return datetime.fromtimestamp(now, tz=timezone.utc).date()


def seconds_to_next_day(now: float) -> int:
    """Seconds until the quota's day (UTC) turns."""
    moment = datetime.fromtimestamp(now, tz=timezone.utc)
    midnight = datetime.combine(moment.date() + timedelta(days=1), datetime.min.time(), tzinfo=timezone.utc)
    return max(1, int((midnight - moment).total_seconds()))


async def exhausted(svc: Services, *, workspace_id: str) -> int | None:
    """Seconds until the quota frees up when the workspace spent today's platform-key quota, else None."""
    settings, now = svc.settings, svc.clock()
    if not settings.platform_key_daily_calls and not settings.platform_key_daily_tokens:
        return None
    async with svc.pool.connection() as conn:
        row = await fetch_one(conn, q.usage, {"workspace_id": workspace_id, "day": _day(now)})
    calls, tokens = (row["calls"], row["tokens"]) if row else (0, 0)
    return seconds_to_next_day(now) if spent(settings, calls=calls, tokens=tokens) else None


def spent(settings: Settings, *, calls: int, tokens: int) -> bool:
    """Whether a day's totals use up the quota (no further call may start)."""
    over_calls = bool(settings.platform_key_daily_calls) and calls >= settings.platform_key_daily_calls
    over_tokens = bool(settings.platform_key_daily_tokens) and tokens >= settings.platform_key_daily_tokens
    return over_calls or over_tokens


async def record(svc: Services, *, workspace_id: str, calls: int, tokens: int) -> tuple[int, int]:
    """Count platform-key use for the workspace's current day (its own transaction: the call was made); the
    day's totals (calls, tokens) after it."""
    async with svc.pool.connection() as conn:
        row = await fetch_row(
            conn, q.add_usage,
            {"workspace_id": workspace_id, "day": _day(svc.clock()), "calls": calls, "tokens": tokens})
    return row["calls"], row["tokens"]


async def drop_past_days(ctx: dict) -> int:
    """Cron: delete the counts of days before yesterday (only the current UTC day's are read, and a process whose
    clock is a little behind may still be on yesterday); how many rows were deleted."""
    svc: Services = ctx["svc"]
    before = _day(svc.clock()) - timedelta(days=1)
    return await delete_in_batches(svc.pool, q.drop_past_days, {"before": before}, batch=_DROP_BATCH)
