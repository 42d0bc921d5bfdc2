"""The AI surfaces' review payloads against every operation that takes text (issue #49 item 4).

For every operation of the OpenAPI document, each string field of its request (the top level of `data`) gets
each payload of support/pathological_ai.py, and each free-form object field gets a 3,000-deep object and a
`userContext` of megabytes. Every answer is in the envelope and below 500; the suite's tripwire fails the test if
any of it held the service's event loop.
"""

import json

import pytest

from collab.app import create_app
from collab.config import Settings
from support import pathological_ai
from support.helpers import new_tenant

OPENAPI = create_app(Settings(secret_key="fuzz-document-only-0123456789abcdef")).openapi()
SCHEMAS = OPENAPI["components"]["schemas"]


def resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def fields(path: str) -> tuple[list[str], list[str]]:
    """The string fields and the free-form object fields at the top of an operation's `data`."""
    body = resolve(OPENAPI["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"])
    data = resolve(body.get("properties", {}).get("data", {}))
    strings, objects = [], []
    for name, prop in data.get("properties", {}).items():
        options = [resolve(p) for p in prop.get("anyOf", [prop])]
        types = {o.get("type") for o in options}
        if "string" in types:
            strings.append(name)
        elif "object" in types and not any("properties" in o for o in options):
            objects.append(name)
    return strings, objects


OPERATIONS = sorted(p for p, item in OPENAPI["paths"].items()
                    if "post" in item and "requestBody" in item["post"] and p.startswith("/v2/") and any(fields(p)))


@pytest.mark.usefixtures("model_client")
@pytest.mark.parametrize("path", OPERATIONS)
def test_review_payloads_in_every_text_field_answer_in_the_envelope(client, llm, path):
    t = new_tenant(client)
    strings, objects = fields(path)
    bad = []
    cases = [(name, json.dumps(value)) for name in strings for value in pathological_ai.STRINGS]
    cases += [(name, value) for name in objects
              for value in (pathological_ai.nested_object(), json.dumps(pathological_ai.huge_user_context()))]
    for name, value in cases:
        body = '{"data": {%s: %s}}' % (json.dumps(name), value)
        answer = client.post(path, content=body.encode(), headers={**t.headers, "content-type": "application/json"})
        error = answer.json().get("error") if answer.status_code >= 400 else None
        if answer.status_code >= 500 or (answer.status_code >= 400 and not (error and error.get("status"))):
            bad.append((name, value[:40], answer.status_code, answer.text[:200]))
    assert bad == []
