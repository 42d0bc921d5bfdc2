"""A job's failure crosses the queue as one typed shape and every awaiting endpoint answers it the same way."""

import asyncio
import base64

import pytest

from collab.ask_ai import tasks as ask_ai_tasks
from collab.extraction import tasks as extraction_tasks
from collab.judgments import search as judgments_search
from collab.kit.errors import ApiError, raise_failure
from collab.kit.jobs import JobFailure, reports_failures
from helpers import new_tenant, post, result

STAND_IN = ApiError("RESOURCE_EXHAUSTED", "The stand-in provider is out of quota; retry in 7 seconds.",
                    details={"retryAfterSeconds": 7}, headers={"Retry-After": "7"})


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
    monkeypatch.setattr(ask_ai_tasks, "provider_api_key", _fails)
    monkeypatch.setattr(extraction_tasks, "_provider_key", _fails)
    monkeypatch.setattr(judgments_search, "run", _fails)
    calls = {
        "ask-ai": ("/v2/rewriter/ask-ai", {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey"}),
        "extract": ("/v2/agents/extract", {"fileBase64": base64.b64encode(b"Category,Check\nA,B\n").decode(),
                                           "mimeType": "text/csv", "provider": "openai"}),
        "search": ("/v2/memory/search", {"query": "review"}),
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
    assert failure == {"failure": {"code": "RESOURCE_EXHAUSTED", "message": STAND_IN.message,
                                   "details": {"retryAfterSeconds": 7}, "headers": {"Retry-After": "7"}}}
    with pytest.raises(ApiError) as raised:
        raise_failure(failure)
    assert raised.value.body() == STAND_IN.body() and raised.value.headers == STAND_IN.headers
    # A success, even one that names a failure field of its own, is returned as it is.
    assert raise_failure({"success": False, "error": "No API key configured"}) == {"success": False,
                                                                                  "error": "No API key configured"}


def test_an_awaited_job_returns_its_failure_instead_of_raising():
    @reports_failures
    async def job(ctx, *, fail: str):
        if fail == "api":
            raise ApiError("NOT_FOUND", "Gone.")
        raise JobFailure("Written for tenants.")

    assert asyncio.run(job({}, fail="api")) == {"failure": {"code": "NOT_FOUND", "message": "Gone."}}
    assert asyncio.run(job({}, fail="job")) == {"failure": {"code": "INTERNAL", "message": "Written for tenants."}}
    assert job.__name__ == "job"  # arq registers it by name
