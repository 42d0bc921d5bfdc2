"""Background jobs: rows in Postgres hold the state users see; arq on Redis only delivers them.

Writes go through `transaction()`: a job added there is inserted in the same transaction and sent
to Redis only after commit (dropped on rollback). If Redis is down at that moment the row stays
`queued` and the worker's sweep sends it again, so nothing committed is ever lost.
"""

import asyncio
import functools
import logging
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any, AsyncIterator, Awaitable, Callable

from arq import ArqRedis, Retry
from arq.jobs import Job, JobStatus
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import RedisError

from collab.kit.crypto import new_id
from collab.kit.db import execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError

log = logging.getLogger("collab.jobs")


class PermanentError(Exception):
    """A job failure that retrying cannot fix; recorded as `failed` with this reason."""


class Tx:
    """One write transaction plus the jobs to send once it commits."""

    def __init__(self, conn: Conn):
        self.conn = conn
        self.pending: list[tuple[str, str]] = []

    async def enqueue(self, function: str, *, api_key_id: str | None, _job_id: str | None = None, **args: Any) -> str:
        """Record a job in this transaction; it is sent to the queue after commit."""
        job_id = _job_id or new_id("job_")
        await execute(
            self.conn,
            "insert into jobs (id, api_key_id, function, args) values (%(id)s, %(key)s, %(fn)s, %(args)s)",
            {"id": job_id, "key": api_key_id, "fn": function, "args": Jsonb(args)},
        )
        self.pending.append((function, job_id))
        return job_id


@asynccontextmanager
async def transaction(pool: AsyncConnectionPool, redis: ArqRedis | None) -> AsyncIterator[Tx]:
    """A write transaction whose jobs are sent after commit, never before."""
    async with pool.connection() as conn:
        async with conn.transaction():
            tx = Tx(conn)
            yield tx
        if tx.pending and redis is not None:
            await send(conn, redis, tx.pending)


async def send(conn: Conn, redis: ArqRedis, jobs: list[tuple[str, str]]) -> None:
    """Put committed jobs on the queue; a failure leaves them for the sweep."""
    for function, job_id in jobs:
        try:
            await redis.enqueue_job(function, job_id, _job_id=job_id)
        except (RedisError, OSError) as exc:
            log.warning("enqueue of %s failed, left for the sweep: %s", job_id, exc)
            continue
        await execute(conn, "update jobs set enqueued_at = now() where id = %(id)s", {"id": job_id})


def tracked(*, max_tries: int = 5, backoff_s: float = 2.0):
    """Wrap a job so its row moves queued → running → succeeded/failed, idempotently."""

    def decorate(fn: Callable[..., Awaitable[Any]]):
        @functools.wraps(fn)
        async def run(ctx: dict, job_id: str) -> Any:
            pool: AsyncConnectionPool = ctx["pool"]
            async with pool.connection() as conn:
                row = await fetch_one(
                    conn,
                    "update jobs set status = 'running', attempts = attempts + 1, updated_at = now()"
                    " where id = %(id)s and status in ('queued', 'running') returning args, attempts, api_key_id",
                    {"id": job_id},
                )
            if row is None:
                return None  # finished already, or unknown: at-least-once delivery makes this normal
            try:
                args = dict(row["args"])
                if row["api_key_id"] is not None:
                    args["api_key_id"] = row["api_key_id"]  # the tenant is a column, not an argument
                result = await fn(ctx, **args)
            except PermanentError as exc:
                await _finish(pool, job_id, "failed", error=str(exc))
                return None
            except Exception as exc:
                if row["attempts"] >= max_tries:
                    await _finish(pool, job_id, "failed", error=f"{type(exc).__name__}: {exc}")
                    return None
                raise Retry(defer=timedelta(seconds=backoff_s * 2 ** (row["attempts"] - 1))) from exc
            await _finish(pool, job_id, "succeeded", result=result)
            return result

        run.__name__ = fn.__name__
        return run

    return decorate


async def _finish(pool: AsyncConnectionPool, job_id: str, status: str, *, result: Any = None, error: str | None = None):
    async with pool.connection() as conn:
        await execute(
            conn,
            "update jobs set status = %(status)s, result = %(result)s, error = %(error)s, updated_at = now()"
            " where id = %(id)s",
            {"id": job_id, "status": status, "result": Jsonb(result) if result is not None else None, "error": error},
        )


async def sweep(ctx: dict) -> int:
    """Re-send jobs that were committed but never reached the queue (or were lost from it)."""
    pool: AsyncConnectionPool = ctx["pool"]
    redis: ArqRedis = ctx["redis"]
    after = ctx["settings"].job_sweep_after_s
    async with pool.connection() as conn:
        rows = await fetch_all(
            conn,
            "select id, function from jobs where status = 'queued'"
            " and coalesce(enqueued_at, created_at) < now() - make_interval(secs => %(after)s)"
            " order by created_at limit 500",
            {"after": after},
        )
        await send(conn, redis, [(r["function"], r["id"]) for r in rows])
    return len(rows)


async def run_sync(redis: ArqRedis | None, function: str, *, timeout_s: float, **kwargs: Any) -> Any:
    """Run a job on a worker and await its result: UNAVAILABLE without Redis, DEADLINE_EXCEEDED past the budget."""
    if redis is None:
        raise ApiError("UNAVAILABLE", "The job queue is unavailable; retry later.")
    try:
        job: Job | None = await redis.enqueue_job(function, _expires=timedelta(seconds=timeout_s), **kwargs)
    except (RedisError, OSError) as exc:
        raise ApiError("UNAVAILABLE", "The job queue is unavailable; retry later.") from exc
    assert job is not None
    try:
        return await job.result(timeout=timeout_s, poll_delay=0.002)
    except asyncio.TimeoutError as exc:
        try:
            if await job.status() != JobStatus.complete:
                await job.abort(timeout=0)
        except Exception:  # best effort: the deadline answer matters more
            pass
        raise ApiError("DEADLINE_EXCEEDED", "The operation exceeded its processing budget.") from exc
    except (RedisError, OSError) as exc:
        raise ApiError("UNAVAILABLE", "The job queue became unavailable; retry later.") from exc
