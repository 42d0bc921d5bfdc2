"""Advanced webhooks: endpoint management (Svix shapes), secrets, signing, tenancy, SSRF at registration."""

import asyncio
import base64
from datetime import datetime, timezone

import pytest
from standardwebhooks.webhooks import Webhook

from collab.kit import safety
from collab.webhooks.secret import sign
from support.factories import WEBHOOKS as BASE
from support.factories import (
    create_endpoint,
    enable_webhooks,
    messages,
    notify,
    secret_of,
    settle,
    webhook_tenant,
)
from support.helpers import error, issue_paths, new_tenant, post, result

ENDPOINT_KEYS = {
    "id", "url", "description", "filterTypes", "channels", "disabled", "disabledReason", "rateLimit", "uid", "metadata",
    "version", "createdAt", "updatedAt"
}


@pytest.fixture
def private_targets_refused(live):
    """The running service with COLLAB_WEBHOOKS_ALLOW_PRIVATE_TARGETS off, as in production."""
    live.svc.settings.webhooks_allow_private_targets = False
    yield
    live.svc.settings.webhooks_allow_private_targets = True


# Endpoint management.


def test_everything_is_failed_precondition_before_webhooks_are_enabled(client):
    t = new_tenant(client)
    calls = [("endpoints/create", {"url": "https://example.com/hook"}), ("endpoints/get", {}),
             ("endpoints/update", {"endpointId": "ep_x"}), ("endpoints/delete", {"endpointId": "ep_x"}),
             ("endpoints/secret/get", {"endpointId": "ep_x"}), ("endpoints/secret/rotate", {"endpointId": "ep_x"}),
             ("messages/get", {}), ("messages/retry", {"messageId": "msg_x", "endpointId": "ep_x"})]
    for path, data in calls:
        error(post(client, f"{BASE}/{path}", data, t.headers), "FAILED_PRECONDITION")
    enable_webhooks(client, t)
    result(post(client, f"{BASE}/endpoints/get", {}, t.headers))
    result(post(client, "/v2/workspace/advancedwebhookconfig/update", {"isEnabled": False}, t.headers))
    error(post(client, f"{BASE}/endpoints/get", {}, t.headers), "FAILED_PRECONDITION")
    error(post(client, f"{BASE}/endpoints/get", {}), "UNAUTHENTICATED")


def test_create_get_update_delete_in_svix_shapes(client, clock):
    t = new_tenant(client)
    enable_webhooks(client, t)
    created = create_endpoint(client, t, "https://example.com/hook", description="Ops", uid="ops-hook",
                              filterTypes=["comment.add",
                                           "notification.add"], channels=["o1"], rateLimit=10, metadata={"team": "ops"})
    assert set(created) == ENDPOINT_KEYS and created["id"].startswith("ep_")
    assert created["filterTypes"] == ["comment.add", "notification.add"] and created["channels"] == ["o1"]
    assert created["rateLimit"] == 10 and created["uid"] == "ops-hook" and created["metadata"] == {"team": "ops"}
    assert created["disabled"] is False and created["version"] == 1
    assert created["createdAt"] == datetime.fromtimestamp(clock["now"],
                                                          timezone.utc).isoformat(timespec="milliseconds").replace(
                                                              "+00:00", "Z")
    listed = result(post(client, f"{BASE}/endpoints/get", {}, t.headers))
    assert listed == {"data": [created], "iterator": None, "prevIterator": None, "done": True}

    clock["now"] += 1
    update = {
        "endpointId": created["id"], "description": "Ops team", "filterTypes": None, "rateLimit": None, "disabled": True
    }
    changed = result(post(client, f"{BASE}/endpoints/update", update, t.headers))
    assert changed["description"] == "Ops team" and changed["filterTypes"] is None and changed["rateLimit"] is None
    assert changed["disabled"] is True and changed["channels"] == ["o1"] and changed["uid"] == "ops-hook"
    assert changed["updatedAt"] > changed["createdAt"] == created["createdAt"]
    # An endpoint may be named by its uid as well.
    again = result(post(client, f"{BASE}/endpoints/update", {"endpointId": "ops-hook", "disabled": False}, t.headers))
    assert again["id"] == created["id"] and again["disabled"] is False
    err = error(
        post(client, f"{BASE}/endpoints/create", {"url": "https://example.com/2", "uid": "ops-hook"}, t.headers),
        "ALREADY_EXISTS")
    assert "uid" in err["message"]
    gone = result(post(client, f"{BASE}/endpoints/delete", {"endpointId": created["id"]}, t.headers))
    assert gone == {"id": created["id"], "deleted": True}
    assert result(post(client, f"{BASE}/endpoints/get", {}, t.headers))["data"] == []
    error(post(client, f"{BASE}/endpoints/delete", {"endpointId": created["id"]}, t.headers), "NOT_FOUND")


def test_create_validation(client):
    t = new_tenant(client)
    enable_webhooks(client, t)
    bad = [({"url": "ftp://example.com/x"}, ["url"]), ({"url": "not a url"}, ["url"]), ({}, ["url"]),
           ({"url": "https://example.com", "filterTypes": ["comment.add", "comment.explode"]}, ["filterTypes", "1"]),
           ({"url": "https://example.com", "filterTypes": []}, ["filterTypes"]),
           ({"url": "https://example.com", "rateLimit": 0}, ["rateLimit"]),
           ({"url": "https://example.com", "rateLimit": "5"}, ["rateLimit"]),
           ({"url": "https://example.com", "uid": "has space"}, ["uid"]),
           ({"url": "https://example.com", "metadata": {"a": 1}}, ["metadata", "a"]),
           ({"url": "https://example.com", "disabled": "no"}, ["disabled"])]
    for data, path in bad:
        err = error(post(client, f"{BASE}/endpoints/create", data, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [path], (data, err)
    endpoint = create_endpoint(client, t, "https://example.com/hook")
    err = error(post(client, f"{BASE}/endpoints/update", {"endpointId": endpoint["id"], "url": None}, t.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["url"]]
    error(post(client, f"{BASE}/endpoints/update", {"endpointId": "ep_nope", "description": "x"}, t.headers),
          "NOT_FOUND")


def test_paging_with_limit_iterator_and_prev_iterator(client, clock):
    t = new_tenant(client)
    enable_webhooks(client, t)
    ids = []
    for i in range(7):
        clock["now"] += 1
        ids.append(create_endpoint(client, t, f"https://example.com/{i}")["id"])
    pages, iterator = [], None
    while True:
        page = result(
            post(client, f"{BASE}/endpoints/get", {"limit": 3, **({"iterator": iterator} if iterator else {})},
                 t.headers))
        pages.append(page)
        iterator = page["iterator"]
        if page["done"]:
            assert iterator is None
            break
    assert [[e["id"] for e in p["data"]] for p in pages] == [ids[0:3], ids[3:6], ids[6:7]]
    assert pages[0]["prevIterator"] is None and pages[1]["prevIterator"] is not None
    back = result(post(client, f"{BASE}/endpoints/get", {"limit": 3, "iterator": pages[2]["prevIterator"]}, t.headers))
    assert [e["id"] for e in back["data"]] == ids[3:6] and back["done"] is False
    first = result(post(client, f"{BASE}/endpoints/get", {"limit": 3, "iterator": back["prevIterator"]}, t.headers))
    assert [e["id"] for e in first["data"]] == ids[0:3] and first["prevIterator"] is None
    for limit in (0, 251):
        err = error(post(client, f"{BASE}/endpoints/get", {"limit": limit}, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["limit"]]
    error(post(client, f"{BASE}/endpoints/get", {"iterator": "forged"}, t.headers), "INVALID_ARGUMENT")
    other = new_tenant(client)
    enable_webhooks(client, other)
    # A page token of one tenant means nothing to another.
    error(post(client, f"{BASE}/endpoints/get", {"iterator": pages[0]["iterator"]}, other.headers), "INVALID_ARGUMENT")


def test_secrets_are_whsec_encrypted_at_rest_and_rotate(client, db):
    t = new_tenant(client)
    enable_webhooks(client, t)
    endpoint = create_endpoint(client, t, "https://example.com/hook")
    key = secret_of(client, t, endpoint["id"])
    assert key.startswith("whsec_") and len(base64.b64decode(key.removeprefix("whsec_"))) == 24
    row = db.execute("select * from webhook_endpoints where id = %s", (endpoint["id"], )).fetchone()
    stored = bytes(row["secret_enc"])
    assert key.encode() not in stored and key.removeprefix("whsec_").encode() not in stored
    rotated = result(post(client, f"{BASE}/endpoints/secret/rotate", {"endpointId": endpoint["id"]}, t.headers))["key"]
    assert rotated.startswith("whsec_") and rotated != key and secret_of(client, t, endpoint["id"]) == rotated
    assert db.execute("select previous_secret_enc is not null as kept from webhook_endpoints where id = %s",
                      (endpoint["id"], )).fetchone()["kept"]


def test_standard_webhooks_test_vector():
    secret, msg_id, timestamp = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330
    expected = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    assert sign(secret, msg_id, timestamp, '{"test": 2432232314}') == expected
    assert (Webhook(secret).sign(msg_id, datetime.fromtimestamp(timestamp, timezone.utc),
                                 '{"test": 2432232314}') == expected)


def test_deliveries_verify_with_the_standard_webhooks_library(client, live, receiver):
    t, endpoint = webhook_tenant(client, receiver)
    notify(client, t)
    settle(live, t)
    [request] = receiver.requests
    assert request.method == "POST" and request.path == "/hook"
    assert request.headers["content-type"] == "application/json"
    payload = Webhook(secret_of(client, t, endpoint["id"])).verify(request.body, request.headers)
    assert payload["type"] == "notification.add" and payload["id"] == request.headers["webhook-id"]
    assert payload["id"].startswith("msg_")
    assert payload["data"]["metadata"] == {"apiKey": t.api_key, "organizationId": "o1", "documentId": "d1"}
    assert payload["data"]["actionUser"] == {"userId": "u0", "name": "Ana", "email": "ana@example.com"}
    assert payload["data"]["payload"]["id"] == "n1" and payload["data"]["payload"]["displayBodyMessage"] == "Hello"
    assert payload["timestamp"].endswith("Z")
    [message] = messages(client, t)["messages"]
    assert message["id"] == payload["id"] and message["status"] == "succeeded"
    assert [(a["statusCode"], a["attempt"], a["endpointId"]) for a in message["attempts"]] == [(200, 1, endpoint["id"])]


def test_a_rotated_secret_signs_beside_the_new_one_for_24_hours(client, live, receiver, clock):
    t, endpoint = webhook_tenant(client, receiver)
    old = secret_of(client, t, endpoint["id"])
    new = result(post(client, f"{BASE}/endpoints/secret/rotate", {"endpointId": endpoint["id"]}, t.headers))["key"]

    def signatures(request):
        ts = int(request.headers["webhook-timestamp"])
        return request.headers["webhook-signature"].split(" "), [
            sign(k, request.headers["webhook-id"], ts, request.body.decode()) for k in (new, old)
        ]

    notify(client, t, "n1")
    settle(live, t)
    sent, expected = signatures(receiver.requests[0])
    assert sent == expected  # the new secret first, then the old one, each a `v1,` entry
    clock["now"] += 24 * 3600 + 1
    notify(client, t, "n2")
    settle(live, t)
    sent, expected = signatures(receiver.requests[1])
    assert sent == expected[:1]


def test_another_tenants_endpoints_and_messages_are_invisible(client, live, receiver):
    a, endpoint = webhook_tenant(client, receiver)
    receiver.reply(500)
    notify(client, a)
    settle(live, a)
    [message] = messages(client, a)["messages"]
    b = new_tenant(client)
    enable_webhooks(client, b)
    assert result(post(client, f"{BASE}/endpoints/get", {}, b.headers))["data"] == []
    assert messages(client, b) == {"messages": [], "iterator": None, "done": True}
    ref = {"endpointId": endpoint["id"]}
    for path, data in [("endpoints/update", {**ref, "description": "mine"}), ("endpoints/delete", ref),
                       ("endpoints/secret/get", ref), ("endpoints/secret/rotate", ref), ("messages/get", ref),
                       ("messages/retry", {**ref, "messageId": message["id"]})]:
        error(post(client, f"{BASE}/{path}", data, b.headers), "NOT_FOUND")
    # b's own endpoint cannot reach a's message either.
    own = create_endpoint(client, b, receiver.url("/b"))
    error(post(client, f"{BASE}/messages/retry", {"endpointId": own["id"], "messageId": message["id"]}, b.headers),
          "NOT_FOUND")
    assert result(post(client, f"{BASE}/endpoints/get", {}, a.headers))["data"][0]["description"] == ""


# SSRF at registration.


@pytest.mark.parametrize("url", [
    "http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data", "http://[::1]:8080/x", "http://localhost:9/x",
    "http://127.0.0.1/x", "http://[::ffff:127.0.0.1]/x", "https://192.168.1.10/x", "http://0.0.0.0/x",
    "http://[fe80::1]/x", "http://100.100.100.200/x"
])
def test_private_targets_are_refused_at_registration(client, private_targets_refused, url):
    t = new_tenant(client)
    enable_webhooks(client, t)
    err = error(post(client, f"{BASE}/endpoints/create", {"url": url}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["url"]]
    endpoint = create_endpoint(client, t, "https://93.184.215.14/hook")  # a public address is fine
    err = error(post(client, f"{BASE}/endpoints/update", {"endpointId": endpoint["id"], "url": url}, t.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["url"]]


def test_address_checks():
    import ipaddress

    refused = [
        "10.0.0.1", "172.16.0.1", "192.168.0.1", "127.0.0.1", "169.254.169.254", "0.0.0.0", "224.0.0.1", "100.64.0.1",
        "::1", "::", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2002:a00:1::", "fd00:ec2::254",
        "255.255.255.255"
    ]
    allowed = ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
    assert [a for a in refused if not safety.refused_address(ipaddress.ip_address(a))] == []
    assert [a for a in allowed if safety.refused_address(ipaddress.ip_address(a))] == []
    assert asyncio.run(safety.check_registration("http://localhost/x", allow_private=True)) is None
    assert "loopback" in asyncio.run(safety.check_registration("http://LOCALHOST./x", allow_private=False))
