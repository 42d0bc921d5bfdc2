"""Failed-authentication limits: past them, a caller is refused from Redis before any database work.

Failures are counted per source address and per presented subject (API key id or workspace id) in fixed
windows in Redis, so they hold across replicas. An attempt whose address or subject is over its limit gets
429 RESOURCE_EXHAUSTED without a pool connection, so bad credentials cannot exhaust the database pool.
Credentials that authenticated recently are remembered by a keyed hash and let through anyway (the database
still checks them), so a flood of bad tokens against a key id, which is not secret, does not lock out its
real clients. Like every limit here, it fails open while Redis is down.
"""

import hashlib
import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

from collab.kit.errors import ApiError
from collab.kit.ratelimit import parse_rate
from collab.kit.services import Services

log = logging.getLogger("collab.authlimit")
# How long credentials that authenticated stay "known good" (refreshed by the next success after expiry).
KNOWN_GOOD_S = 24 * 3600
_MESSAGE = "Too many failed authentication attempts; retry later."


@dataclass(frozen=True)
class _Counter:
    key: str
    limit: int
    window: int
    retry_after: int


@dataclass(frozen=True)
class Gate:
    """One admitted attempt: the counters its failure adds to, and whether its credentials are known good."""

    counters: tuple[_Counter, ...]
    proof: str
    known: bool


def _counter(name: str, rate: str, now: float) -> _Counter:
    limit, window = parse_rate(rate)
    start = int(now // window) * window
    return _Counter(f"collab:authfail:{name}:{start}", limit, window, max(1, int(start + window - now)))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]  # bounded Redis keys whatever the header holds


async def admit(svc: Services, *, kind: str, address: str, subject: str | None, token: str) -> Gate:
    """RESOURCE_EXHAUSTED (with Retry-After) when the address or subject is over its failure limit and these
    credentials are not known good; else the gate to report the outcome to. With no subject (user tokens: every
    user of a key has their own) only the address counts."""
    now, settings = svc.clock(), svc.settings
    counters: tuple[_Counter, ...] = (_counter(f"addr:{_digest(address)}", settings.auth_failures_per_address, now), )
    if subject is not None:
        counters += (_counter(f"{kind}:{_digest(subject)}", settings.auth_failures_per_key, now), )
    # A keyed hash (the keyring's MAC): Redis never holds anything a token could be recovered from.
    proof = "collab:authok:" + svc.keyring.hash(f"{kind}\n{subject}\n{token}").hex()[:32]
    if svc.redis is None:
        return Gate(counters, proof, known=False)
    try:
        async with svc.redis.pipeline(transaction=False) as pipe:
            for counter in counters:
                pipe.get(counter.key)
            pipe.exists(proof)
            answers = await pipe.execute()
    except (RedisError, OSError) as exc:
        log.warning("failed-auth limit not checked, Redis unreachable: %s", exc)
        return Gate(counters, proof, known=False)
    counts, known = answers[:len(counters)], answers[len(counters)]
    if not known:
        over = [c for c, n in zip(counters, counts) if int(n or 0) >= c.limit]
        if over:
            retry_after = max(c.retry_after for c in over)
            raise ApiError("RESOURCE_EXHAUSTED", _MESSAGE, details={"retryAfterSeconds": retry_after},
                           headers={"Retry-After": str(retry_after)})
    return Gate(counters, proof, known=bool(known))


async def failed(svc: Services, gate: Gate) -> None:
    """Count a failed attempt against its address and subject; credentials that failed are no longer known good."""
    if svc.redis is None:
        return
    try:
        async with svc.redis.pipeline(transaction=False) as pipe:
            for counter in gate.counters:
                pipe.incr(counter.key)
                pipe.expire(counter.key, counter.window + 1)
            if gate.known:
                pipe.delete(gate.proof)  # a revoked token must not keep skipping the limit
            await pipe.execute()
    except (RedisError, OSError) as exc:
        log.warning("failed-auth attempt not counted, Redis unreachable: %s", exc)


async def succeeded(svc: Services, gate: Gate) -> None:
    """Remember credentials that authenticated (once a day at most), so failures of others do not lock them out."""
    if svc.redis is None or gate.known:
        return
    try:
        await svc.redis.set(gate.proof, 1, ex=KNOWN_GOOD_S)
    except (RedisError, OSError) as exc:
        log.warning("known-good credentials not recorded, Redis unreachable: %s", exc)
