"""Field bounds (kit/fields.py): every request string and array is bounded in the document, and the bounds
hold on the wire."""

import pytest

from collab.kit.fields import MAX_BATCH
from support.helpers import enable_advanced_queries, error, issue_paths, new_tenant, post, result


def _unbounded(openapi: dict) -> list[str]:
    """Request fields without a maxLength (strings) or maxItems (arrays), by schema path."""
    schemas = openapi["components"]["schemas"]
    seen: set[str] = set()
    found: list[str] = []

    def walk(schema: dict, where: str) -> None:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                walk(schemas[name], name)
            return
        kind = schema.get("type")
        if kind == "string" and not {"maxLength", "enum", "const"} & set(schema):
            found.append(where)
        if kind == "array" and "maxItems" not in schema:
            found.append(where)
        for name, sub in schema.get("properties", {}).items():
            walk(sub, f"{where}.{name}")
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key, []):
                walk(sub, where)
        if isinstance(schema.get("items"), dict):
            walk(schema["items"], f"{where}[]")
        if isinstance(schema.get("additionalProperties"), dict):
            walk(schema["additionalProperties"], f"{where}{{}}")

    for item in openapi["paths"].values():
        body = item.get("post", {}).get("requestBody")
        if body:
            walk(body["content"]["application/json"]["schema"], "body")
    return found


def test_every_request_string_and_array_is_bounded(live):
    # Free-form client JSON (metadata, entityData) is bounded by the body size and nesting depth instead.
    assert _unbounded(live.app.openapi()) == []


def test_batch_cap_is_inclusive(client):
    t = new_tenant(client)
    orgs = [{"organizationId": f"o{i}"} for i in range(MAX_BATCH)]
    assert len(result(post(client, "/v2/organizations/add", {"organizations": orgs}, t.headers))) == MAX_BATCH
    over = orgs + [{"organizationId": "one-more"}]
    err = error(post(client, "/v2/organizations/add", {"organizations": over}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["organizations"]]
    # Nothing of the refused batch was written.
    listed = result(post(client, "/v2/organizations/get", {"organizationIds": ["one-more"]}, t.headers))
    assert listed == []


@pytest.mark.parametrize(
    "path, field, at_limit, over",
    [("/v2/organizations/get", "pageSize", 1000, 1001), ("/v2/organizations/get", "pageSize", 1, 0),
     ("/v2/users/get", "userIds", [f"u{i}" for i in range(30)], [f"u{i}" for i in range(31)]),
     ("/v2/notifications/get", "notificationIds", [f"n{i}" for i in range(30)], [f"n{i}" for i in range(31)]),
     ("/v2/organizations/get", "organizationIds", ["o" * 200], ["o" * 201])])
def test_page_sizes_id_lists_and_string_lengths(client, path, field, at_limit, over):
    t = new_tenant(client)
    enable_advanced_queries(client, t)
    base = {"/v2/organizations/get": {}, "/v2/notifications/get": {"organizationId": "org", "userId": "u"}}
    base = base.get(path, {"organizationId": "org"})
    result(post(client, path, {**base, field: at_limit}, t.headers))
    err = error(post(client, path, {**base, field: over}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err)[0][0] == field


@pytest.mark.parametrize("field, over", [("limit", 51), ("limit", 0), ("recencyDays", 366),
                                         ("excludeDocumentIds", [f"d{i}" for i in range(21)])])
def test_search_bounds_from_the_spec(client, field, over):
    t = new_tenant(client)
    data = {"query": "q", "scope": "organization", "organizationId": "o"}
    if field == "excludeDocumentIds":
        data["filters"] = {field: over}
    else:
        data[field] = over
    err = error(post(client, "/v2/memory/search", data, t.headers), "INVALID_ARGUMENT")
    assert field in issue_paths(err)[0]
