"""Schema fuzzing with schemathesis: every operation, valid and invalid bodies, against the running app.

Each operation gets COLLAB_FUZZ_EXAMPLES generated cases per mode (small in `make test`, large in
`make fuzz`) from a fixed seed. A case fails on a 5xx the spec does not prescribe, a status the
OpenAPI document does not list, a body that breaks its documented schema, an error body outside the
envelope, or (negative mode) an invalid body that is accepted.
"""

import os

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from collab.app import create_app
from collab.config import Settings
from support.helpers import enable_activities, enable_advanced_queries, new_tenant, post, result

pytestmark = pytest.mark.usefixtures("embedding_model", "model_client")  # derives, searches, calls models

EXAMPLES = int(os.environ.get("COLLAB_FUZZ_EXAMPLES", "10"))
SEED = int(os.environ.get("COLLAB_FUZZ_SEED", "20261121"))

# The document is static: build it without starting anything.
OPENAPI = create_app(Settings(secret_key="fuzz-document-only-0123456789abcdef")).openapi()
SCHEMA = schemathesis.openapi.from_dict(OPENAPI)
# NUL is stripped from every string before validation (Postgres cannot store it; docs/reference.md, "Wire"), so a
# generated string over its maxLength only by NULs is rightly accepted; NUL handling has its own tests.
SCHEMA.config.generation.update(allow_x00=False)
PATHS = sorted(path for path, item in OPENAPI["paths"].items() if "post" in item)


def spec_internal(path: str, response) -> bool:
    """The two 500s the spec prescribes: Add Documents' per-item failures and extraction's INTERNAL."""
    if response.status_code != 500:
        return False
    error = response.json()["error"]
    if path == "/v2/organizations/documents/add":
        items = (error.get("details") or {}).values()
        return error["status"] == "INTERNAL" and all(i["success"] or i.get("code") for i in items)
    return path == "/v2/agents/extract" and error["status"] == "INTERNAL"


def envelope_problems(path: str, response) -> list[str]:
    """What breaks the wire rules beyond the schema: undeclared 5xx, errors outside {error: {status, message}}."""
    problems = []
    if response.status_code >= 500 and not spec_internal(path, response):
        problems.append(f"server error {response.status_code}: {response.text[:300]}")
    if response.status_code >= 400:
        body = response.json()
        if set(body) != {"error"} or not {"status", "message"} <= set(body["error"]):
            problems.append(f"error body outside the envelope: {response.text[:300]}")
    return problems


@pytest.fixture(scope="module")
def fuzz_tenant(client):
    """One tenant with every feature switched on and provider keys, so cases reach deep code paths."""
    tenant = new_tenant(client)
    enable_activities(client, tenant)
    enable_advanced_queries(client, tenant)
    keys = [{"provider": p, "customerApiKey": f"sk-fuzz-{p}-0123456789"} for p in ("openai", "anthropic", "gemini")]
    result(post(client, "/v2/workspace/apikeyconfig/update", {"aiModelApiKey": keys}, tenant.headers))
    result(post(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, tenant.headers))
    return tenant


@pytest.fixture(scope="module")
def client(live):
    """A module-wide client (the fuzz tenant outlives one test); the contract is checked by schemathesis."""
    with httpx.Client(base_url=live.url, timeout=60) as c:
        yield c


def auth_headers(path: str, tenant) -> dict[str, str]:
    """The headers each operation's documented security asks for."""
    names = {name for requirement in OPENAPI["paths"][path]["post"].get("security", []) for name in requirement}
    if "workspaceId" in names:
        return tenant.workspace_headers
    if "apiKey" in names:
        return tenant.headers
    return {"x-forwarded-for": "203.0.113.7"}  # public: workspace/create, rate limited per address


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
@pytest.mark.parametrize("path", PATHS)
def test_operation_survives_generated_bodies(path, mode, live, llm, fuzz_tenant):
    operation = SCHEMA[path]["POST"]
    checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
    if mode == GenerationMode.NEGATIVE:
        checks.append(negative_data_rejection)
    headers = auth_headers(path, fuzz_tenant)

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the first failure is reported as found
        suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case):
        response = case.call(base_url=live.url, headers=headers)
        problems = envelope_problems(path, response)
        assert not problems, f"body {str(case.body)[:300]!r}:\n  " + "\n  ".join(problems)
        # Raises with every failed check, the request as curl and the response.
        case.validate_response(response, checks=checks, headers=headers)

    run()
