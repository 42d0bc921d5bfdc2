"""The outbox: a job enqueued in a write transaction is a row of that transaction, sent to Redis after commit.

If Redis is down at that moment the row stays `queued` and the worker's sweep sends it again, so nothing committed
is ever lost. The sweep also re-sends `running` rows whose arq job is gone altogether (Redis lost it, or arq gave up).
"""

import logging
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from arq import ArqRedis
from arq.constants import in_progress_key_prefix, job_key_prefix, result_key_prefix
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import RedisError

from collab.kit.crypto import new_id
from collab.kit.db import Queries, execute, fetch_all
from collab.kit.db.pool import Conn
from collab.kit.jobs import fencing
from collab.kit.jobs.lanes import enqueue
from collab.kit.jobs.registry import lane

log = logging.getLogger("collab.jobs")
q = Queries(Path(__file__).with_name("jobs.sql"))


class Tx:
    """One write transaction plus the jobs to send once it commits."""

    def __init__(self, conn: Conn):
        self.conn = conn
        self.pending: list[tuple[str, str]] = []

    async def enqueue(self, function: str, *, api_key_id: str | None, _job_id: str | None = None, **args: Any) -> str:
        """Record a job in this transaction; it is sent to the queue after commit."""
        lane(function)  # a job nobody declared fails here, before its row is committed
        job_id = _job_id or new_id("job_")
        await execute(self.conn, q.insert_job, {"id": job_id, "key": api_key_id, "fn": function, "args": Jsonb(args)})
        self.pending.append((function, job_id))
        return job_id


@asynccontextmanager
async def transaction(pool: AsyncConnectionPool, redis: ArqRedis | None) -> AsyncIterator[Tx]:
    """A write transaction whose jobs are sent after commit, never before; in a tracked job, only while its try is
    the latest (fencing.py)."""
    async with pool.connection() as conn:
        async with conn.transaction():
            await fencing.hold(conn)
            tx = Tx(conn)
            yield tx
        await committed(conn, redis, tx.pending)


async def committed(conn: Conn, redis: ArqRedis | None, jobs: list[tuple[str, str]]) -> None:
    """Send jobs whose rows (marked sent) just committed; with no queue to send to, mark them for the sweep."""
    if jobs and redis is None:  # the rows must not say "sent": the sweep sends them
        await execute(conn, q.mark_unsent, {"ids": [job_id for _, job_id in jobs]})
    elif redis is not None and jobs:  # (the branch above took jobs without a queue)
        await send(conn, redis, jobs)


async def send(conn: Conn, redis: ArqRedis, jobs: list[tuple[str, str]]) -> list[str]:
    """Put committed jobs on the queue; the ids sent. A failure leaves a job for the sweep, marked unsent."""
    sent, unsent = [], []
    for function, job_id in jobs:
        try:
            await enqueue(redis, function, job_id, job_id=job_id, queue=lane(function).queue)
        except (RedisError, OSError) as exc:
            log.warning("enqueue of %s failed, left for the sweep: %s", job_id, exc)
            unsent.append(job_id)
            continue
        sent.append(job_id)
    # The row says "sent" from its insert (no statement after commit on the usual path): only a failure writes.
    if unsent:
        await execute(conn, q.mark_unsent, {"ids": unsent})
    return sent


async def sweep(ctx: dict) -> int:
    """Re-send jobs that were committed but never reached the queue, or that the queue lost while running."""
    pool: AsyncConnectionPool = ctx["pool"]
    redis: ArqRedis = ctx["redis"]
    after = ctx["settings"].job_sweep_after_s
    async with pool.connection() as conn:
        rows = await fetch_all(conn, q.unsent_jobs, {"after": after})
        running = await fetch_all(conn, q.stale_running_jobs, {"after": after})
        lost = await _lost(redis, running)
        sent = await send(conn, redis, [(r["function"], r["id"]) for r in rows + lost])
        if sent:
            await execute(conn, q.mark_enqueued, {"ids": sent})
    return len(rows) + len(lost)


async def _lost(redis: ArqRedis, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `running` rows whose arq job is neither queued nor running: Redis lost it, or arq finished it
    without our wrapper recording an outcome (its timeout, or its own max_tries after worker deaths)."""
    if not rows:
        return []
    async with redis.pipeline(transaction=False) as pipe:
        for row in rows:
            pipe.exists(job_key_prefix + row["id"], in_progress_key_prefix + row["id"])
        found = await pipe.execute()
    lost = [row for row, n in zip(rows, found) if n == 0]
    if lost:
        # arq refuses a job id whose result is still kept; the row, not that result, is the truth.
        await redis.delete(*(result_key_prefix + row["id"] for row in lost))
        log.warning("re-sending %d running job(s) the queue no longer holds: %s", len(lost), [r["id"] for r in lost])
    return lost
