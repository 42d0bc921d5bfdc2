"""REST load through the load balancer during a fault: every outcome kept (status, body, when it ended).

As support/faults_env.Load, except that an answer is recorded by its status whatever its body (HAProxy's own
503 page is a 503, not a failure to read JSON), and only a cut connection or a timeout counts as no answer.
"""

import threading
import time
from typing import Any, Callable

import httpx

from support.helpers import post


class Load:
    """Threads that keep calling the API; `outcomes[thread]` lists {n, status, body, headers, ended}."""

    def __init__(self, url: str, threads: int, request: Callable[[httpx.Client, int, int], httpx.Response], *,
                 timeout: float = 60):
        self.url, self.request, self.timeout = url, request, timeout
        self.stop = threading.Event()
        self.outcomes: list[list[dict[str, Any]]] = [[] for _ in range(threads)]
        self.threads = [threading.Thread(target=self._run, args=(i, ), daemon=True) for i in range(threads)]

    def _run(self, index: int) -> None:
        with httpx.Client(base_url=self.url, timeout=self.timeout) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    response = self.request(client, n=n, thread=index)
                    try:
                        body = response.json()
                    except ValueError:
                        body = {"text": response.text[:200]}  # not the API's envelope: the balancer's own page
                    outcome = {"n": n, "status": response.status_code, "body": body, "headers": dict(response.headers)}
                except httpx.HTTPError as exc:  # no answer: a cut connection or a timeout
                    outcome = {"n": n, "status": None, "error": repr(exc)}
                outcome["ended"] = time.monotonic()
                self.outcomes[index].append(outcome)

    def start(self) -> "Load":
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> list[dict[str, Any]]:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        return [o for outcomes in self.outcomes for o in outcomes]

    def count(self, predicate: Callable[[dict[str, Any]], bool], *, since: float = 0.0) -> list[int]:
        """Per thread, how many outcomes that ended after `since` match."""
        return [sum(1 for o in list(outcomes) if o["ended"] >= since and predicate(o)) for outcomes in self.outcomes]


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


def not_ok(outcome: dict[str, Any]) -> bool:
    return outcome["status"] != 200


def unexpected(outcomes: list[dict[str, Any]], allowed: set[int | None]) -> list[dict[str, Any]]:
    """The outcomes whose status is not allowed, shortened for a failure message."""
    return [{k: o.get(k) for k in ("n", "status", "error", "body")} for o in outcomes if o["status"] not in allowed]
