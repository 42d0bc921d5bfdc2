"""Fixed-window rate limits and concurrency slots counted in Redis, so they hold across API replicas."""

import hashlib
import logging
import re
import uuid
from contextlib import asynccontextmanager
from typing import AsyncIterator

from redis.asyncio import Redis
from redis.exceptions import NoScriptError, RedisError

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


# The rate-limit hit of a request whose credentials this process verified a moment ago: counted only while the
# credentials' version (bumped when they change) is still the one seen then; -1 (nothing counted) otherwise.
_COUNT_IF_CURRENT = """
if (redis.call('get', KEYS[1]) or '0') ~= ARGV[1] then return -1 end
local count = redis.call('incr', KEYS[2])
redis.call('expire', KEYS[2], tonumber(ARGV[2]))
return count
"""
_COUNT_IF_CURRENT_SHA = hashlib.sha1(_COUNT_IF_CURRENT.encode()).hexdigest()


async def check_if_current(
    redis: Redis, *, version_key: str, version: str, bucket: str, rate: str, now: float, message: str
) -> bool | None:
    """`check` in the same round trip as a version check: True when counted (RESOURCE_EXHAUSTED past the limit),
    False when the version moved on (nothing counted), None when Redis did not answer (nothing known)."""
    limit, window = parse_rate(rate)
    start = int(now // window) * window
    try:
        keys_args = (version_key, f"collab:rl:{bucket}:{start}", version, window + 1)
        try:
            count = await redis.evalsha(_COUNT_IF_CURRENT_SHA, 2, *keys_args)
        except NoScriptError:  # a Redis that has not seen it yet (or restarted): send the script itself once
            count = await redis.eval(_COUNT_IF_CURRENT, 2, *keys_args)
    except (RedisError, OSError) as exc:
        log.warning("rate limit %s not checked, Redis unreachable: %s", bucket, exc)
        return None
    if count < 0:
        return False
    if count > limit:
        raise _exhausted(message, retry_after=max(1, int(start + window - now)))
    return True


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
            held = bool(await redis.eval(_ACQUIRE, 1, key, limit, int(ttl_s * 1000), holder))
        except (RedisError, OSError) as exc:
            log.warning("concurrency %s not checked, Redis unreachable: %s", bucket, exc)
            held = None  # type: ignore[assignment]  # unknown: let the work run
        if held is False:
            raise ApiError("RESOURCE_EXHAUSTED", message, headers={"Retry-After": "1"})
    try:
        yield
    finally:
        if held:
            try:
                await redis.zrem(key, holder)
            except (RedisError, OSError):
                pass


@asynccontextmanager
async def workload(
    redis: Redis | None, *, bucket: str, rate: str, limit: int, ttl_s: int, now: float, rate_message: str,
    busy_message: str,
) -> AsyncIterator[None]:
    """A workspace's share of a shared resource: the call counts against `rate`, then holds one of `limit`
    slots while it runs (both kept under `bucket`)."""
    await check(redis, bucket=bucket, rate=rate, now=now, message=rate_message)
    async with concurrency(redis, bucket=bucket, limit=limit, ttl_s=ttl_s, message=busy_message):
        yield
