"""What one key's insights cost the worker: the pattern search is a heap over capped terms, not a pass over every term
per pattern; the computation runs in a thread within a time budget, off the event loop and outside any transaction."""

import asyncio
import random
import string
import threading
import time

from collab.insights import compute, service
from collab.insights import repository as repo
from support.helpers import new_tenant, post

NOW = 1_790_000_000_000


def random_judgments(n=5000, vocabulary=50_000, seed=7):
    """`n` judgments whose reasoning is 2,000 characters of random words (a tenant chooses the words)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9))) for _ in range(vocabulary)]
    rows = []
    for i in range(n):
        text: list[str] = []
        while sum(len(w) + 1 for w in text) < 2000:
            text.append(rng.choice(words))
        rows.append({
            "id": f"j{i}", "organization_id": "o1", "decision": rng.choice(["approved", "rejected", "comment"]),
            "reasoning": " ".join(text)[:2000], "content_type": "copy", "reviewer_id": f"u{i % 40}", "name": None,
            "email": None, "created_at": NOW - i * 60_000
        })
    return rows


def patterns_of(client, t):
    response = post(client, "/v2/memory/patterns/get", {}, t.headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_patterns_of_5000_random_judgments_compute_within_a_generous_bound():
    judgments = random_judgments()
    started = time.thread_time()  # this thread's CPU: other processes' load does not count
    found = compute.patterns(judgments, stored={}, now=NOW)
    issues = {jid: p["label"].replace(" ", "-") for p in found for jid in p["ids"]}
    profiles = compute.profiles(judgments, issues=issues, now=NOW)
    compute.anomalies(judgments, now=NOW)
    took = time.thread_time() - started
    # About 8 s before (a pass over every distinct term per pattern); well under a second after, on one core.
    assert took < 5, f"the insights computation of 5,000 judgments took {took:.1f} s"
    assert len(found) == compute.MAX_PATTERNS and len(profiles) == 40
    assert all(len(compute.terms(j["reasoning"])) <= compute.MAX_TERMS_PER_JUDGMENT for j in judgments[:50])
    assert len({t for ts in compute.termsets(judgments).values() for t in ts}) <= compute.MAX_TERMS_PER_RUN


def test_the_job_leaves_the_event_loop_free_and_stores_what_it_found(client, live, monkeypatch):
    t = new_tenant(client)
    rows = random_judgments(2000)

    async def newest(conn, *, api_key_id, limit):
        return rows[:limit]

    monkeypatch.setattr(repo, "newest_judgments", newest)
    ticked = threading.Event()
    real = compute.patterns

    def patterns(*args, **kwargs):
        # Started: the loop must tick while this runs. Inline on the loop, nothing could set the event.
        ticked.clear()
        assert ticked.wait(30), "the event loop did not run while the insights computation ran"
        return real(*args, **kwargs)

    monkeypatch.setattr(compute, "patterns", patterns)

    async def run():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.005)
                ticks += 1
                ticked.set()

        task = asyncio.create_task(ticker())
        try:
            return await service.compute_key(live.svc, api_key_id=t.api_key), ticks
        finally:
            task.cancel()

    done, ticks = live.run(run(), timeout=120)
    assert done["patterns"] == compute.MAX_PATTERNS and ticks > 0
    assert len(patterns_of(client, t)) == compute.MAX_PATTERNS


def test_a_computation_past_its_budget_stops_and_keeps_the_stored_insights(client, live, monkeypatch, tune):
    t = new_tenant(client)
    rows = random_judgments(3000, vocabulary=5000)

    async def newest(conn, *, api_key_id, limit):
        return rows[:limit]

    monkeypatch.setattr(repo, "newest_judgments", newest)
    tune(insights_compute_budget_s=0.001)
    done = live.run(service.compute_key(live.svc, api_key_id=t.api_key), timeout=120)
    assert done["overrun"] is True
    assert patterns_of(client, t) == []
