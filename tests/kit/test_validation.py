"""Validation answers list every failing field, and a conditional rule names the field it is about. Paths are relative
to `data`."""

from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel, ValidationError

from collab.kit.auth import api_key_auth, workspace_auth
from collab.kit.envelope import Model
from collab.kit.validation import Broken, failure, rule, rules
from support.helpers import error, issue_paths, new_tenant, post

# A value of each JSON type, in the order tried when one a field refuses is wanted.
_SAMPLES = [(True, "boolean"), (12.5, "number"), ("x", "string"), ([], "array"), ({}, "object")]


def test_nested_paths_are_relative_to_data(client):
    tenant = new_tenant(client)
    body = {"notificationServiceConfig": {"batchConfig": {"user": {"maxActivities": "many"}}}}
    err = error(post(client, "/v2/workspace/notificationconfig/update", body, tenant.headers), "INVALID_ARGUMENT")
    assert err["details"]["issues"] == [{
        "code": "invalid_type", "path": ["notificationServiceConfig", "batchConfig", "user", "maxActivities"],
        "message": err["details"]["issues"][0]["message"]
    }]


def _resolve(openapi: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _types(openapi: dict, schema: dict) -> set[str] | None:
    """The JSON types a property schema accepts; None when it accepts anything."""
    schema = _resolve(openapi, schema)
    if "anyOf" in schema or "oneOf" in schema:
        found: set[str] = set()
        for sub in schema.get("anyOf", schema.get("oneOf")):
            types = _types(openapi, sub)
            if types is None:
                return None
            found |= types
        return found
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return {
            "boolean" if isinstance(v, bool) else "number" if isinstance(v, (int, float)) else "string"
            for v in values
        }
    kind = schema.get("type")
    if kind is None:
        return {"object"} if "properties" in schema else None
    kinds = {kind} if isinstance(kind, str) else set(kind)
    return kinds | {"integer"} if "number" in kinds else kinds


def _wrong(openapi: dict, schema: dict) -> Any:
    """A value of a JSON type the property refuses (a float for an integer); `...` when it takes anything."""
    types = _types(openapi, schema)
    if types is None:
        return ...
    for value, kind in _SAMPLES:
        if kind not in types and not (kind == "number" and "number" in types):
            return value
    return ...


def _body_model(openapi: dict, operation: dict) -> dict | None:
    """The schema of `data` in an operation's JSON request body."""
    content = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if not content:
        return None
    envelope = _resolve(openapi, content["schema"])
    data = envelope.get("properties", {}).get("data")
    return _resolve(openapi, data) if data else None


def _auth(route: APIRoute) -> str:
    pending, calls = [route.dependant], set()
    while pending:
        dependant = pending.pop()
        calls.add(dependant.call)
        pending.extend(dependant.dependencies)
    return "api_key" if api_key_auth in calls else "workspace" if workspace_auth in calls else "public"


def _operations(live) -> list[tuple[str, str, dict]]:
    """(path, auth, data schema) of every authenticated /v2 operation that takes a JSON body."""
    openapi = live.app.openapi()
    routes = {
        c.path: c.original_route
        for c in iter_route_contexts(live.app.routes) if isinstance(c.original_route, APIRoute)
    }
    found = []
    for path, item in openapi["paths"].items():
        if not path.startswith("/v2/") or "post" not in item or path not in routes:
            continue
        model = _body_model(openapi, item["post"])
        auth = _auth(routes[path])
        # Public operations are rate-limited per client address; their models are covered by the same code.
        if model is not None and model.get("properties") and auth != "public":
            found.append((path, auth, model))
    return found


def _headers(tenant, auth: str) -> dict[str, str]:
    return tenant.headers if auth == "api_key" else tenant.workspace_headers


def test_every_required_field_left_out_is_listed(client, live):
    """Each field the document marks required has its own issue when all of them are left out."""
    t = new_tenant(client)
    missed = {}
    checked = 0
    for path, auth, model in _operations(live):
        wanted = [[field] for field in model.get("required", [])]
        if not wanted:
            continue
        checked += 1
        answer = post(client, path, {}, _headers(t, auth))
        paths = issue_paths(error(answer, "INVALID_ARGUMENT"))
        if [p for p in wanted if p not in paths]:
            missed[path] = ([p for p in wanted if p not in paths], paths)
    assert checked > 30
    assert missed == {}


def test_every_field_of_the_wrong_type_is_listed(client, live):
    """A body with every field of a JSON type it refuses lists each field (conditional rules included)."""
    t = new_tenant(client)
    openapi = live.app.openapi()
    missed = {}
    for path, auth, model in _operations(live):
        data = {name: _wrong(openapi, schema) for name, schema in model["properties"].items()}
        data = {name: value for name, value in data.items() if value is not ...}
        answer = post(client, path, data, _headers(t, auth))
        heads = {tuple(p[:1]) for p in issue_paths(error(answer, "INVALID_ARGUMENT"))}
        if any((name, ) not in heads for name in data):
            missed[path] = sorted(name for name in data if (name, ) not in heads)
    assert missed == {}


CRDT_ADD = "/v2/crdt/add"


@pytest.mark.parametrize("kind", [None, "rich"])
def test_crdt_add_lists_ids_beside_a_bad_type(client, kind):
    """`type` missing or unknown no longer hides the missing and null ids, nor the missing data."""
    t = new_tenant(client)
    body = {"documentId": None, "editorId": "e1", **({} if kind is None else {"type": kind})}
    err = error(post(client, CRDT_ADD, body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["data"], ["documentId"], ["organizationId"], ["type"]]
    messages = {tuple(i["path"]): i["message"] for i in err["details"]["issues"]}
    assert messages[("documentId", )] == "Document ID is required."
    assert messages[("organizationId", )] == "Organization ID is required"


def test_crdt_ids_alone_keep_their_messages(client):
    t = new_tenant(client)
    body = {"organizationId": "o1", "documentId": None, "editorId": None, "type": "text", "data": "x"}
    err = error(post(client, CRDT_ADD, body, t.headers), "INVALID_ARGUMENT")
    assert err["message"] == "Document ID is required."
    assert err["details"]["issues"] == [{
        "code": "invalid_type", "path": ["documentId"], "message": "Document ID is required."
    }, {"code": "invalid_type", "path": ["editorId"], "message": "Editor ID is required."}]


GRANT = "/v2/auth/permissions/add"


def test_a_resource_without_its_organization_names_organization_id(client):
    t = new_tenant(client)
    data = {"user": {"userId": "u1"}, "permissions": {"resources": [{"type": "document", "id": "d1"}]}}
    err = error(post(client, GRANT, data, t.headers), "INVALID_ARGUMENT")
    assert err["details"]["issues"] == [{
        "code": "custom", "path": ["permissions", "resources", "0", "organizationId"],
        "message": "organizationId is required when type is document"
    }]


def test_a_grant_lists_the_principal_rule_and_every_bad_resource(client):
    t = new_tenant(client)
    data = {
        "permissions": {
            "resources": [{"type": "document",
                           "id": "d1"}, {"type": "folder", "id": "f1", "organizationId": "o1", "accessRole": "owner"},
                          {"type": "organization", "id": "o1", "organizationId": "o2"}]
        }
    }
    err = error(post(client, GRANT, data, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [[], ["permissions", "resources", "0", "organizationId"],
                                        ["permissions", "resources", "1", "accessRole"],
                                        ["permissions", "resources", "2", "organizationId"]]


@pytest.mark.parametrize(
    "path,data,wanted",
    [("/v2/activities/add", {
        "organizationId": "o1", "documentId": 5,
        "activities": [{"featureType": "custom", "actionType": "x", "actionUser": {"userId": "u"}}]
    }, [["activities", "0", "targetEntityId"], ["documentId"]]),
     ("/v2/organizations/documents/migrate", {"organizationId": 5, "documentId": "d1", "newDocumentId": "d1"
                                              }, [["newDocumentId"], ["organizationId"]]),
     ("/v2/users/get", {"organizationId": "o1", "groupByDocumentId": True, "pageSize": 0}, [["groupByDocumentId"],
                                                                                            ["pageSize"]]),
     ("/v2/memory/search", {"query": "q", "filters": {"dateRange": {"start": 5, "end": 1}}, "limit": "x"
                            }, [["filters", "dateRange", "start"], ["limit"]])])
def test_single_field_rules_name_their_field_beside_other_failures(client, path, data, wanted):
    t = new_tenant(client)
    err = error(post(client, path, data, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == wanted


class _Pair(Model):
    kind: str
    size: int = None
    note: str = None

    _rules = rules(
        rule("kind", "size")(lambda v: (Broken("size", "size is required for boxes")
                                        if v.get("kind") == "box" and v.get("size") is None else None)),
        rule("size", "note")(lambda v: Broken(None, "Provide size or note") if not v else None))


class _Outer(BaseModel):
    pairs: list[_Pair]


def _issues(model: type[BaseModel], data: dict) -> list[dict]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return failure(caught.value.errors()).details["issues"]


def test_rules_run_beside_failing_fields_and_skip_their_own_failed_fields():
    assert _issues(_Outer, {"pairs": [{"kind": "box", "note": 5}, {"kind": 1}, {"kind": "box", "size": "x"}]}) == [
        {"code": "invalid_type", "path": ["pairs", "0", "note"], "message": "Input should be a valid string"
         }, {"code": "custom", "path": ["pairs", "0", "size"], "message": "size is required for boxes"},
        {"code": "invalid_type", "path": ["pairs", "1", "kind"], "message": "Input should be a valid string"},
        {"code": "custom", "path": ["pairs", "1"], "message": "Provide size or note"},
        {"code": "invalid_type", "path": ["pairs", "2", "size"], "message": "Input should be a valid integer"}
    ]
    assert _Outer.model_validate({"pairs": [{"kind": "box", "size": 1}]}).pairs[0].size == 1
