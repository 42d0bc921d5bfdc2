"""Awaited jobs: an endpoint runs a job on a worker and waits for its result, pushed to it when the job ends."""

import asyncio
import time
import uuid
from typing import Any

from arq import ArqRedis
from arq.constants import result_key_prefix
from arq.jobs import Job, JobStatus, ResultNotFound, deserialize_result
from arq.worker import JobExecutionFailed
from redis.exceptions import RedisError

from collab.kit.errors import ApiError, raise_failure
from collab.kit.jobs.lanes import enqueue
from collab.kit.jobs.registry import lane

# How long an awaited job's result stays in Redis: the caller reads it within moments.
AWAITED_RESULT_S = 30
# + job id: a list the `run_sync` caller blocks on. When the job ends the worker pushes its serialized result
# there (arq's encoding), or DONE_TOKEN where it has none; the caller then reads arq's result key.
DONE_KEY = "collab:done:"
DONE_TOKEN = b"1"
SYNC_PREFIX = "sync_"  # job ids of `run_sync` jobs: only those get a done push
# The longest single blocking wait on a result; then the result key is read again (covers a lost push). Under
# the Redis client's 2 s socket timeout, which would otherwise read a long wait as Redis being gone.
_RESULT_WAIT_S = 0.5
_QUEUE_UNAVAILABLE = {"Retry-After": "1"}


async def run_sync(redis: ArqRedis | None, function: str, *, timeout_s: float, **kwargs: Any) -> Any:
    """Run a job on a worker and await its result: UNAVAILABLE without Redis, DEADLINE_EXCEEDED past the budget,
    and the job's own failure (see `reports_failures`) as the ApiError it was."""
    if redis is None:
        raise ApiError("UNAVAILABLE", "The job queue is unavailable; retry later.", headers=_QUEUE_UNAVAILABLE)
    queue = lane(function).queue  # the lane the job declares (search, Ask AI and extraction have their own)
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
        raise ApiError("UNAVAILABLE", "The job queue became unavailable; retry later.",
                       headers=_QUEUE_UNAVAILABLE) from exc
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
            # redis-py types its sync and async clients' replies as one union
            # redis-py types script arguments and timeouts narrower than it takes (ints, a float timeout)
            wait = min(left, _RESULT_WAIT_S)
            popped = await redis.blpop([DONE_KEY + job.job_id], timeout=wait)  # type: ignore[misc, arg-type]
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
