"""Leases: a worker that dies mid-job gives its jobs up after the lease, not after arq's hour-long lock.

arq keeps a job locked by its in-progress key until that key expires: the longest job timeout + 10 s, an hour here.
`Heartbeat` and `reap` shorten that to the worker lease: every worker says every lease/3 which jobs it runs; a job
that stays locked past the lease with no live worker claiming it is unlocked and runs again on another worker (jobs
are idempotent).
"""

import asyncio
import json
import logging
from typing import Callable, Iterable

from arq import ArqRedis
from arq.constants import default_queue_name, in_progress_key_prefix
from arq.utils import timestamp_ms
from redis.exceptions import RedisError

log = logging.getLogger("collab.jobs")
# How long a worker that stopped heartbeating still owns its jobs (seconds); see `Heartbeat`.
DEFAULT_LEASE_S = 20.0
WORKERS = "collab:workers"  # a set of worker ids
WORKER_KEY = "collab:worker:"  # + id: the JSON list of job ids it runs, expiring after the lease


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
            # redis-py types its sync and async clients' replies as one union
            await self.redis.srem(WORKERS, self.id)  # type: ignore[misc]
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
    # redis-py types its sync and async clients' replies as one union
    workers = [w.decode() if isinstance(w, bytes) else w for w in await redis.smembers(WORKERS)]  # type: ignore[misc]
    if workers:
        beats = await redis.mget([WORKER_KEY + w for w in workers])
        gone = [w for w, beat in zip(workers, beats) if beat is None]
        for beat in beats:
            if beat is not None:
                claimed.update(json.loads(beat))
        if gone:
            # redis-py types its sync and async clients' replies as one union
            await redis.srem(WORKERS, *gone)  # type: ignore[misc]
    reaped = []
    for queue, in_progress_s in lanes.items():
        reaped += await _reap_queue(redis, queue, claimed, lock_ms=int(in_progress_s * 1000), lease_ms=lease_ms,
                                    limit=limit, cron_names=ctx.get("cron_names", ()))
    if reaped:
        log.warning("unlocked %d job(s) whose worker died: %s", len(reaped), reaped)
    return reaped


async def _reap_queue(redis: ArqRedis, queue: str, claimed: set[str], *, lock_ms: int, lease_ms: int, limit: int,
                      cron_names: Iterable[str]) -> list[str]:
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
            # redis-py types its sync and async clients' replies as one union
            if await redis.eval(_UNLOCK, 1, in_progress_key_prefix + job_id, ttl):  # type: ignore[misc]
                reaped.append(job_id)
    return reaped
