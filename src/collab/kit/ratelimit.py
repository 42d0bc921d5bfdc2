"""Fixed-window rate limits and concurrency slots counted in Redis, so they hold across API replicas."""

import asyncio
import logging
import re
import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import RedisError

from collab.kit.errors import ApiError

log = logging.getLogger("collab.ratelimit")
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(second|minute|hour|day)s?\s*$")


def parse_rate(rate: str) -> tuple[int, int]:
    """'10/hour' → (10, 3600); '100/5minutes' → (100, 300)."""
    match = _RATE.match(rate)
    if not match:
        raise ValueError(f"bad rate {rate!r}: use e.g. '10/hour' or '60/minute'")
    count, mult, unit = match.groups()
    return int(count), int(mult or 1) * _UNITS[unit]


def _exhausted(message: str, *, retry_after: int) -> ApiError:
    return ApiError("RESOURCE_EXHAUSTED", message, details={"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


async def check(redis: Redis | None, *, bucket: str, rate: str, now: float, message: str) -> None:
    """Count one hit in the current window; RESOURCE_EXHAUSTED past the limit.

    Fails open when Redis is unreachable: a rate limit must not take the API down with it.
    """
    limit, window = parse_rate(rate)
    start = int(now // window) * window
    key = f"collab:rl:{bucket}:{start}"
    if redis is None:
        return
    try:
        async with redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, window + 1)
            count, _ = await pipe.execute()
    except (RedisError, OSError) as exc:
        log.warning("rate limit %s not checked, Redis unreachable: %s", bucket, exc)
        return
    if count > limit:
        raise _exhausted(message, retry_after=max(1, int(start + window - now)))


# Hits reserved in one call: at most this many, and a sixteenth of what the window has left as last seen, so
# that near the limit a process reserves one hit at a time and the count is exact.
MAX_BATCH = 64
_SHARE = 16


class _Held:
    __slots__ = ("window", "left", "remaining", "lock")

    def __init__(self, window: int, remaining: int):
        self.window, self.left, self.remaining = window, 0, remaining
        self.lock = asyncio.Lock()


class Reservations:
    """A rate limit counted in Redis a batch of hits at a time, spent by this process without a round trip.

    The window's count in Redis includes the hits a process reserved and has not spent yet, so all processes
    together never admit more than the limit. What a process reserved and did not spend in a window is lost
    with it, at most a sixteenth of what was left each time (one hit when the window is nearly spent): a key
    may be refused a few hits below its limit while several processes serve it, never above it.
    """

    def __init__(self, max_buckets: int = 10_000):
        self.max_buckets = max_buckets
        self._held: dict[str, _Held] = {}

    async def check(self, redis: Redis | None, *, bucket: str, rate: str, now: float, message: str) -> None:
        """`check`, from this process's reserved hits while it has some for the current window."""
        limit, window = parse_rate(rate)
        start = int(now // window) * window
        held = self._held.get(bucket)
        if held is not None and held.window == start and held.left > 0:
            held.left -= 1
            return
        if redis is None:
            return
        if held is None or held.window != start:
            if held is None and len(self._held) >= self.max_buckets:
                self._held.pop(next(iter(self._held)))  # the oldest; its unspent hits are lost, never over-spent
            held = self._held[bucket] = _Held(start, limit)
        async with held.lock:  # one reservation at a time per bucket: those waiting spend what it brought
            if held.left > 0:
                held.left -= 1
                return
            batch = max(1, min(MAX_BATCH, held.remaining // _SHARE))
            key = f"collab:rl:{bucket}:{start}"
            try:
                async with redis.pipeline(transaction=True) as pipe:
                    pipe.incrby(key, batch)
                    pipe.expire(key, window + 1)
                    total, _ = await pipe.execute()
            except (RedisError, OSError) as exc:
                log.warning("rate limit %s not checked, Redis unreachable: %s", bucket, exc)
                return
            granted = min(batch, limit - (total - batch))
            held.remaining = max(0, limit - total)
            if granted <= 0:
                raise _exhausted(message, retry_after=max(1, int(start + window - now)))
            held.left += granted - 1


# One holder per member, scored by when its hold expires: expired holds (a crashed process's) are trimmed before
# counting, so a leaked slot frees itself after `ttl` whatever the traffic. Returns 1 when the slot is taken.
# Redis's clock, not ours: API replicas' clocks may disagree (scripts replicate by effects, so TIME is allowed).
_ACQUIRE = """
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('zadd', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('pexpire', KEYS[1], tonumber(ARGV[2]))
return 1
"""


@asynccontextmanager
async def concurrency(redis: Redis | None, *, bucket: str, limit: int, ttl_s: int, message: str) -> AsyncIterator[None]:
    """Hold one of `limit` slots for the duration; RESOURCE_EXHAUSTED when all are taken (fails open).

    A hold lasts at most `ttl_s` (longer than the work it guards), so a holder that crashed frees its slot then.
    """
    key = f"collab:conc:{bucket}"
    holder = uuid.uuid4().hex
    held = False
    if redis is not None:
        try:
            # redis-py types its sync and async clients' replies as one union
            # redis-py types script arguments and timeouts narrower than it takes (ints, a float timeout)
            reply = redis.eval(_ACQUIRE, 1, key, limit, int(ttl_s * 1000), holder)  # type: ignore[arg-type]
            held = bool(await reply)  # type: ignore[misc]
        except (RedisError, OSError) as exc:
            log.warning("concurrency %s not checked, Redis unreachable: %s", bucket, exc)
            held = None  # type: ignore[assignment]  # unknown: let the work run
        if held is False:
            raise ApiError("RESOURCE_EXHAUSTED", message, headers={"Retry-After": "1"})
    try:
        yield
    finally:
        if held:
            assert redis is not None  # held only with a client
            try:
                await redis.zrem(key, holder)
            except (RedisError, OSError):
                pass


@asynccontextmanager
async def workload(redis: Redis | None, *, bucket: str, rate: str, limit: int, ttl_s: int, now: float,
                   rate_message: str, busy_message: str) -> AsyncIterator[None]:
    """A workspace's share of a shared resource: the call counts against `rate`, then holds one of `limit`
    slots while it runs (both kept under `bucket`)."""
    await check(redis, bucket=bucket, rate=rate, now=now, message=rate_message)
    async with concurrency(redis, bucket=bucket, limit=limit, ttl_s=ttl_s, message=busy_message):
        yield
