"""Delivering messages: one tracked job per attempt (webhooks/tasks.py), signed per Standard Webhooks, retried on
a schedule.

A delivery row is the state: `queued` for the job of attempt n, `sending` while a job holds it, `pending`
until `due_at` (the sweep cron queues it then: no job is deferred for hours), `succeeded` or `failed`.
The job claims its attempt with a conditional update, so a job run twice sends once per attempt.
"""

import asyncio
import logging
import random
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
from redis.exceptions import RedisError

from collab.kit import safety
from collab.kit.jobs import Tx
from collab.kit.services import Services
from collab.webhooks import repository as repo

log = logging.getLogger("collab.webhooks")
# Seconds before attempt n + 1 after attempt n failed: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
SCHEDULE_S = (0, 5, 300, 1800, 7200, 18000, 36000, 36000)
MAX_ATTEMPTS = len(SCHEDULE_S)  # a message's tries at one endpoint, either service
JITTER = 0.1  # ± 10 % on every scheduled delay
RETRY_AFTER_MIN_S, RETRY_AFTER_MAX_S = 1, 86400
DISABLE_AFTER_MS = 5 * 86400 * 1000
EXCERPT_BYTES = 1024
LEASE_MARGIN_MS = 60_000
# A send whose job never finishes (its worker dies, or it raises every try) is re-queued at most this often.
MAX_LOST_LEASES = 3
LOST = "Given up: the attempt never finished (its worker was lost or it failed every try)."
NOT_QUEUED = "Given up: the delivery could not be queued (internal error; the details are in the service log)."


def retry_after_s(value: str | None, now_ms: int) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds from now, bounded; None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - now_ms / 1000
        except (TypeError, ValueError, IndexError):
            return None
    return min(max(seconds, RETRY_AFTER_MIN_S), RETRY_AFTER_MAX_S)


def next_delay_ms(attempt: int, *, retry_after: float | None = None) -> int:
    """The wait after failed attempt `attempt` (1-based): the schedule with jitter, or the server's Retry-After."""
    if retry_after is not None:
        return int(retry_after * 1000)
    return int(SCHEDULE_S[attempt] * 1000 * random.uniform(1 - JITTER, 1 + JITTER))


async def post(svc: Services, *, url: str, body: str, headers: dict[str, str]) -> dict[str, Any]:
    """One POST, redirects not followed; {status_code, response, error, retry_after_header}."""
    timeout = svc.settings.webhooks_timeout_s
    try:
        target = await safety.pin(url, allow_private=svc.settings.webhooks_allow_private_targets)
        # trust_env off: a proxy from the environment would connect somewhere we did not check.
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout) as client:
            async with asyncio.timeout(timeout):
                request = client.build_request("POST", target.url, content=body.encode(),
                                               headers={**headers, **target.headers}, extensions=target.extensions)
                response = await client.send(request, stream=True)
                try:
                    excerpt = b""
                    async for chunk in response.aiter_raw():
                        excerpt += chunk
                        if len(excerpt) >= EXCERPT_BYTES:
                            break
                finally:
                    await response.aclose()
    except safety.Refused as exc:
        return {"status_code": None, "response": None, "error": f"Refused: {exc}"}
    except (httpx.HTTPError, OSError, TimeoutError) as exc:
        kind = "Timed out" if isinstance(exc, (TimeoutError, httpx.TimeoutException)) else type(exc).__name__
        return {"status_code": None, "response": None, "error": f"{kind}: {exc}"[:500]}
    except (httpx.InvalidURL, ValueError) as exc:
        # A stored target the client library cannot use: a failed attempt on the schedule, not a crashing job.
        log.warning("webhook target refused by the HTTP client: %s", exc)
        return {"status_code": None, "response": None, "error": f"Refused: the URL cannot be used ({exc})"[:500]}
    return {
        "status_code": response.status_code, "response": excerpt[:EXCERPT_BYTES].decode("utf-8", "replace"),
        "error": None, "retry_after": response.headers.get("retry-after")
    }


def outcome(result: dict[str, Any], *, attempt: int, max_attempts: int, now: int) -> tuple[str, int | None, str | None]:
    """(delivery status, next due time, error) after an attempt."""
    code = result["status_code"]
    if code is not None and 200 <= code < 300:
        return "succeeded", None, None
    error = result["error"] or f"HTTP {code}"
    if code == 410 or attempt >= max_attempts:
        return "failed", None, error
    honoured = retry_after_s(result.get("retry_after"), now) if code in (429, 503) else None
    return "pending", now + next_delay_ms(attempt, retry_after=honoured), error


async def over_rate(svc: Services, *, api_key_id: str, endpoint_id: str, limit: int, now: int) -> bool:
    """Count a send in the endpoint's one-second window (Redis, so it holds across workers); fails open."""
    if svc.redis is None:
        return False
    key = f"collab:whrl:{api_key_id}:{endpoint_id}:{now // 1000}"
    try:
        async with svc.redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, 60)
            count, _ = await pipe.execute()
    except (RedisError, OSError) as exc:
        log.warning("webhook rate limit of %s not checked, Redis unreachable: %s", endpoint_id, exc)
        return False
    return count > limit


async def queue(tx: Tx, row: dict[str, Any], *, now: int) -> None:
    """Queue the next attempt of a delivery (its row locked by the caller)."""
    key = {k: row[k] for k in ("api_key_id", "message_id", "endpoint_id")}
    await repo.queue_delivery(tx.conn, **key, now=now)
    await tx.enqueue("deliver_webhook", **key, attempt=row["attempts"] + 1)
