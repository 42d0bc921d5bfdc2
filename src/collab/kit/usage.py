"""Usage counters for the console's Overview: counts per workspace, minute, metric and label.

Recording is a dict update in this process (no await, no I/O on the request path). A flusher adds the buffer to
Postgres every `usage_flush_s` seconds with one multi-row upsert (`count = count + excluded.count`, histogram
buckets added element-wise), and once more when the process stops; so several API and worker processes add up
without coordination, and a crash loses at most one flush interval of counts. Rows older than
`usage_retention_days` are deleted by a worker cron (`drop_old`).

Latency is kept as a histogram of fixed log-spaced buckets (a quarter of a doubling each, 1 ms to 32.8 s):
a percentile read from it is interpolated inside its bucket, so it is within 19% (2^(1/4)) of the true one.
"""

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any

from collab.kit.db import Queries, delete_in_batches, execute, fetch_all
from collab.kit.errors import invalid, issue

if TYPE_CHECKING:
    from collab.kit.services import Services

log = logging.getLogger("collab.usage")
q = Queries.beside(__file__, "usage.sql")

# The Overview's figures, in the order the console shows them.
METRICS = ("api_calls", "judgments_added", "searches", "extractions", "ask_ai", "webhooks_succeeded", "webhooks_failed",
           "notifications_sent")
# Histogram: bucket 0 is [0, 1 ms); bucket k in 1..TOP is [2^((k-1)/4), 2^(k/4)) ms; bucket TOP+1 is 2^15 ms and up.
STEPS = 4
TOP = 60
BUCKETS = TOP + 2
MAX_SLOTS = 2000  # chart buckets one overview may ask for
MAX_ENTRIES = 200_000  # buffered keys kept while Postgres is unreachable; past it the oldest minutes are dropped
_RETENTION_BATCH = 5000


def bucket_of(ms: float) -> int:
    """The histogram bucket of a duration in milliseconds."""
    if ms < 1:
        return 0
    return min(int(math.log2(ms) * STEPS) + 1, TOP + 1)


def bounds(k: int) -> tuple[float, float]:
    """The [low, high) milliseconds of histogram bucket k (the last one's high is its low)."""
    if k == 0:
        return 0.0, 1.0
    low = 2**((k - 1) / STEPS)
    return (low, low) if k > TOP else (low, 2**(k / STEPS))


def percentile(counts: list[int], p: float) -> float | None:
    """The p-th quantile (0..1) of a histogram, interpolated geometrically inside its bucket; None when empty."""
    total = sum(counts)
    if total == 0:
        return None
    rank = p * total
    seen = 0
    for k, n in enumerate(counts):
        if n and seen + n >= rank:
            low, high = bounds(k)
            share = max(rank - seen, 0) / n
            value = low + (high - low) * share if k == 0 else low * (high / low)**share
            return round(value, 2)
        seen += n
    return round(bounds(len(counts) - 1)[0], 2)


class Usage:
    """One process's counts not yet flushed, the API keys' workspaces it has looked up, and its flusher task."""

    def __init__(self, max_entries: int = MAX_ENTRIES):
        # (workspace_id, api_key_id, minute_ms, metric, label) -> [count, histogram or None]; one of the ids is set.
        self.entries: dict[tuple, list] = {}
        self.workspaces: dict[str, str] = {}  # an API key never moves to another workspace: cached for good
        self.max_entries = max_entries
        self.task: asyncio.Task | None = None

    def add(self, key: tuple, n: int, ms: float | None) -> None:
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = [0, None]
        entry[0] += n
        if ms is not None:
            if entry[1] is None:
                entry[1] = [0] * BUCKETS
            entry[1][bucket_of(ms)] += 1

    def take(self) -> dict[tuple, list]:
        entries, self.entries = self.entries, {}
        return entries

    def put_back(self, entries: dict[tuple, list]) -> None:
        """Return counts whose flush failed, to be added by the next one (bounded: the oldest minutes go first)."""
        for key, (n, hist) in entries.items():
            entry = self.entries.setdefault(key, [0, None])
            entry[0] += n
            if hist is not None:
                entry[1] = hist if entry[1] is None else [a + b for a, b in zip(entry[1], hist)]
        if len(self.entries) > self.max_entries:
            kept = sorted(self.entries, key=lambda k: k[2])[len(self.entries) - self.max_entries:]
            log.warning("usage buffer full while Postgres is unreachable: %d counts dropped",
                        len(self.entries) - len(kept))
            self.entries = {k: self.entries[k] for k in kept}


def _minute(svc: "Services") -> int:
    return int(svc.clock() // 60) * 60_000


def count(svc: "Services", metric: str, *, workspace_id: str | None = None, api_key_id: str | None = None,
          label: str = "", n: int = 1) -> None:
    """Count `n` of a metric for a workspace (or the workspace of an API key) in the current minute."""
    if n:
        svc.usage.add((workspace_id, None if workspace_id else api_key_id, _minute(svc), metric, label), n, None)


def observe(svc: "Services", metric: str, ms: float, *, workspace_id: str | None = None, api_key_id: str | None = None,
            label: str = "") -> None:
    """Count one of a metric and put its duration in the metric's latency histogram."""
    svc.usage.add((workspace_id, None if workspace_id else api_key_id, _minute(svc), metric, label), 1, ms)


async def flush(svc: "Services", usage: Usage | None = None) -> int:
    """Add a buffer's counts to Postgres in one upsert (the process's buffer by default); the rows written."""
    usage = usage or svc.usage
    entries = usage.take()
    if not entries:
        return 0
    try:
        async with svc.pool.connection() as conn:
            unknown = sorted({k[1] for k in entries if k[0] is None and k[1] not in usage.workspaces})
            if unknown:
                for row in await fetch_all(conn, q.key_workspaces, {"ids": unknown}):
                    usage.workspaces[row["id"]] = row["workspace_id"]
            rows = _by_workspace(entries, usage.workspaces)
            if rows:
                await execute(conn, q.add_counts, _columns(rows))
    except BaseException:
        usage.put_back(entries)
        raise
    return len(rows)


def _by_workspace(entries: dict[tuple, list], workspaces: dict[str, str]) -> dict[tuple, list]:
    rows: dict[tuple, list] = {}
    for (workspace_id, api_key_id, minute, metric, label), (n, hist) in entries.items():
        workspace_id = workspace_id or workspaces.get(api_key_id)
        if workspace_id is None:
            continue  # the API key was deleted meanwhile: its counts have no workspace left to show them
        row = rows.setdefault((workspace_id, minute, metric, label), [0, None])
        row[0] += n
        if hist is not None:
            row[1] = hist if row[1] is None else [a + b for a, b in zip(row[1], hist)]
    return rows


def _columns(rows: dict[tuple, list]) -> dict[str, list]:
    # Sorted keys: concurrent flushes of several processes lock rows in one order (no deadlock).
    keys = sorted(rows)
    return {
        "workspace_ids": [k[0] for k in keys], "minutes": [k[1] for k in keys], "metrics": [k[2] for k in keys],
        "labels": [k[3] for k in keys], "counts": [rows[k][0] for k in keys],
        "buckets": [None if rows[k][1] is None else "{" + ",".join(map(str, rows[k][1])) + "}" for k in keys]
    }


async def _flush_every(svc: "Services", every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        try:
            await flush(svc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # kept in the buffer; the next tick tries again
            log.warning("usage counters not flushed: %s: %s", type(exc).__name__, exc)


def start_flusher(svc: "Services") -> None:
    """Start the process's flusher (build_services)."""
    if svc.usage.task is None:
        svc.usage.task = asyncio.ensure_future(_flush_every(svc, svc.settings.usage_flush_s))


async def stop_flusher(svc: "Services") -> None:
    """Stop the flusher and flush what is left (close_services, before the pool closes)."""
    task, svc.usage.task = svc.usage.task, None
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    try:
        await flush(svc)
    except Exception as exc:
        log.warning("usage counters lost at shutdown: %s: %s", type(exc).__name__, exc)


async def drop_old(ctx: dict) -> int:
    """Cron: delete counter rows older than the retention; how many were deleted."""
    svc: "Services" = ctx["svc"]
    before = int(svc.clock() * 1000) - svc.settings.usage_retention_days * 86_400_000
    return await delete_in_batches(svc.pool, q.drop_old, {"before": before}, batch=_RETENTION_BATCH)


async def overview(svc: "Services", *, workspace_id: str, since_ms: int, until_ms: int,
                   bucket_s: int) -> dict[str, Any]:
    """A workspace's figures over [since, until): totals, API calls by operation and status, Ask AI calls by
    provider, search latency p50/p95, and a series per figure with every bucket present (a minute counts in
    the bucket where it starts)."""
    issues = []
    if bucket_s < 60:
        issues.append(issue(["bucketSeconds"], "Must be at least 60 (counts are kept per minute)."))
    if until_ms <= since_ms:
        issues.append(issue(["until"], "Must be after since."))
    elif bucket_s >= 60 and -(-(until_ms - since_ms) // (bucket_s * 1000)) > MAX_SLOTS:
        issues.append(issue(["bucketSeconds"], f"Too small for the window: at most {MAX_SLOTS} buckets."))
    if issues:
        raise invalid(issues[0]["message"], issues)
    bucket_ms = bucket_s * 1000
    slots = -(-(until_ms - since_ms) // bucket_ms)
    params = {"workspace_id": workspace_id, "since": since_ms, "until": until_ms, "bucket_ms": bucket_ms}
    async with svc.pool.connection() as conn:
        rows = await fetch_all(conn, q.counts_by_slot, params)
        hist_rows = await fetch_all(conn, q.histogram, params | {"metric": "searches"})
    totals = dict.fromkeys(METRICS, 0)
    series = {m: [0] * slots for m in METRICS}
    calls: dict[tuple[str, int], int] = {}
    providers: dict[str, int] = {}
    for row in rows:
        metric, n = row["metric"], int(row["count"])
        if metric not in totals:
            continue  # a metric this version does not show
        totals[metric] += n
        series[metric][int(row["slot"])] += n
        if metric == "api_calls":
            operation, _, status = row["label"].rpartition(" ")
            key = (operation, int(status) if status.isdigit() else 0)
            calls[key] = calls.get(key, 0) + n
        elif metric == "ask_ai":
            providers[row["label"]] = providers.get(row["label"], 0) + n
    hist = [0] * BUCKETS
    for row in hist_rows:
        if 1 <= row["i"] <= BUCKETS:
            hist[row["i"] - 1] = int(row["n"])
    return {
        "since": since_ms, "until": until_ms, "bucketSeconds": bucket_s, "totals": totals,
        "apiCalls": [{"operation": op, "status": status, "count": n}
                     for (op, status), n in sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))],
        "askAiByProvider": [{"provider": p, "count": n}
                            for p, n in sorted(providers.items(), key=lambda kv: (-kv[1], kv[0]))],
        "searchLatencyMs": {"p50": percentile(hist, 0.50), "p95": percentile(hist, 0.95)},
        "series": {m: [{"t": since_ms + i * bucket_ms, "count": c} for i, c in enumerate(series[m])]
                   for m in METRICS}
    }
