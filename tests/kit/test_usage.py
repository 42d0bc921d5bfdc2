"""Usage counters (kit/usage.py): what a workspace did shows in its overview, and only there."""

import asyncio
import base64
import time
from types import SimpleNamespace

import pytest

from collab.kit import usage
from collab.kit.errors import ApiError
from collab.kit.http import _template
from collab.testing import fake_models
from support.factories import add_activities, create_endpoint, enable_webhooks, judged, notify, settle
from support.helpers import enable_activities, error, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

MINUTE = 60_000
KEY = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-usage-key"}]}
CSV = (b"Category,Check\n"
       b"Claims,Every price claim states whether tax is included\n"
       b"Privacy,Forms link to the privacy policy\n")


def flush(live):
    """Add the service's buffered counters to Postgres now, as its flusher would."""
    return live.run(usage.flush(live.svc))


def overview(live, t, *, since_ms, until_ms, bucket_s=300):
    return live.run(
        usage.overview(live.svc, workspace_id=t.workspace["id"], since_ms=since_ms, until_ms=until_ms,
                       bucket_s=bucket_s))


def usage_template(path, root, own):
    return _template({"path": path, "root_path": root}, own)


def calls(view):
    return {(c["operation"], c["status"]): c["count"] for c in view["apiCalls"]}


def test_a_workspaces_activity_shows_in_its_overview_only(client, live, llm, receiver):
    llm.responder = fake_models.answer
    since = live.svc.now_ms() // MINUTE * MINUTE
    t, other = new_tenant(client), new_tenant(client)
    result(post(client, "/v2/workspace/apikeyconfig/update", KEY, t.headers))
    enable_activities(client, t)
    enable_webhooks(client, t)
    create_endpoint(client, t, receiver.url("/usage"), filterTypes=["notification.add"])

    # Two judgments, a search, an Ask AI call, an extraction, two notifications (one delivery fails).
    result(add_activities(client, t, judged("r1", "The price claim hides the tax."), judged("r2", "Alt text missing.")))
    settle_jobs(live, t)
    found = post(client, "/v2/memory/search", {"query": "price and tax"}, t.headers)
    assert found.status_code == 200 and found.json()["result"]["results"], found.text
    asked = post(client, "/v2/rewriter/ask-ai", {"model": "gpt-4o", "prompt": "Formal.", "text": "hey"}, t.headers)
    assert asked.status_code == 200 and asked.json()["result"]["success"] is True, asked.text
    result(
        post(client, "/v2/agents/extract",
             {"fileBase64": base64.b64encode(CSV).decode(), "mimeType": "text/csv", "provider": "openai"}, t.headers))
    notify(client, t, "n1")
    settle(live, t)
    receiver.reply(410)  # a failed attempt that is not retried (Gone), so the counts hold still
    notify(client, t, "n2")
    settle(live, t)
    error(post(client, "/v2/organizations/get", {"organizationIds": "not a list"}, t.headers), "INVALID_ARGUMENT")
    # The other tenant's calls, and calls that fail authentication, belong to no one's overview but their own.
    post(client, "/v2/organizations/get", {"organizationIds": ["o1"]}, other.headers)
    bad = {"x-service-api-key": t.api_key, "x-service-auth-token": "wrong"}
    error(post(client, "/v2/organizations/get", {"organizationIds": ["o1"]}, bad), "PERMISSION_DENIED")

    flush(live)
    until = live.svc.now_ms() + MINUTE
    view = overview(live, t, since_ms=since, until_ms=until)
    totals = view["totals"]
    assert {k: totals[k]
            for k in totals if k != "api_calls"} == {
                "judgments_added": 2, "searches": 1, "extractions": 1, "ask_ai": 1, "webhooks_succeeded": 1,
                "webhooks_failed": 1, "notifications_sent": 2
            }
    by_call = calls(view)
    assert by_call[("/v2/memory/search", 200)] == 1
    assert by_call[("/v2/rewriter/ask-ai", 200)] == 1
    assert by_call[("/v2/organizations/get", 400)] == 1  # counted by route template and status
    assert by_call[("/v1/notifications/add", 200)] == 2
    assert ("/v2/organizations/get", 200) not in by_call and ("/v2/organizations/get", 403) not in by_call
    assert totals["api_calls"] == sum(by_call.values())
    assert [c["count"] for c in view["apiCalls"]] == sorted((c["count"] for c in view["apiCalls"]), reverse=True)
    assert view["askAiByProvider"] == [{"provider": "openai", "count": 1}]
    p50, p95 = view["searchLatencyMs"]["p50"], view["searchLatencyMs"]["p95"]
    assert 0 < p50 <= p95 < 30_000
    # Every bucket is there, zeros included, and the series add up to the totals.
    for metric, points in view["series"].items():
        assert [p["t"] for p in points] == list(range(since, until, 300_000))
        assert sum(p["count"] for p in points) == totals[metric]

    theirs = overview(live, other, since_ms=since, until_ms=until)
    assert calls(theirs) == {("/v2/organizations/get", 200): 1, ("/v2/workspace/authtokens/get", 200): 1}
    assert all(n == 0 for k, n in theirs["totals"].items() if k != "api_calls")
    assert theirs["searchLatencyMs"] == {"p50": None, "p95": None} and theirs["askAiByProvider"] == []


def test_workspace_auth_calls_count_for_their_workspace(client, live):
    since = live.svc.now_ms() // MINUTE * MINUTE
    t = new_tenant(client)  # lists the key's auth tokens with the workspace token
    flush(live)
    view = overview(live, t, since_ms=since, until_ms=live.svc.now_ms() + MINUTE)
    assert calls(view) == {("/v2/workspace/authtokens/get", 200): 1}
    assert usage_template("/api/v1/things/t1", "/api", "/things/{thingId}") == "/v1/things/{thingId}"
    assert usage_template("/v2/memory/search", "", "/memory/search") == "/v2/memory/search"


def process(live, clock):
    """Another process's view of the service: the same database, a buffer of its own, a clock the test sets."""
    return SimpleNamespace(pool=live.svc.pool, settings=live.svc.settings, clock=lambda: clock["now"],
                           usage=usage.Usage())


def test_two_processes_flushes_add_up(client, live):
    t = new_tenant(client)
    ws = t.workspace["id"]
    clock = {"now": 1_800_000_000.0}
    since = int(clock["now"] * 1000) // MINUTE * MINUTE
    first, second = process(live, clock), process(live, clock)
    for svc, latencies in ((first, [3.0, 5.0]), (second, [40.0, 4000.0])):
        for ms in latencies:
            usage.observe(svc, "searches", ms, workspace_id=ws)
        usage.count(svc, "judgments_added", api_key_id=t.api_key, n=5)  # stored under the key's workspace
        usage.count(svc, "ask_ai", workspace_id=ws, label="anthropic")
    assert live.run(usage.flush(first)) == 3
    assert live.run(usage.flush(second)) == 3
    assert live.run(usage.flush(second)) == 0  # a flushed buffer is empty: nothing is added twice
    view = overview(live, t, since_ms=since, until_ms=since + MINUTE, bucket_s=60)
    assert view["totals"]["searches"] == 4 and view["totals"]["judgments_added"] == 10
    assert view["askAiByProvider"] == [{"provider": "anthropic", "count": 2}]
    # Four samples 3, 5, 40, 4000 ms: p50 lies between the buckets of 5 ms and 40 ms, p95 in the one of 4000 ms.
    p50, p95 = view["searchLatencyMs"]["p50"], view["searchLatencyMs"]["p95"]
    low, _ = usage.bounds(usage.bucket_of(5.0))
    _, high = usage.bounds(usage.bucket_of(40.0))
    assert low <= p50 <= high
    low, high = usage.bounds(usage.bucket_of(4000.0))
    assert low <= p95 <= high


def test_stopping_a_process_flushes_what_is_left(client, live):
    t = new_tenant(client)
    clock = {"now": 1_800_000_000.0}
    svc = process(live, clock)

    async def run_and_stop():
        usage.start_flusher(svc)  # ticks every COLLAB_USAGE_FLUSH_S (10 s): stopped before its first tick
        usage.count(svc, "notifications_sent", workspace_id=t.workspace["id"], n=3)
        await usage.stop_flusher(svc)

    live.run(run_and_stop())
    assert svc.usage.task is None and svc.usage.entries == {}
    since = int(clock["now"] * 1000) // MINUTE * MINUTE
    assert overview(live, t, since_ms=since, until_ms=since + MINUTE, bucket_s=60)["totals"]["notifications_sent"] == 3


def test_series_buckets_follow_the_clock_with_zeros(client, live):
    t = new_tenant(client)
    clock = {"now": 1_800_000_000.0}
    start = int(clock["now"]) // 3600 * 3600 * 1000
    svc = process(live, clock)
    for minute, n in ((0, 1), (4, 2), (59, 3), (61, 100)):  # the last one is past the window
        clock["now"] = (start + minute * MINUTE) / 1000 + 30
        usage.count(svc, "extractions", workspace_id=t.workspace["id"], n=n)
    live.run(usage.flush(svc))
    view = overview(live, t, since_ms=start, until_ms=start + 3600_000, bucket_s=900)
    assert view["series"]["extractions"] == [{"t": start, "count": 3}, {"t": start + 900_000, "count": 0},
                                             {"t": start + 1800_000, "count": 0}, {"t": start + 2700_000, "count": 3}]
    assert view["totals"]["extractions"] == 6 and view["series"]["api_calls"][1] == {"t": start + 900_000, "count": 0}


def test_old_rows_are_deleted_by_the_retention_cron(client, live, db):
    t = new_tenant(client)
    now = time.time()
    clock = {"now": now}
    svc = process(live, clock)
    for days in (9, 7):
        clock["now"] = now - days * 86_400
        usage.count(svc, "searches", workspace_id=t.workspace["id"])
    live.run(usage.flush(svc))
    clock["now"] = now
    assert live.run(usage.drop_old({"svc": svc})) >= 1
    left = db.execute("select minute_ms from usage_minutes where workspace_id = %s", (t.workspace["id"], )).fetchall()
    assert [r["minute_ms"] for r in left] == [int(now - 7 * 86_400) // 60 * MINUTE]


def test_counts_stay_buffered_when_postgres_is_unreachable():

    class Down:

        def connection(self):
            raise OSError("connection refused")

    svc = SimpleNamespace(pool=Down(), clock=lambda: 1_800_000_000.0, usage=usage.Usage())
    usage.count(svc, "searches", workspace_id="w1", n=2)
    with pytest.raises(OSError):
        asyncio.run(usage.flush(svc))
    assert [n for n, _ in svc.usage.entries.values()] == [2]  # the next flush adds them


@pytest.mark.parametrize(
    "since, until, bucket_s, path",
    [
        (0, 3600_000, 30, "bucketSeconds"),
        (3600_000, 0, 60, "until"),
        (0, 7 * 86_400_000, 60, "bucketSeconds")  # 10,080 buckets
    ])
def test_bad_windows_are_invalid_argument(live, since, until, bucket_s, path):
    with pytest.raises(ApiError) as caught:
        live.run(usage.overview(live.svc, workspace_id="w", since_ms=since, until_ms=until, bucket_s=bucket_s))
    assert caught.value.code == "INVALID_ARGUMENT"
    assert caught.value.details["issues"][0]["path"] == [path]


def test_percentiles_stay_within_a_bucket_of_the_truth():
    samples = [1.5 * 1.07**i for i in range(120)]  # 1.5 ms ... ~5.5 s
    counts = [0] * usage.BUCKETS
    for ms in samples:
        counts[usage.bucket_of(ms)] += 1
    for p in (0.5, 0.95):
        true = sorted(samples)[int(p * len(samples)) - 1]
        assert abs(usage.percentile(counts, p) / true - 1) < 2**0.25 - 1 + 0.01
    assert usage.percentile([0] * usage.BUCKETS, 0.5) is None
    assert usage.bucket_of(0.2) == 0 and usage.bucket_of(10**6) == usage.BUCKETS - 1
