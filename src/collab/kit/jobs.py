"""Background jobs: rows in Postgres hold the state users see; arq on Redis only delivers them.

Writes go through `transaction()`: a job added there is inserted in the same transaction and sent
to Redis only after commit (dropped on rollback). If Redis is down at that moment the row stays
`queued` and the worker's sweep sends it again, so nothing committed is ever lost.

Workers die mid-job (OOM kill, node loss). arq then keeps the job locked by its in-progress key until
that key expires: the longest job timeout + 10 s, an hour here. `Heartbeat` and `reap` shorten that to
the worker lease: every worker says every lease/3 which jobs it runs; a job that stays locked past the
lease with no live worker claiming it is unlocked and runs again on another worker (jobs are idempotent).
The sweep also re-sends `running` rows whose arq job is gone altogether (Redis lost it, or arq gave up).

Lanes (`LANES`): search, Ask AI and extraction each have their own queue, served by their own worker slots, and
bulk (embedding, deliveries, deletions, migrations, the crons) keeps arq's default queue; so no kind of work
waits behind another kind's slots. An enqueue wakes the lane's workers with a push on a Redis list they block
on (no poll delay), and the worker pushes on a per-job list when the job ends, which the caller blocks on
(no result polling).
"""

import asyncio
import functools
import json
import logging
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable

from arq import ArqRedis, Retry
from arq.constants import default_queue_name, in_progress_key_prefix, job_key_prefix, result_key_prefix
from arq.jobs import Job, JobStatus, ResultNotFound, deserialize_result, serialize_job
from arq.utils import timestamp_ms
from arq.worker import JobExecutionFailed
import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import RedisError

from collab.kit.crypto import new_id
from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn, connection_lost, failed_statement
from collab.kit.errors import ApiError, raise_failure

log = logging.getLogger("collab.jobs")
q = Queries(Path(__file__).with_name("jobs.sql"))
# How long a worker that stopped heartbeating still owns its jobs (seconds); see `Heartbeat`.
DEFAULT_LEASE_S = 20.0
WORKERS = "collab:workers"  # a set of worker ids
WORKER_KEY = "collab:worker:"  # + id: the JSON list of job ids it runs, expiring after the lease
_QUEUE_UNAVAILABLE = {"Retry-After": "1"}



@dataclass(frozen=True)
class Lane:
    """A queue with its own worker slots; every enqueue wakes its workers with a push (their poll is a fallback)."""

    name: str
    queue: str


# Bulk keeps arq's default queue (jobs already queued by an older release are still served).
BULK_QUEUE = default_queue_name
LANES = {
    "search": Lane("search", "collab:queue:search"),
    "ai": Lane("ai", "collab:queue:ai"),
    "extraction": Lane("extraction", "collab:queue:extraction"),
    "bulk": Lane("bulk", BULK_QUEUE),
}
# The one mapping of functions to lanes, whoever enqueues them; any other function (and every cron) is bulk.
LANE_OF = {
    "search_judgments": "search",
    "embed_query": "search",
    "ping": "search",
    "ask_ai": "ai",
    "extract_agents": "extraction",
}
# How long an awaited (`run_sync`) function's result stays in Redis: the caller reads it within moments.
AWAITED_RESULT_S = 30
WAKE_KEY = "collab:wake:"  # + queue name: a list workers block on; a push means "a job is waiting"
# + job id: a list the `run_sync` caller blocks on. When the job ends the worker pushes its serialized result
# there (arq's encoding), or DONE_TOKEN where it has none; the caller then reads arq's result key.
DONE_KEY = "collab:done:"
DONE_TOKEN = b"1"
SYNC_PREFIX = "sync_"  # job ids of `run_sync` jobs: only those get a done push
_WAKE_TOKENS = 64  # a burst of enqueues needs no more: each wake-up reads a whole batch of jobs
# The longest single blocking wait on a result; then the result key is read again (covers a lost push). Under
# the Redis client's 2 s socket timeout, which would otherwise read a long wait as Redis being gone.
_RESULT_WAIT_S = 0.5


def lane(function: str) -> Lane:
    """The lane a function runs on."""
    return LANES[LANE_OF.get(function, "bulk")]


# arq's enqueue_job in one round trip instead of three (WATCH, EXISTS, then MULTI/EXEC): the same keys and job
# encoding, decided inside Redis; and the lane's wake-up token (KEYS[4], see `wake`) in the same call.
_ENQUEUE = """
if redis.call('exists', KEYS[1], KEYS[2]) > 0 then return 0 end
redis.call('psetex', KEYS[1], ARGV[1], ARGV[2])
redis.call('zadd', KEYS[3], ARGV[3], ARGV[4])
redis.call('lpush', KEYS[4], 1)
redis.call('ltrim', KEYS[4], 0, tonumber(ARGV[5]) - 1)
redis.call('pexpire', KEYS[4], 60000)
return 1
"""


async def enqueue(redis: ArqRedis, function: str, *args: Any, job_id: str, queue: str, expires_ms: int | None = None,
                  **kwargs: Any) -> bool:
    """Queue a job as arq's enqueue_job does and wake the queue's workers; False when a job with this id is queued
    or has a result already."""
    now = timestamp_ms()
    job = serialize_job(function, args, kwargs, None, now, serializer=redis.job_serializer)
    keys = [job_key_prefix + job_id, result_key_prefix + job_id, queue, WAKE_KEY + queue]
    argv = [expires_ms or redis.expires_extra_ms, job, now, job_id, _WAKE_TOKENS]
    return bool(await redis.eval(_ENQUEUE, len(keys), *keys, *argv))


async def wake(redis: ArqRedis, queue: str) -> None:
    """Tell the workers of a lane that a job is waiting (they stop waiting for their next poll)."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.lpush(WAKE_KEY + queue, 1)
        pipe.ltrim(WAKE_KEY + queue, 0, _WAKE_TOKENS - 1)
        pipe.pexpire(WAKE_KEY + queue, 60_000)  # nobody serving the lane: the tokens do not pile up
        await pipe.execute()


class PermanentError(Exception):
    """A job failure that retrying cannot fix; recorded as `failed` with this reason (tenants read it)."""


class JobFailure(Exception):
    """A failure worth retrying whose message is written for tenants; recorded as the reason once tries run out.

    Any other exception is recorded with a generic reason: its text (a driver's DETAIL, a provider's message)
    goes to `jobs.error_detail` and the log only. In an awaited job it answers the caller with `code`.
    """

    def __init__(self, message: str, *, code: str = "INTERNAL"):
        super().__init__(message)
        self.code = code


def reports_failures(fn: Callable[..., Awaitable[Any]]):
    """Wrap an awaited (`run_sync`) job: an ApiError or JobFailure it raises comes back as its typed failure.

    Returned, not raised: arq pickles a raised exception, and ApiError's arguments are keyword-only. `run_sync`
    raises it again on the API side (`errors.raise_failure`), so every awaiting endpoint answers it the same way.
    """

    @functools.wraps(fn)
    async def run(ctx: dict, **kwargs: Any) -> Any:
        try:
            return await fn(ctx, **kwargs)
        except ApiError as exc:
            return exc.as_failure()
        except JobFailure as exc:
            return ApiError(exc.code, str(exc)).as_failure()

    return run


GENERIC_FAILURE = "The job failed after {tries} tries because of an internal error."


class Tx:
    """One write transaction plus the jobs to send once it commits."""

    def __init__(self, conn: Conn):
        self.conn = conn
        self.pending: list[tuple[str, str]] = []

    async def enqueue(self, function: str, *, api_key_id: str | None, _job_id: str | None = None, **args: Any) -> str:
        """Record a job in this transaction; it is sent to the queue after commit."""
        job_id = _job_id or new_id("job_")
        await execute(self.conn, q.insert_job, {"id": job_id, "key": api_key_id, "fn": function, "args": Jsonb(args)})
        self.pending.append((function, job_id))
        return job_id


@asynccontextmanager
async def transaction(pool: AsyncConnectionPool, redis: ArqRedis | None) -> AsyncIterator[Tx]:
    """A write transaction whose jobs are sent after commit, never before."""
    async with pool.connection() as conn:
        async with conn.transaction():
            tx = Tx(conn)
            yield tx
        await committed(conn, redis, tx.pending)


async def committed(conn: Conn, redis: ArqRedis | None, jobs: list[tuple[str, str]]) -> None:
    """Send jobs whose rows (marked sent) just committed; with no queue to send to, mark them for the sweep."""
    if jobs and redis is None:  # the rows must not say "sent": the sweep sends them
        await execute(conn, q.mark_unsent, {"ids": [job_id for _, job_id in jobs]})
    elif jobs:
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


def tracked(*, max_tries: int = 5, backoff_s: float = 2.0):
    """Wrap a job so its row moves queued → running → succeeded/failed, idempotently."""

    def decorate(fn: Callable[..., Awaitable[Any]]):
        @functools.wraps(fn)
        async def run(ctx: dict, job_id: str) -> Any:
            pool: AsyncConnectionPool = ctx["pool"]
            async with pool.connection() as conn:
                row = await fetch_one(conn, q.start_job, {"id": job_id})
            if row is None:
                return None  # finished already, or unknown: at-least-once delivery makes this normal
            if row["attempts"] > max_tries:
                # The earlier tries ended with no outcome (their worker died, or arq's timeout cancelled them):
                # a job that kills its worker every time must stop being retried.
                error = f"Gave up after {max_tries} tries that ended without an outcome (worker lost or timed out)."
                await _finish(pool, job_id, "failed", error=error)
                return None
            try:
                args = dict(row["args"])
                if row["api_key_id"] is not None:
                    args["api_key_id"] = row["api_key_id"]  # the tenant is a column, not an argument
                result = await fn(ctx, **args)
            except PermanentError as exc:
                await _finish(pool, job_id, "failed", error=str(exc))
                return None
            except Exception as exc:
                if connection_lost(exc):
                    return await _connection_lost(pool, job_id, fn.__name__, exc, attempts=row["attempts"],
                                                  backoff_s=backoff_s)
                if row["attempts"] >= max_tries:
                    detail = f"{type(exc).__name__}: {exc}"
                    reason = str(exc) if isinstance(exc, JobFailure) else GENERIC_FAILURE.format(tries=row["attempts"])
                    log.warning("job %s (%s) failed for good: %s", job_id, fn.__name__, detail)
                    await _finish(pool, job_id, "failed", error=reason, detail=detail[:4000])
                    return None
                raise Retry(defer=timedelta(seconds=backoff_s * 2 ** (row["attempts"] - 1))) from exc
            await _finish(pool, job_id, "succeeded", result=result)
            return result

        run.__name__ = fn.__name__
        run.max_tries = max_tries  # type: ignore[attr-defined]  # the worker gives arq one more (worker.py)
        return run

    return decorate


# A job whose statements lost their connection to a crashed server runs once more; the next loss fails it for good.
# (A statement that kills its backend takes every tenant's connections with it: retried like any error it would
# crash the server at each try.)
CONNECTION_LOSSES_ALLOWED = 1


async def _connection_lost(pool: AsyncConnectionPool, job_id: str, function: str, exc: Exception, *, attempts: int,
                           backoff_s: float) -> None:
    """Count a lost connection against the job; retry it once, fail it for good (with its reason) the second time."""
    statement = failed_statement(exc) or "(not a named statement)"
    losses = await _count_loss(pool, job_id)
    if losses > CONNECTION_LOSSES_ALLOWED:
        log.error("job %s (%s) failed for good: its database connection was lost %d times, the last in statement %s: "
                  "%s", job_id, function, losses, statement, exc)
        detail = f"connection lost {losses} times, the last in statement {statement}: {type(exc).__name__}: {exc}"
        await _finish(pool, job_id, "failed", error=GENERIC_FAILURE.format(tries=attempts), detail=detail[:4000])
        return None
    log.warning("job %s (%s) lost its database connection in statement %s; it runs once more: %s", job_id, function,
                statement, exc)
    raise Retry(defer=timedelta(seconds=backoff_s * 2 ** (attempts - 1))) from exc


async def _count_loss(pool: AsyncConnectionPool, job_id: str, wait_s: float = 60.0) -> int:
    """Record a lost connection on the job's row; how many it has now. Waits for a crashed server to recover."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            async with pool.connection() as conn:
                row = await fetch_one(conn, q.count_connection_loss, {"id": job_id})
            return row["connection_losses"] if row else 0
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)  # the server is still restarting after the crash


async def _finish(
    pool: AsyncConnectionPool, job_id: str, status: str, *, result: Any = None, error: str | None = None,
    detail: str | None = None,
):
    async with pool.connection() as conn:
        await execute(
            conn,
            q.finish_job,
            {"id": job_id, "status": status, "result": Jsonb(result) if result is not None else None, "error": error,
             "detail": detail},
        )


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


class Heartbeat:
    """Tells the other workers that this one is alive, and which queued jobs it is running (see `reap`)."""

    def __init__(self, redis: ArqRedis, running: Callable[[], Iterable[str]], *, lease_s: float, worker_id: str):
        self.redis, self.running, self.lease_s, self.id = redis, running, lease_s, worker_id
        self.task: asyncio.Task | None = None

    async def beat(self) -> None:
        ids = sorted(self.running())
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(WORKER_KEY + self.id, json.dumps(ids), px=int(self.lease_s * 1000))
            pipe.sadd(WORKERS, self.id)
            await pipe.execute()

    async def _run(self) -> None:
        while True:
            try:
                await self.beat()
            except (RedisError, OSError) as exc:
                log.warning("worker heartbeat failed: %s", exc)
            await asyncio.sleep(self.lease_s / 3)

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        """Stop beating and say goodbye (a worker that stopped cleanly holds no jobs)."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
            self.task = None
        try:
            await self.redis.delete(WORKER_KEY + self.id)
            await self.redis.srem(WORKERS, self.id)
        except (RedisError, OSError):
            pass


# Delete an in-progress key only if it is still the one that was judged orphaned: a key set again since
# (the job picked up by a live worker) has a longer time to live than the one observed.
_UNLOCK = """
local ttl = redis.call('pttl', KEYS[1])
if ttl > 0 and ttl <= tonumber(ARGV[1]) then return redis.call('del', KEYS[1]) end
return 0
"""


async def reap(ctx: dict, *, limit: int = 1000) -> list[str]:
    """Unlock the jobs of workers that died mid-job, so that another worker runs them now; their ids.

    A job is orphaned when arq's in-progress key has been set for longer than the lease and no live worker
    lists it in its heartbeat. It stays on the queue (arq removes a job only when it ends), so unlocking it is
    enough: the next poll of any worker starts it again, as its next try.
    """
    redis: ArqRedis = ctx["redis"]
    lease_ms = int(ctx.get("lease_s", DEFAULT_LEASE_S) * 1000)
    # Each lane's queue with what its worker gives every in-progress key.
    lanes = ctx.get("lanes") or {ctx.get("queue_name", default_queue_name): ctx["in_progress_s"]}
    claimed: set[str] = set()
    workers = [w.decode() if isinstance(w, bytes) else w for w in await redis.smembers(WORKERS)]
    if workers:
        beats = await redis.mget([WORKER_KEY + w for w in workers])
        gone = [w for w, beat in zip(workers, beats) if beat is None]
        for beat in beats:
            if beat is not None:
                claimed.update(json.loads(beat))
        if gone:
            await redis.srem(WORKERS, *gone)
    reaped = []
    for queue, in_progress_s in lanes.items():
        reaped += await _reap_queue(redis, queue, claimed, lock_ms=int(in_progress_s * 1000), lease_ms=lease_ms,
                                    limit=limit, cron_names=ctx.get("cron_names", ()))
    if reaped:
        log.warning("unlocked %d job(s) whose worker died: %s", len(reaped), reaped)
    return reaped


async def _reap_queue(
    redis: ArqRedis, queue: str, claimed: set[str], *, lock_ms: int, lease_ms: int, limit: int, cron_names: Iterable[str]
) -> list[str]:
    due = [j.decode() for j in await redis.zrangebyscore(queue, "-inf", timestamp_ms(), start=0, num=limit)]
    # Cron jobs are left alone: the next tick runs them anyway, and arq keeps a finished one's in-progress key
    # for 60 s (to run each tick once), which would read here as a lock an hour old.
    # Their ids are "<cron name>:<tick ms>" ("cron:<function>" when a cron has no name of its own).
    crons = ("cron:", *(f"{name}:" for name in cron_names))
    candidates = [j for j in due if j not in claimed and not j.startswith(crons)]
    if not candidates:
        return []
    async with redis.pipeline(transaction=False) as pipe:
        for job_id in candidates:
            pipe.pttl(in_progress_key_prefix + job_id)
        ttls = await pipe.execute()
    reaped = []
    for job_id, ttl in zip(candidates, ttls):
        if ttl > 0 and lock_ms - ttl >= lease_ms:
            if await redis.eval(_UNLOCK, 1, in_progress_key_prefix + job_id, ttl):
                reaped.append(job_id)
    return reaped


async def run_sync(redis: ArqRedis | None, function: str, *, timeout_s: float, **kwargs: Any) -> Any:
    """Run a job on a worker and await its result: UNAVAILABLE without Redis, DEADLINE_EXCEEDED past the budget,
    and the job's own failure (see `reports_failures`) as the ApiError it was."""
    if redis is None:
        raise ApiError("UNAVAILABLE", "The job queue is unavailable; retry later.", headers=_QUEUE_UNAVAILABLE)
    queue = lane(function).queue  # search, Ask AI and extraction have lanes of their own; the rest go to bulk
    deadline = time.monotonic() + timeout_s
    try:
        job_id = SYNC_PREFIX + uuid.uuid4().hex
        await enqueue(redis, function, job_id=job_id, queue=queue, expires_ms=int(timeout_s * 1000), **kwargs)
    except (RedisError, OSError) as exc:
        raise ApiError("UNAVAILABLE", "The job queue is unavailable; retry later.", headers=_QUEUE_UNAVAILABLE) from exc
    job = Job(job_id, redis=redis, _queue_name=queue, _deserializer=redis.job_deserializer)
    try:
        outcome = await _outcome(redis, job, queue, deadline=deadline)
    except asyncio.TimeoutError as exc:
        try:
            if await job.status() != JobStatus.complete:
                await job.abort(timeout=0)
        except Exception:  # best effort: the deadline answer matters more
            pass
        raise ApiError("DEADLINE_EXCEEDED", "The operation exceeded its processing budget.") from exc
    except (RedisError, OSError) as exc:
        raise ApiError("UNAVAILABLE", "The job queue became unavailable; retry later.", headers=_QUEUE_UNAVAILABLE) from exc
    except (JobExecutionFailed, ResultNotFound) as exc:
        # arq gave the job up without running it to an end (its worker died on every try it had, or it expired),
        # or Redis lost it (restarted without its data).
        raise ApiError("UNAVAILABLE", "The job was lost with its worker; retry.", headers=_QUEUE_UNAVAILABLE) from exc
    return raise_failure(outcome)


async def _outcome(redis: ArqRedis, job: Job, queue: str, *, deadline: float) -> Any:
    """The job's result (or its exception, raised): as the worker pushes it when the job ends (no polling), else
    from arq's result key (a push without a result, or one lost)."""
    while True:
        left = deadline - time.monotonic()
        if left > 0:
            popped = await redis.blpop([DONE_KEY + job.job_id], timeout=min(left, _RESULT_WAIT_S))
            if popped is not None and popped[1] != DONE_TOKEN:
                return _returned(deserialize_result(popped[1], deserializer=redis.job_deserializer))
        async with redis.pipeline(transaction=True) as tr:
            tr.get(result_key_prefix + job.job_id)
            tr.zscore(queue, job.job_id)
            stored, score = await tr.execute()
        if stored:
            return _returned(deserialize_result(stored, deserializer=redis.job_deserializer))
        if score is None:
            raise ResultNotFound("The job is neither queued nor finished.")
        if deadline - time.monotonic() <= 0:
            raise asyncio.TimeoutError()


def _returned(info: Any) -> Any:
    """A finished job's result, or its exception raised."""
    if info.success:
        return info.result
    if isinstance(info.result, (Exception, asyncio.CancelledError)):
        raise info.result
    raise ResultNotFound(str(info.result))
