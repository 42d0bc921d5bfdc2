"""REST load through the load balancer during a fault (support/faults_env's Load): what it writes, and how its
outcomes are judged."""

from typing import Any, Callable

import httpx

from support.faults_env import Load
from support.helpers import post


def org_writes(tenant, prefix: str) -> Callable[..., httpx.Response]:
    """A request for Load: organizations/add of a new id per call (`<prefix><thread>-<n>`)."""

    def write(client: httpx.Client, *, n: int, thread: int) -> httpx.Response:
        body = {"organizations": [{"organizationId": f"{prefix}{thread}-{n}"}]}
        return post(client, "/v2/organizations/add", body, tenant.headers)

    return write


def acknowledged(load: Load, prefix: str) -> set[str]:
    """The ids of the writes answered 200."""
    return {f"{prefix}{i}-{o['n']}" for i, outcomes in enumerate(load.outcomes) for o in outcomes if o["status"] == 200}


def ok(outcome: dict[str, Any]) -> bool:
    return outcome["status"] == 200


def answered(outcome: dict[str, Any]) -> bool:
    """200, or collab's own 503: UNAVAILABLE in its envelope with Retry-After (not the balancer's page, not a cut
    connection)."""
    if outcome["status"] == 200:
        return True
    error = outcome.get("body", {}).get("error") or {}
    return outcome["status"] == 503 and error.get("status") == "UNAVAILABLE" and "retry-after" in outcome["headers"]


def not_ok(outcome: dict[str, Any]) -> bool:
    return outcome["status"] != 200


def unexpected(outcomes: list[dict[str, Any]], allowed: set[int | None]) -> list[dict[str, Any]]:
    """The outcomes whose status is not allowed, shortened for a failure message."""
    return [{k: o.get(k) for k in ("n", "status", "error", "body")} for o in outcomes if o["status"] not in allowed]
