"""The noisy-neighbour harness (issue #49 item 3): one tenant fills a lane, another still gets answers.

Driven by the job registry and the lane table (kit/jobs), with the cases of support/fairness.py: a declared job or
a lane without a case fails `test_every_job_and_lane_has_a_fairness_case`, as the isolation matrix does for
routes. For every lane (and the API process's own callout, the permission provider), tenant A floods it with its
most expensive work, held open by peers that never answer: a model holding A's key; a black-hole page, webhook
endpoint, SMTP server and permission provider. Tenant B's interactive calls on every lane (a CRUD read, a socket
edit, search, Ask AI, memory/ask, extraction) must each answer within the bound of its lane. A planted offender
(a lane whose per-workspace share is the whole lane) proves the harness catches one.
"""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import httpx
import pytest

from collab.kit.jobs import LANES, load
from collab.notifications.tasks import email_sweep
from collab.testing import fake_models
from support import fairness
from support.factories import create_agent, create_endpoint, enable_webhooks, notify, wait_for
from support.helpers import Tenant, add_organization, new_tenant, post, result, settle_jobs
from support.realtime_support import YClient, token_for, url

pytestmark = pytest.mark.usefixtures("embedding_model", "model_client")  # B searches; the lanes call models

LANE_SLOTS = {
    "search": "worker_search_max_jobs", "ai": "worker_ai_max_jobs", "extraction": "worker_extraction_max_jobs",
    "bulk": "worker_max_jobs"
}


def test_every_job_and_lane_has_a_fairness_case():
    # collab's own jobs: a test may declare one of its own (tests/kit/test_jobs.py's crash drill)
    jobs = {name: spec for name, spec in load().items() if spec.run.__module__.startswith("collab.")}
    assert set(jobs) - set(fairness.CASES) == set(), "declare these jobs' fairness cases in support/fairness.py"
    assert set(fairness.CASES) - set(jobs) == set(), "these cases name no declared job"
    for name, case in fairness.CASES.items():
        assert case.lane == jobs[name].lane.name, f"{name} runs on {jobs[name].lane.name}, its case says {case.lane}"
    # Every lane has a flood; so do the API process's own callouts and a workspace's own model server (both lanes).
    assert set(LANES) == set(LANE_SLOTS) == set(FLOODS) - {"api", "self-hosted"} == set(
        fairness.LANE_BOUNDS_S) - {"api"}


def lane_overdrawn(settings) -> dict[str, tuple[int, int]]:
    """The interactive lanes whose per-workspace shares add up to more than half their slots: {lane: (shares,
    slots)}; every job on an interactive lane must have a share."""
    over = {}
    for lane in fairness.INTERACTIVE_LANES:
        buckets: dict[str, int] = {}
        for name, case in fairness.CASES.items():
            if case.lane == lane:
                assert case.share is not None and case.bucket, f"{name} is on {lane} without a per-workspace share"
                buckets[case.bucket] = case.share(settings)
        slots = getattr(settings, LANE_SLOTS[lane])
        if 2 * sum(buckets.values()) > slots:
            over[lane] = (sum(buckets.values()), slots)
    return over


def test_no_workspace_can_hold_more_than_half_a_lane(live):
    assert lane_overdrawn(live.settings) == {}


# --- tenant B: one interactive call on every lane, each timed ------------------------------------------------------


@dataclass
class Bystander:
    tenant: Tenant
    token: str


def bystander(client) -> Bystander:
    b = new_tenant(client)
    keys = [{"provider": "openai", "customerApiKey": "sk-openai-bystander"}]
    result(post(client, "/v2/workspace/apikeyconfig/update", {"aiModelApiKey": keys}, b.headers))
    add_organization(client, b, "org", "doc")
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "org", "documentId": "doc", "editorId": "e1", "type": "text", "data": "Hi"}, b.headers))
    return Bystander(b, token_for(client, b, "u1", "org", "doc"))


async def socket_edit(live, b: Bystander) -> None:
    c = await YClient.open(url(live, "org", "doc", "e1", b.token))
    await c.edit(lambda text: text.insert(0, "B was here. "))
    await c.handled()
    await c.close()


def probes(live, b: Bystander) -> dict[str, tuple[str, Callable[[httpx.Client], None]]]:
    """B's calls: {name: (the lane whose bound it answers within, the call)}."""
    h = b.tenant.headers

    def ok(path: str, data: dict) -> Callable[[httpx.Client], None]:

        def call(c: httpx.Client) -> None:
            answer = c.post(path, json={"data": data}, headers=h)
            assert answer.status_code == 200, f"{path}: {answer.status_code} {answer.text[:300]}"

        return call

    return {
        "crud read": ("api", ok("/v2/organizations/get", {"organizationIds": ["org"]})),
        "socket edit": ("api", lambda c: asyncio.run(socket_edit(live, b))),
        "memory/search": ("search", ok("/v2/memory/search", {"query": "tax on prices"})),
        "ask ai": ("ai", ok("/v2/rewriter/ask-ai", {"model": "gpt-4o", "prompt": "Formal.", "text": "ship it"})),
        "memory/ask": ("ai", ok("/v2/memory/ask", {"question": "Do prices include tax?"})),
        "extraction": ("extraction",
                       ok("/v2/agents/extract", {"fileBase64": fairness.csv_checklist(), "mimeType": "text/csv"})),
    }


def run_probes(live, b: Bystander, calls: dict | None = None) -> dict[str, tuple[float, float]]:
    """Each of B's calls (`calls`, else all), one after another: {name: (seconds taken, its bound)}; a call past
    its bound is cut there (it counts as the bound plus one)."""
    taken = {}
    for name, (lane, call) in (calls or probes(live, b)).items():
        bound = fairness.LANE_BOUNDS_S[lane]
        started = time.monotonic()
        with httpx.Client(base_url=live.url, timeout=bound + 1) as c:
            try:
                call(c)
                taken[name] = (time.monotonic() - started, bound)
            except (httpx.TimeoutException, TimeoutError):
                taken[name] = (bound + 1, bound)
    return taken


def slow(taken: dict[str, tuple[float, float]]) -> dict[str, float]:
    return {name: round(s, 2) for name, (s, bound) in taken.items() if s > bound}


# --- tenant A: a flood per lane -----------------------------------------------------------------------------------


@dataclass
class Noisy:
    """Tenant A, its calls in flight (threads), and the peers that hold them."""

    live: object
    llm: object
    hole: fairness.BlackHole
    pool: ThreadPoolExecutor
    tenant: Tenant | None = None
    key: str = ""
    # Whether A's flood still holds what it took (checked after B's calls: B was answered while A held its share).
    holding: Callable[[], bool] = lambda: True

    def with_held_key(self, client) -> Tenant:
        a = new_tenant(client)
        self.key = f"sk-openai-noisy-{a.api_key[-8:]}"
        self.llm.hold(self.key)  # every model call with A's key waits, unanswered
        keys = [{"provider": "openai", "customerApiKey": self.key}]
        result(post(client, "/v2/workspace/apikeyconfig/update", {"aiModelApiKey": keys}, a.headers))
        self.tenant = a
        return a

    def in_use(self, bucket: str) -> int:
        """How many of a workspace's slots in `bucket` are held now (kit/ratelimit.concurrency's set)."""
        return self.live.run(self.live.svc.redis.zcard(f"collab:conc:{bucket}"))

    def fire(self, path: str, data: dict, times: int) -> None:
        """`times` calls of A at once, each in its own thread (they wait on the held peers)."""
        assert self.tenant is not None
        headers, base = self.tenant.headers, self.live.url

        def one():
            with httpx.Client(base_url=base, timeout=60) as c:
                return c.post(path, json={"data": data}, headers=headers).status_code

        for _ in range(times):
            self.pool.submit(one)


def flood_ai(noisy: Noisy, client) -> None:
    """Agent executions (a page that never answers, then a model that never answers) and Ask AI, past the limit."""
    a = noisy.with_held_key(client)
    share = noisy.live.settings.ai_max_concurrency
    agent = create_agent(client, a, instructions="Check prices state tax.",
                         contextGathering={"strategies": ["web-page-text"]})
    for i in range(share + 2):
        add_organization(client, a, f"org{i}", "doc")
        post(client, "/v2/agents/execution/run",
             {"agentId": agent, "url": noisy.hole.url + f"/page{i}", "organizationId": f"org{i}", "documentId": "doc"},
             a.headers)
    noisy.fire("/v2/rewriter/ask-ai", {"model": "gpt-4o", "prompt": "Formal.", "text": "ship it"}, 2 * share)
    # A's share is in use, by calls the peers hold (not merely running).
    noisy.holding = lambda: (noisy.in_use(f"ai:{a.workspace['id']}") >= share and len(noisy.hole.accepted) + noisy.llm.
                             held >= share)
    wait_for(noisy.holding, f"A's {share} ai slots held by the peers")


def flood_self_hosted(noisy: Noisy, client) -> None:
    """Ask AI and extractions on the workspace's own model server (ADR 0061), which accepts and never answers,
    past the ai and extraction shares."""
    a = noisy.tenant = new_tenant(client)
    entry = {"provider": "ollama", "baseUrl": noisy.hole.url, "model": "qwen2.5:7b"}
    result(post(client, "/v2/workspace/apikeyconfig/update", {"aiModelApiKey": [entry]}, a.headers))
    ai, extract = noisy.live.settings.ai_max_concurrency, noisy.live.settings.extraction_max_concurrency_per_workspace
    noisy.fire("/v2/rewriter/ask-ai", {"model": "ollama/qwen2.5:7b", "prompt": "Formal.", "text": "ship it"}, 2 * ai)
    noisy.fire("/v2/agents/extract",
               {"fileBase64": fairness.csv_checklist(), "mimeType": "text/csv", "provider": "ollama"}, 2 * extract)
    noisy.holding = lambda: (noisy.in_use(f"ai:{a.workspace['id']}") >= ai and noisy.in_use(
        f"extract:{a.workspace['id']}") >= extract and len(noisy.hole.accepted) >= ai + extract)
    wait_for(noisy.holding, f"A's {ai} ai and {extract} extraction slots held by its own model server")


def flood_extraction(noisy: Noisy, client) -> None:
    """Extractions whose model calls never answer, past the limit, then knowledge ingests queued behind them (they
    wait for A's slots off the lane)."""
    a = noisy.with_held_key(client)
    share = noisy.live.settings.extraction_max_concurrency_per_workspace
    noisy.fire("/v2/agents/extract", {"fileBase64": fairness.csv_checklist(), "mimeType": "text/csv"}, 2 * share)
    noisy.holding = lambda: noisy.in_use(f"extract:{a.workspace['id']}") >= share and noisy.llm.held >= share
    wait_for(noisy.holding, f"A's {share} extraction slots held at the model")
    for i in range(2 * noisy.live.settings.worker_extraction_max_jobs):
        post(client, "/v2/memory/knowledge/ingest", fairness.knowledge_file(i), a.headers)


def flood_search(noisy: Noisy, client) -> None:
    """Searches, the lane's slots (twice A's share) at once, twice over while B probes (A's clients are threads of
    the service's own process here, so more of them measure the interpreter lock, not the lane)."""
    a = noisy.tenant = new_tenant(client)
    add_organization(client, a, "org", "doc")
    burst = noisy.live.settings.worker_search_max_jobs
    for _ in range(2):
        noisy.fire("/v2/memory/search", {"query": "which hero image did reviewers approve"}, burst)


def flood_bulk(noisy: Noisy, client) -> None:
    """Webhook deliveries and e-mails to an endpoint and an SMTP server that never answer, past the lane's slots."""
    a = noisy.tenant = new_tenant(client)
    enable_webhooks(client, a)
    create_endpoint(client, a, noisy.hole.url + "/hook")
    add_organization(client, a, "o1", "d1")
    users = [{"userId": f"u{i}", "email": f"u{i}@example.com"} for i in range(noisy.live.settings.worker_max_jobs)]
    result(post(client, "/v2/users/add", {"organizationId": "o1", "users": users}, a.headers))
    smtp = {
        "type": "smtp", "smtpHost": "127.0.0.1", "smtpPort": noisy.hole.port, "smtpSecurity": "none",
        "fromEmail": "bot@example.com"
    }
    result(
        post(client, "/v2/workspace/emailconfig/update", {"useEmailService": True, "emailServiceConfig": smtp},
             a.headers))
    for i in range(2 * noisy.live.settings.worker_max_jobs):
        notify(client, a, notification_id=f"n{i}", notifyUsers=[{"userId": u["userId"]} for u in users])
    noisy.live.run(email_sweep({"svc": noisy.live.svc}))  # the e-mails due now are sent (to the black hole)
    wait_for(lambda: len(noisy.hole.accepted) >= noisy.live.settings.worker_max_jobs // 2,
             "A's deliveries and e-mails connected to the black hole")


def flood_api(noisy: Noisy, client) -> None:
    """Access reads that ask a permission provider which never answers, three times the pool's connections at
    once (the API process's own callout: it must hold no pooled connection while it waits)."""
    a = noisy.tenant = new_tenant(client)
    add_organization(client, a, "o1", "d1")
    config = {"permissionProviderUrl": noisy.hole.url + "/check"}
    result(
        post(client, "/v2/workspace/permissionproviderconfig/update",
             {"usePermissionProvider": True, "permissionProviderConfig": config}, a.headers))
    body = {"organizationId": "o1", "userIds": [f"u{i}" for i in range(5)], "documentIds": ["d1"]}
    noisy.fire("/v2/auth/permissions/get", body, 3 * noisy.live.settings.db_pool_max)
    wait_for(lambda: len(noisy.hole.accepted) >= noisy.live.settings.permission_provider_in_flight,
             "A's provider calls connected to the black hole")


FLOODS: dict[str, Callable[[Noisy, httpx.Client], None]] = {
    "api": flood_api, "ai": flood_ai, "extraction": flood_extraction, "search": flood_search, "bulk": flood_bulk,
    "self-hosted": flood_self_hosted
}


@pytest.fixture
def noisy(live, llm, tune):
    # A's held calls must outlast B's probes: no model call of A's gives up within the test.
    tune(llm_call_timeout_s=30, ask_ai_timeout_s=30, webhooks_timeout_s=30, agent_execution_page_timeout_s=30,
         email_batch_window_s=0, email_timeout_s=30)
    llm.responder = fake_models.answer  # B's extraction gets agents; A's calls are held whatever the answer
    hole = fairness.BlackHole()
    pool = ThreadPoolExecutor(max_workers=24)  # A's clients share this process's interpreter with the service
    n = Noisy(live, llm, hole, pool)
    yield n
    llm.release_held()
    hole.close()
    pool.shutdown(wait=True, cancel_futures=True)
    if n.tenant is not None:
        settle_jobs(live, n.tenant)


@pytest.mark.parametrize("lane", sorted(FLOODS))
def test_a_flooded_lane_costs_another_tenant_nothing(client, live, noisy, lane):
    b = bystander(client)
    FLOODS[lane](noisy, client)
    taken = run_probes(live, b)
    assert noisy.holding(), f"A's flood of {lane} ended before B's calls did: the case proves nothing"
    print(f"\nfairness {lane}: " + ", ".join(f"{name} {s:.2f}/{bound:.0f} s" for name, (s, bound) in taken.items()))
    assert slow(taken) == {}, f"B's calls past their bounds while A floods {lane}: {taken}"


def test_the_harness_catches_a_lane_one_tenant_fills(client, live, noisy, tune):
    """The planted offender: the ai share is the whole lane, so A's held calls take every slot and B waits: its Ask
    AI is cut at its bound, or answered only once A's held calls gave up (their jobs' timeout), never while held."""
    tune(ai_max_concurrency=live.settings.worker_ai_max_jobs)
    assert "ai" in lane_overdrawn(live.settings)
    b = bystander(client)
    noisy.with_held_key(client)
    slots = live.settings.worker_ai_max_jobs
    noisy.fire("/v2/rewriter/ask-ai", {"model": "gpt-4o", "prompt": "Formal.", "text": "ship it"}, slots)
    noisy.holding = lambda: noisy.llm.held >= slots
    wait_for(noisy.holding, "every ai slot held by A")
    ask = {"ask ai": probes(live, b)["ask ai"]}
    taken = run_probes(live, b, ask)
    assert "ask ai" in slow(taken) or not noisy.holding(), taken
