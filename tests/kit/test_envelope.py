"""The wire envelope (kit/envelope.py): {data} bodies parsed strictly (malformed JSON, NaN, unsafe integers
and deep nesting refused at ingress, NUL characters stripped), and old rows rendered safely (issue #14, 3)."""

import json

import pytest
from psycopg.types.json import Jsonb

from collab.kit.envelope import MAX_JSON_DEPTH
from support.factories import activity, add_activities, notify, page_of, settle, webhook_tenant
from support.helpers import enable_activities, enable_advanced_queries, error, issue_paths, new_tenant, post, result
from support.pathological_json import MAX_SAFE_INTEGER, RAW_BODIES, SAFE_VALUES, VALUES

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

ACTIVITY_GET = "/v2/workspace/activityconfig/get"

ACTIVITIES, NOTIFICATIONS, CRDT = "/v2/activities", "/v2/notifications", "/v2/crdt"
USER = {"userId": "u1", "name": "Ana"}


@pytest.mark.parametrize("content, headers", [(b"{not json", {"content-type": "application/json"}),
                                              (b"", {"content-type": "application/json"}),
                                              (b"\xff\xfe\x00", {"content-type": "application/json"}),
                                              (b'{"data": {"ownerEmail": "a@b.io"}', {})])
def test_malformed_json_is_invalid_argument(client, content, headers):
    err = error(client.post("/v2/workspace/create", content=content, headers=headers), "INVALID_ARGUMENT")
    assert err["details"]["issues"]


@pytest.mark.parametrize("body", [[], "data", 5, None, {"datum": {}}, {"data": []}, {"data": "x"}, {"data": None}])
def test_body_must_be_object_with_data_object(client, body):
    tenant = new_tenant(client)
    err = error(client.post(ACTIVITY_GET, json=body, headers=tenant.headers), "INVALID_ARGUMENT")
    for entry in err["details"]["issues"]:
        assert set(entry) == {"code", "path", "message"}
        assert all(isinstance(p, str) for p in entry["path"])


def test_json_without_content_type_is_accepted(client):
    tenant = new_tenant(client)
    response = client.post(ACTIVITY_GET, content=b'{"data": {}}',
                           headers={**tenant.headers, "content-type": "text/plain"})
    result(response)


@pytest.mark.parametrize(
    "path, body",
    [("/v2/activities/add", '{"data":{"organizationId":"o","documentId":"d","activities":[{"featureType":"comment",'
      '"actionType":"comment.add","actionUser":{"userId":"u"},"entityData":{"x":NaN}}]}}'),
     ("/v2/memory/search", '{"data":{"query":"x","filters":{"dateRange":{"start":Infinity}}}}'),
     ("/v2/memory/search", '{"data":{"query":"x","filters":{"dateRange":{"start":1e300}}}}'),
     ("/v2/workspace/activityconfig/update", '{"data":{"activityServiceConfig":{"enabledTime":-Infinity}}}')])
def test_non_finite_numbers_are_invalid_not_500(client, path, body):
    tenant = new_tenant(client)
    response = client.post(path, content=body, headers={**tenant.headers, "content-type": "application/json"})
    error(response, "INVALID_ARGUMENT")


def test_nul_characters_are_stripped_before_storage(client, db):
    tenant = new_tenant(client)
    result(
        post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}},
             tenant.headers))
    body = ('{"data":{"organizationId":"o\\u0000rg","documentId":"d","activities":[{"id":"a1","featureType":"comment",'
            '"actionType":"comment.add","actionUser":{"userId":"u","name":"A\\u0000na"},'
            '"entityData":{"comm\\u0000entText":"x\\u0000y"},"displayMessageTemplate":"t\\u0000"}]}}')
    response = client.post("/v2/activities/add", content=body,
                           headers={**tenant.headers, "content-type": "application/json"})
    result(response)
    row = db.execute("select * from activities where api_key_id = %s", (tenant.api_key, )).fetchone()
    assert row["organization_id"] == "org" and row["action_user"]["name"] == "Ana"
    assert row["entity_data"] == {"commentText": "xy"} and row["display_message_template"] == "t"


def test_every_operation_route_parses_json_strictly():
    from fastapi.routing import APIWebSocketRoute

    from collab.api import ROUTERS
    from collab.kit.envelope import StrictJsonRoute

    routes = [route for router in ROUTERS for route in router.routes if not isinstance(route, APIWebSocketRoute)]
    assert len(routes) >= 20 and all(isinstance(route, StrictJsonRoute) for route in routes)


def _nested(levels: int):
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_json_nesting_depth(client):
    t = new_tenant(client)
    # {"data": {"x": ...}} is two levels; an unknown key is ignored, so only the depth decides.
    at_limit = {"data": {"x": _nested(MAX_JSON_DEPTH - 2)}}
    assert client.post("/v2/organizations/get", json=at_limit, headers=t.headers).status_code == 200
    over = {"data": {"x": _nested(MAX_JSON_DEPTH - 1)}}
    err = error(client.post("/v2/organizations/get", json=over, headers=t.headers), "INVALID_ARGUMENT")
    assert "nested deeper" in err["details"]["issues"][0]["message"]
    # Far deeper than Python's own parser allows: still a clean 400.
    deep = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    response = client.post("/v2/organizations/get", content=deep,
                           headers={**t.headers, "content-type": "application/json"})
    error(response, "INVALID_ARGUMENT")


# Integers past 2^53 - 1: refused where they come in, with the path of each.


@pytest.mark.parametrize("name", sorted(VALUES))
def test_unsafe_integers_are_refused_on_write_with_their_path(client, name):
    t = new_tenant(client)
    enable_activities(client, t)
    response = add_activities(client, t, activity(id="a1"), activity(id="a2", entityData={"n": VALUES[name]}))
    err = error(response, "INVALID_ARGUMENT")
    [path, *_] = issue_paths(err)
    assert path[:4] == ["activities", "1", "entityData", "n"]
    assert str(MAX_SAFE_INTEGER) in err["message"]
    # Nothing of the call was stored.
    assert page_of(client, f"{ACTIVITIES}/get", t, organizationId="org1")["data"] == []


def test_every_unsafe_integer_of_a_body_is_named(client):
    t = new_tenant(client)
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": USER, "createOrganization": True,
        "displayHeadlineMessageTemplate": "x", "displayBodyMessage": "hello",
        "displayHeadlineMessageTemplateData": {"big": 2**64}, "notificationSourceData": {"list": [1, -(2**63) - 1]},
        "notifyUsers": []
    }
    err = error(post(client, f"{NOTIFICATIONS}/add", body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["displayHeadlineMessageTemplateData", "big"],
                                        ["notificationSourceData", "list", "1"]]
    assert {i["code"] for i in err["details"]["issues"]} == {"too_big"}


@pytest.mark.parametrize("name", sorted(RAW_BODIES))
def test_raw_pathological_bodies_are_invalid_argument(client, name):
    t = new_tenant(client)
    response = client.post(f"{ACTIVITIES}/get", content=RAW_BODIES[name],
                           headers={**t.headers, "content-type": "application/json"})
    error(response, "INVALID_ARGUMENT")


def test_safe_edges_are_accepted_and_come_back_as_sent(client):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add_activities(client, t, activity(id="a1", entityData=SAFE_VALUES)))
    [record] = page_of(client, f"{ACTIVITIES}/get", t, organizationId="org1")["data"]
    assert record["entityData"] == SAFE_VALUES


def test_a_write_with_a_webhook_endpoint_refuses_the_integer_and_sends_nothing(client, live, receiver):
    t, _ = webhook_tenant(client, receiver)
    enable_activities(client, t)
    response = add_activities(client, t, activity(id="a1", entityData={"n": 2**64}))
    assert issue_paths(error(response, "INVALID_ARGUMENT")) == [["activities", "0", "entityData", "n"]]
    result(add_activities(client, t, activity(id="a2", entityData={"n": 2**53 - 1})))
    settle(live, t)
    assert [json.loads(r.body)["data"]["payload"]["id"] for r in receiver.to("/hook")] == ["a2"]


def test_rows_stored_before_the_check_still_read(client, db):
    """An old row with integers orjson cannot write (past 64 bits) answers 200, each as the double a JavaScript
    reader would hold; a large double (jsonb writes 1e30 out as integer digits) comes back as that double."""
    t = new_tenant(client)
    enable_activities(client, t)
    enable_advanced_queries(client, t)
    result(add_activities(client, t, activity(id="a1", entityData={"n": 1})))
    notify(client, t, "n1", organizationId="org1", documentId="doc1")
    legacy = {"big": 2**64, "negative": -(2**63) - 1, "huge": 10**30, "nested": [[{"n": 2**70}]], "ok": 5}
    db.execute("update activities set entity_data = %s where api_key_id = %s", (Jsonb(legacy), t.api_key))
    db.execute("update notifications set notification_source_data = %s where api_key_id = %s",
               (Jsonb(legacy), t.api_key))
    expected = {
        "big": float(2**64), "negative": float(-(2**63) - 1), "huge": 1e30, "nested": [[{"n": float(2**70)}]], "ok": 5
    }
    [record] = page_of(client, f"{ACTIVITIES}/get", t, organizationId="org1")["data"]
    assert record["entityData"] == expected
    [record] = page_of(client, f"{NOTIFICATIONS}/get", t, organizationId="org1", documentId="doc1")["data"]
    assert record["notificationSourceData"] == expected
    # A large double sent today is stored by jsonb as integer digits and still reads back as the double.
    result(add_activities(client, t, activity(id="a2", entityData={"x": 1e300, "y": -1.5e30})))
    [record] = page_of(client, f"{ACTIVITIES}/get", t, organizationId="org1", activityIds=["a2"])["data"]
    assert record["entityData"] == {"x": 1e300, "y": -1.5e30}
