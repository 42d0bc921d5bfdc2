"""Lanes: a queue per kind of work with its own worker slots, and the push that wakes them on every enqueue."""

from dataclasses import dataclass
from typing import Any

from arq import ArqRedis
from arq.constants import default_queue_name, job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms


@dataclass(frozen=True)
class Lane:
    """A queue with its own worker slots; every enqueue wakes its workers with a push (their poll is a fallback)."""

    name: str
    queue: str


# Bulk keeps arq's default queue (jobs already queued by an older release are still served).
BULK_QUEUE = default_queue_name
LANES = {
    "search": Lane("search", "collab:queue:search"), "ai": Lane("ai", "collab:queue:ai"),
    "extraction": Lane("extraction", "collab:queue:extraction"), "bulk": Lane("bulk", BULK_QUEUE)
}
WAKE_KEY = "collab:wake:"  # + queue name: a list workers block on; a push means "a job is waiting"
_WAKE_TOKENS = 64  # a burst of enqueues needs no more: each wake-up reads a whole batch of jobs

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
    # redis-py types its sync and async clients' replies as one union
    # redis-py types script arguments and timeouts narrower than it takes (ints, a float timeout)
    return bool(await redis.eval(_ENQUEUE, len(keys), *keys, *argv))  # type: ignore[misc, arg-type]


async def wake(redis: ArqRedis, queue: str) -> None:
    """Tell the workers of a lane that a job is waiting (they stop waiting for their next poll)."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.lpush(WAKE_KEY + queue, 1)
        pipe.ltrim(WAKE_KEY + queue, 0, _WAKE_TOKENS - 1)
        pipe.pexpire(WAKE_KEY + queue, 60_000)  # nobody serving the lane: the tokens do not pile up
        await pipe.execute()
