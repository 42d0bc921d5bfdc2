"""Jobs (kit/jobs.py): a failure crosses the queue as one typed shape and every awaiting endpoint answers it
the same way; a job whose statement kills its database backend is retried once, then failed for good."""

import asyncio
import base64

import pytest
from arq import Retry

from collab.ask_ai import tasks as ask_ai_tasks
from collab.extraction import tasks as extraction_tasks
from collab.judgments import search as judgments_search
from collab.kit.db import Queries, execute
from collab.kit.errors import ApiError, raise_failure
from collab.kit.jobs import GENERIC_FAILURE, JobFailure, job, reports_failures, transaction
from support.helpers import new_tenant, post, result

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

STAND_IN = ApiError("RESOURCE_EXHAUSTED", "The stand-in provider is out of quota; retry in 7 seconds.",
                    details={"retryAfterSeconds": 7}, headers={"Retry-After": "7"})

crash_sql = Queries.beside(__file__, "crash.sql")


async def _fails(*args, **kwargs):
    # A fresh error per call: the worker and the API share this process in the tests.
    raise ApiError(STAND_IN.code, STAND_IN.message, details=STAND_IN.details, headers=STAND_IN.headers)


def _tenant(client):
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-failures"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    return t


def test_a_failing_job_answers_identically_on_every_awaiting_endpoint(client, llm, monkeypatch):
    t = _tenant(client)
    # Each endpoint's job fails inside the worker with the same error.
    monkeypatch.setattr(ask_ai_tasks.model_servers, "access", _fails)
    monkeypatch.setattr(extraction_tasks, "_provider_access", _fails)
    monkeypatch.setattr(judgments_search, "run", _fails)
    calls = {
        "ask-ai": ("/v2/rewriter/ask-ai", {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey"}),
        "extract": ("/v2/agents/extract", {
            "fileBase64": base64.b64encode(b"Category,Check\nA,B\n").decode(), "mimeType": "text/csv",
            "provider": "openai"
        }), "search": ("/v2/memory/search", {"query": "review"})
    }
    answers = {}
    for name, (path, data) in calls.items():
        response = post(client, path, data, t.headers)
        answers[name] = (response.status_code, response.json(), response.headers.get("retry-after"))
    expected = (429, STAND_IN.body(), "7")
    assert answers == {name: expected for name in calls}
    # No provider was called: the failure came from inside the job.
    assert llm.requests == []


def test_the_failure_shape_round_trips():
    failure = STAND_IN.as_failure()
    assert failure == {
        "failure": {
            "code": "RESOURCE_EXHAUSTED", "message": STAND_IN.message, "details": {"retryAfterSeconds": 7},
            "headers": {"Retry-After": "7"}
        }
    }
    with pytest.raises(ApiError) as raised:
        raise_failure(failure)
    assert raised.value.body() == STAND_IN.body() and raised.value.headers == STAND_IN.headers
    # A success, even one that names a failure field of its own, is returned as it is.
    assert raise_failure({"success": False,
                          "error": "No API key configured"}) == {"success": False, "error": "No API key configured"}


def test_an_awaited_job_returns_its_failure_instead_of_raising():

    @reports_failures
    async def job(ctx, *, fail: str):
        if fail == "api":
            raise ApiError("NOT_FOUND", "Gone.")
        raise JobFailure("Written for tenants.")

    assert asyncio.run(job({}, fail="api")) == {"failure": {"code": "NOT_FOUND", "message": "Gone."}}
    assert asyncio.run(job({}, fail="job")) == {"failure": {"code": "INTERNAL", "message": "Written for tenants."}}
    assert job.__name__ == "job"  # arq registers it by name


# --- A job whose statement kills its backend -------------------------------------------------------------------


@job(max_tries=5)
async def crash_test_job(ctx: dict, *, api_key_id: str, label: str, crash: bool) -> dict:
    """Writes a row, then (when told: the test-only hook) makes its own backend exit inside the same transaction."""
    async with transaction(ctx["pool"], None) as tx:
        await execute(tx.conn, crash_sql.remember_work, {"job": label, "tenant": api_key_id})
        if crash:
            await execute(tx.conn, crash_sql.terminate_own_backend)
    return {"done": label}


def test_a_job_that_kills_its_backend_fails_for_good_after_one_retry(client, live, db, caplog):
    poisoned, other = new_tenant(client), new_tenant(client)
    db.execute("create table if not exists crash_test_work (job text, tenant text)")
    ctx = {"pool": live.svc.pool}

    async def enqueue(tenant, **args):
        async with transaction(live.svc.pool, None) as tx:  # no queue: the test runs the job itself
            return await tx.enqueue("crash_test_job", api_key_id=tenant.api_key, **args)

    bad = live.run(enqueue(poisoned, label="bad", crash=True))
    good = live.run(enqueue(other, label="good", crash=False))

    # The first loss: retried once (arq's Retry), nothing of the job's transaction kept.
    with pytest.raises(Retry):
        live.run(crash_test_job(ctx, bad))
    row = db.execute("select status, connection_losses from jobs where id = %s", (bad, )).fetchone()
    assert row == {"status": "running", "connection_losses": 1}

    # Another tenant's job, on the same pool, completes meanwhile.
    assert live.run(crash_test_job(ctx, good)) == {"done": "good"}
    assert db.execute("select status, result from jobs where id = %s",
                      (good, )).fetchone() == {"status": "succeeded", "result": {"done": "good"}}

    # The second loss fails it for good: the tenant reads the generic reason; the log and the detail name the
    # statement.
    caplog.clear()
    assert live.run(crash_test_job(ctx, bad)) is None
    row = db.execute("select status, attempts, connection_losses, error, error_detail from jobs where id = %s",
                     (bad, )).fetchone()
    assert (row["status"], row["attempts"], row["connection_losses"]) == ("failed", 2, 2)
    assert row["error"] == GENERIC_FAILURE.format(tries=2)
    assert "crash.sql:terminate_own_backend" in row["error_detail"]
    assert any("failed for good" in r.getMessage() and "crash.sql:terminate_own_backend" in r.getMessage()
               for r in caplog.records)
    # A redelivery of the failed job runs nothing; the crashed transactions left no rows, the good one its own.
    assert live.run(crash_test_job(ctx, bad)) is None
    assert db.execute("select job, tenant from crash_test_work where tenant in (%s, %s)",
                      (poisoned.api_key, other.api_key)).fetchall() == [{"job": "good", "tenant": other.api_key}]
    # And the pool serves the next request as usual.
    assert (post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}},
                 poisoned.headers).status_code == 200)
    db.execute("drop table crash_test_work")  # the isolation suite lists every table of the shared database
