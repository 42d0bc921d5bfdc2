"""Fairness in the shared worker: extraction limits per workspace, the platform-key quota, retention of uploaded
bytes, concurrency slots that expire, and failure text that keeps internal detail away from tenants."""

import base64
import threading
import uuid

import psycopg
import pytest

from collab.extraction.tasks import drop_old_content
from collab.kit.errors import ApiError
from collab.kit.jobs import GENERIC_FAILURE, job, transaction
from collab.kit.ratelimit import concurrency
from collab.llm.quota import drop_past_days
from collab.testing import fake_models
from support.factories import release, wait_for, with_own_key
from support.helpers import error, new_tenant, post, result

EXTRACT = "/v2/agents/extract"
CHECKS = (b"Category,Check\n"
          b"Claims,Every price claim states whether tax is included\n"
          b"Privacy,Forms link to the privacy policy\n")


@pytest.fixture
def model(llm):
    llm.responder = fake_models.answer
    return llm


def extract(client, t, content: bytes = CHECKS):
    return post(client, EXTRACT, {"fileBase64": base64.b64encode(content).decode(), "mimeType": "text/csv"}, t.headers)


def test_extraction_rate_limit_per_workspace(client, model, clock, tune):
    tune(rate_limit_extraction="2/minute")
    t, other = with_own_key(client), with_own_key(client)
    result(extract(client, t))
    result(extract(client, t))
    err = error(extract(client, t), "RESOURCE_EXHAUSTED")
    assert err["details"]["retryAfterSeconds"] >= 1
    response = extract(client, t)
    assert response.status_code == 429 and int(response.headers["Retry-After"]) >= 1
    result(extract(client, other))  # another workspace is not affected
    clock["now"] += 60
    result(extract(client, t))  # the next window


def test_extraction_concurrency_per_workspace(client, model, tune):
    tune(extraction_max_concurrency_per_workspace=1)
    t, other = with_own_key(client), with_own_key(client)
    model.script("openai", {"hang": True})
    first: dict = {}
    runner = threading.Thread(target=lambda: first.setdefault("response", extract(client, t)))
    runner.start()
    try:
        wait_for(lambda: len(model.of("openai")) == 1, "the first extraction to reach the model")
        response = extract(client, t)
        err = error(response, "RESOURCE_EXHAUSTED")
        assert "in flight" in err["message"] and response.headers["Retry-After"] == "1"
        result(extract(client, other))  # another workspace has its own slot
    finally:
        release(model)
        runner.join(60)
    result(first["response"])
    result(extract(client, t))  # the slot is free again


def test_platform_key_quota_per_workspace(client, model, clock, tune, db):
    tune(openai_api_key="platform-openai-key", platform_key_daily_calls=1)
    t = new_tenant(client)  # no key of its own: the platform's is used
    result(extract(client, t))
    response = extract(client, t)
    err = error(response, "RESOURCE_EXHAUSTED")
    assert "quota" in err["message"] and int(response.headers["Retry-After"]) == err["details"]["retryAfterSeconds"]
    calls = len(model.of("openai"))
    assert calls == 1  # the refused extraction never reached the provider
    workspace = t.workspace["id"]
    row = db.execute("select calls, tokens from platform_key_usage where workspace_id = %s", (workspace, )).fetchone()
    assert row["calls"] == 1 and row["tokens"] > 0
    # The workspace's own key is never counted nor limited.
    own = with_own_key(client)
    for _ in range(2):
        result(extract(client, own))
    assert (db.execute("select count(*) as n from platform_key_usage where workspace_id = %s",
                       (own.workspace["id"], )).fetchone()["n"] == 0)
    # The next UTC day has a fresh quota; 0 turns it off.
    clock["now"] += 86_400
    result(extract(client, t))
    error(extract(client, t), "RESOURCE_EXHAUSTED")
    tune(platform_key_daily_calls=0)
    result(extract(client, t))


def test_platform_key_token_quota(client, model, tune):
    tune(openai_api_key="platform-openai-key", platform_key_daily_tokens=1)
    t = new_tenant(client)
    result(extract(client, t))  # checked before work starts: this one spends the day's tokens
    error(extract(client, t), "RESOURCE_EXHAUSTED")


def test_platform_key_quota_stops_a_job_midway(client, model, tune, db):
    """A large file would make many model calls: once the day's quota is spent the job stops before its next call."""
    tune(openai_api_key="platform-openai-key", platform_key_daily_calls=2, extraction_chunk_tasks=1,
         extraction_concurrency=1)
    t = new_tenant(client)
    rows = "".join(f"Claims,Check number {i} states whether tax is included\n" for i in range(6))
    response = extract(client, t, ("Category,Check\n" + rows).encode())
    err = error(response, "RESOURCE_EXHAUSTED")
    assert "quota" in err["message"] and int(response.headers["Retry-After"]) >= 1
    assert len(model.of("openai")) == 2  # six chunks, but only the quota's two calls reached the provider
    row = db.execute("select calls from platform_key_usage where workspace_id = %s", (t.workspace["id"], )).fetchone()
    assert row["calls"] == 2
    [source] = db.execute("select status, error from knowledge_sources where api_key_id = %s", (t.api_key, )).fetchall()
    assert source["status"] == "failed" and source["error"].startswith("RESOURCE_EXHAUSTED")


def test_failed_platform_key_calls_count_as_calls(client, model, tune, db):
    tune(openai_api_key="platform-openai-key", platform_key_daily_calls=1)
    t = new_tenant(client)
    model.script("openai", {"status": 400})  # the provider refused it, but the call was made
    assert extract(client, t).status_code != 200
    row = db.execute("select calls, tokens from platform_key_usage where workspace_id = %s",
                     (t.workspace["id"], )).fetchone()
    assert row["calls"] == 1 and row["tokens"] == 0
    error(extract(client, t), "RESOURCE_EXHAUSTED")


def test_platform_key_counters_of_past_days_are_deleted(live, clock, db):
    workspace = f"ws_{uuid.uuid4().hex[:12]}"
    today = db.execute("select (to_timestamp(%s) at time zone 'utc')::date as d", (clock["now"], )).fetchone()["d"]
    for days_ago in (0, 1, 2, 40):
        db.execute("insert into platform_key_usage (workspace_id, day, calls, tokens) values (%s, %s::date - %s, 1, 1)",
                   (workspace, today, days_ago))
    assert live.run(drop_past_days({"svc": live.svc})) >= 2
    kept = db.execute("select %s::date - day as days_ago from platform_key_usage where workspace_id = %s order by day",
                      (today, workspace)).fetchall()
    assert [r["days_ago"] for r in kept] == [1, 0]  # today's count, and yesterday's for a clock a little behind


def test_retention_drops_old_bytes_and_keeps_the_source(client, model, live, tune, db):
    t = with_own_key(client)
    old_id = result(extract(client, t))["extractionResult"]["memory"]["sourceId"]
    new_id = result(extract(client, t))["extractionResult"]["memory"]["sourceId"]
    db.execute("update knowledge_sources set created_at = now() - interval '31 days' where id = %s", (old_id, ))
    assert live.run(drop_old_content({"svc": live.svc})) == 0  # 0 days = kept forever
    tune(knowledge_source_retention_days=30)
    assert live.run(drop_old_content({"svc": live.svc})) >= 1
    old = db.execute("select * from knowledge_sources where id = %s", (old_id, )).fetchone()
    assert old["content"] is None and old["content_dropped_at"] is not None
    assert old["status"] == "ready" and old["result"]["memory"]["sourceId"] == old_id and old["size_bytes"] > 0
    assert (bytes(db.execute("select content from knowledge_sources where id = %s",
                             (new_id, )).fetchone()["content"]) == CHECKS)


def test_a_leaked_concurrency_slot_expires_under_steady_traffic(live):
    bucket = f"test:{uuid.uuid4().hex}"
    redis = live.svc.redis

    async def go():
        seconds, micros = await redis.time()
        now_ms = seconds * 1000 + micros // 1000
        # A crashed API process's hold, past its expiry; steady traffic must not keep it alive.
        await redis.zadd(f"collab:conc:{bucket}", {"crashed-holder": now_ms - 1})
        for _ in range(3):
            async with concurrency(redis, bucket=bucket, limit=1, ttl_s=60, message="busy"):
                pass
        # A live hold still counts.
        await redis.zadd(f"collab:conc:{bucket}", {"live-holder": now_ms + 60_000})
        with pytest.raises(ApiError) as caught:
            async with concurrency(redis, bucket=bucket, limit=1, ttl_s=60, message="busy"):
                pass
        return caught.value.code

    assert live.run(go()) == "RESOURCE_EXHAUSTED"


def test_job_failure_keeps_driver_detail_internal(live, db):

    @job(max_tries=1)
    async def breaks(ctx, **kwargs):
        raise psycopg.errors.UniqueViolation(
            "duplicate key value\nDETAIL:  Key (email)=(someone@secret.example) exists.")

    async def go():
        async with transaction(live.svc.pool, None) as tx:
            job_id = await tx.enqueue("breaks", api_key_id=None)
        assert await breaks({"pool": live.svc.pool}, job_id) is None
        return job_id

    row = db.execute("select * from jobs where id = %s", (live.run(go()), )).fetchone()
    assert row["status"] == "failed" and row["error"] == GENERIC_FAILURE.format(tries=1)
    assert "secret.example" not in row["error"] and "secret.example" in row["error_detail"]


def test_provider_messages_are_not_shown_to_tenants(client, llm):
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-own-key"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    llm.script("openai", {"status": 400})
    response = client.post("/v2/rewriter/ask-ai", json={"data": {"model": "gpt-4o", "prompt": "p", "text": "x"}},
                           headers=t.headers)
    err = error(response, "INVALID_ARGUMENT")
    assert "fake" not in err["message"] and "refused" in err["message"]
