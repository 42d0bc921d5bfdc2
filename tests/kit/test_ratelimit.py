"""API-key rate limits counted in Redis a batch of hits at a time: several processes together never admit more
than the limit, and a limit near its end is counted hit by hit. A key past its limit is
refused with RESOURCE_EXHAUSTED and the seconds to wait."""

import asyncio
import uuid

import pytest

from collab.kit.errors import ApiError
from collab.kit.ratelimit import Reservations
from collab.kit.redisclient import redis_client
from support.helpers import error, new_tenant, post, result

NOW = 1_800_000_010.0  # 50 s before a window boundary


def test_per_api_key_rate_limit(client, live, clock):
    a, b = new_tenant(client), new_tenant(client)
    original = live.svc.settings.rate_limit_api_key
    live.svc.settings.rate_limit_api_key = "5/minute"
    try:
        clock["now"] = 1_800_000_040.0  # 20 s before a window boundary (windows start at multiples of 60 s)
        for _ in range(5):
            result(post(client, "/v2/organizations/get", {}, a.headers))
        refused = post(client, "/v2/organizations/get", {}, a.headers)
        assert error(refused, "RESOURCE_EXHAUSTED")["details"]["retryAfterSeconds"] == 20
        assert refused.headers["retry-after"] == "20"
        # Another key has its own budget; the next window starts afresh.
        result(post(client, "/v2/organizations/get", {}, b.headers))
        clock["now"] += 20
        result(post(client, "/v2/organizations/get", {}, a.headers))
    finally:
        live.svc.settings.rate_limit_api_key = original


async def _hit(limits: Reservations, redis, bucket: str, rate: str, now: float = NOW) -> bool:
    try:
        await limits.check(redis, bucket=bucket, rate=rate, now=now, message="slow down")
        return True
    except ApiError as exc:
        assert exc.code == "RESOURCE_EXHAUSTED" and exc.headers["Retry-After"] == "50"
        return False


def test_two_processes_together_admit_exactly_the_limit(servers):

    async def run():
        redis = redis_client(servers["redis_url"])
        a, b, bucket = Reservations(), Reservations(), f"api-key:{uuid.uuid4().hex}"
        outcomes = []
        for _ in range(1_200):  # both keep asking, turn by turn, well past the limit
            outcomes.append(await _hit(a, redis, bucket, "1000/minute"))
            outcomes.append(await _hit(b, redis, bucket, "1000/minute"))
        await redis.aclose()
        return outcomes

    outcomes = asyncio.run(run())
    assert sum(outcomes) == 1000


def test_a_process_that_stops_asking_strands_few_hits(servers):

    async def run():
        redis = redis_client(servers["redis_url"])
        a, b, bucket = Reservations(), Reservations(), f"api-key:{uuid.uuid4().hex}"
        for _ in range(50):
            await _hit(a, redis, bucket, "1000/minute")  # a reserves a batch, spends 50, then goes quiet
        admitted_b = 0
        while await _hit(b, redis, bucket, "1000/minute"):
            admitted_b += 1
        await redis.aclose()
        return admitted_b

    admitted_b = asyncio.run(run())
    assert 1000 - 50 - admitted_b <= 1000 // 16  # what a still holds, at most a sixteenth of the window


def test_concurrent_requests_share_one_reservation(servers):

    async def run():
        redis = redis_client(servers["redis_url"])
        limits, bucket = Reservations(), f"api-key:{uuid.uuid4().hex}"
        outcomes = await asyncio.gather(*(_hit(limits, redis, bucket, "20/minute") for _ in range(40)))
        await redis.aclose()
        return outcomes

    outcomes = asyncio.run(run())
    assert sum(outcomes) == 20


@pytest.mark.parametrize("rate", ["1/minute", "3/minute"])
def test_a_small_limit_is_counted_hit_by_hit(servers, rate):
    limit = int(rate.split("/")[0])

    async def run():
        redis = redis_client(servers["redis_url"])
        a, b, bucket = Reservations(), Reservations(), f"api-key:{uuid.uuid4().hex}"
        first = [await _hit(a, redis, bucket, rate) for _ in range(limit)]
        refused = [await _hit(b, redis, bucket, rate), await _hit(a, redis, bucket, rate)]
        next_window = await _hit(b, redis, bucket, rate, now=NOW + 50)
        await redis.aclose()
        return first, refused, next_window

    first, refused, next_window = asyncio.run(run())
    assert all(first) and refused == [False, False] and next_window


def test_without_redis_the_limit_fails_open():

    async def run():
        return [await _hit(Reservations(), None, "api-key:x", "1/minute") for _ in range(3)]

    assert asyncio.run(run()) == [True, True, True]
