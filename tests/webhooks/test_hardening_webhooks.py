"""Hardening of webhooks and the shared notification/webhook crons (issue #14 items 2, 4, 5 and 9's AES point)."""

import base64
import json

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding as asymmetric
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from psycopg.types.json import Jsonb

from collab.notifications.engine import FLUSH_FAILED
from collab.webhooks import repository as webhooks_repo
from collab.webhooks.delivery import LOST, MAX_LOST_LEASES
from collab.webhooks.tasks import sweep
from support.factories import (
    DELAYED,
    batches,
    comment,
    create_endpoint,
    delayed_batch_and_failed_delivery,
    enable_webhooks,
    flush,
    messages,
    notifications,
    notify,
    service_tenant,
    settle,
    webhook_tenant,
)
from support.factories import WEBHOOKS as BASE
from support.helpers import error, issue_paths, new_tenant, post, result
from support.pathological_webhooks import BIG_INTEGERS, PUBLIC_KEYS, URLS, short_rsa_key

CONFIG = "/v2/workspace/advancedwebhookconfig/update"


def _rsa_pair(bits=2048):
    private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    der = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, base64.b64encode(der).decode()


# Item 5: URLs that passed the schema but crashed the guard.


@pytest.mark.parametrize("allow_private", [True, False])
def test_pathological_urls_are_invalid_argument_on_create_and_update(client, live, allow_private):
    t = new_tenant(client)
    enable_webhooks(client, t)
    endpoint = create_endpoint(client, t, "https://93.184.215.14/hook")
    live.svc.settings.webhooks_allow_private_targets = allow_private
    try:
        for url in URLS:
            for path, data in (("endpoints/create", {"url": url}), ("endpoints/update",
                                                                    {"endpointId": endpoint["id"], "url": url})):
                response = post(client, f"{BASE}/{path}", data, t.headers)
                assert response.status_code == 400, (url, path, response.status_code, response.text)
                assert issue_paths(error(response, "INVALID_ARGUMENT")) == [["url"]], url
    finally:
        live.svc.settings.webhooks_allow_private_targets = True
    # Nothing was stored; a plain public URL (and an IDN one) still works.
    listed_endpoints = result(post(client, f"{BASE}/endpoints/get", {}, t.headers))["data"]
    assert [e["url"] for e in listed_endpoints] == ["https://93.184.215.14/hook"]
    create_endpoint(client, t, "https://b\u00fccher.example/hook")


# Item 4: publicKey checked on write.


def test_public_key_must_be_a_base64_der_rsa_key_of_2048_bits(client):
    t = new_tenant(client)
    result(post(client, CONFIG, {"isEnabled": True}, t.headers))
    for key in PUBLIC_KEYS:
        err = error(post(client, CONFIG, {"publicKey": key, "encryptData": True}, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["publicKey"]], key[:40]
    stored = result(post(client, "/v2/workspace/advancedwebhookconfig/get", {}, t.headers))
    assert stored["publicKey"] == "" and stored["encryptData"] is False  # a refused update changes nothing
    _, good = _rsa_pair()
    assert result(post(client, CONFIG, {"publicKey": good, "encryptData": True}, t.headers))["publicKey"] == good
    assert result(post(client, CONFIG, {"publicKey": ""}, t.headers))["publicKey"] == ""  # clearing stays allowed


# Item 9 (AES): an authenticated encryption with a version flag.


def test_encrypted_body_is_versioned_aes_gcm_and_tampering_is_detected(client, live, receiver):
    private, public = _rsa_pair()
    t, endpoint = webhook_tenant(client, receiver, config={"encryptData": True, "publicKey": public})
    notify(client, t)
    settle(live, t)
    [request] = receiver.requests
    envelope = json.loads(request.body)
    assert envelope["version"] == 2 and envelope["alg"] == "RSA-OAEP-256+A256GCM"
    key = private.decrypt(
        base64.b64decode(envelope["encryptedKey"]),
        asymmetric.OAEP(mgf=asymmetric.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
    iv, data = base64.b64decode(envelope["iv"]), base64.b64decode(envelope["encryptedData"])
    assert len(iv) == 12
    assert json.loads(AESGCM(key).decrypt(iv, data, None))["data"]["payload"]["id"] == "n1"
    flipped = data[:-1] + bytes([data[-1] ^ 1])
    with pytest.raises(InvalidTag):
        AESGCM(key).decrypt(iv, flipped, None)


# Item 2: one tenant's poison cannot stop the shared crons.


def _plant(db, sql, *args):
    db.execute(sql, args)


def test_poisoned_tenants_cannot_stop_other_tenants_crons(client, live, receiver, clock, db):
    # B, an honest tenant: a delayed notification due in 20 s, and a webhook whose first attempt fails.
    b, first = delayed_batch_and_failed_delivery(client, live, receiver)
    now = int(clock["now"] * 1000)

    # A1: encryptData under a 512-bit key (stored before keys were checked), a due batch and a CRDT window.
    a1 = service_tenant(client, DELAYED)
    enable_webhooks(client, a1)
    create_endpoint(client, a1, receiver.url("/a"), filterTypes=["notification.add", "crdt.update_data"])
    comment(client, a1, "a1")
    # A2: a pending event whose entityData holds an integer beyond 64 bits (stored before ingress refused it).
    a2 = service_tenant(client, DELAYED)
    enable_webhooks(client, a2)
    create_endpoint(client, a2, receiver.url("/a"), filterTypes=["notification.add"])
    comment(client, a2, "a2")
    # A3: a pending event whose stored actor is not an object at all.
    a3 = service_tenant(client, DELAYED)
    comment(client, a3, "a3")
    poisoned = [a1.api_key, a2.api_key, a3.api_key]
    try:
        _plant(db, "update api_keys set webhook_config = webhook_config || %s where id = %s",
               Jsonb({"encryptData": True, "publicKey": short_rsa_key(512)}), a1.api_key)
        _plant(
            db, "insert into webhook_crdt_pending (api_key_id, organization_id, document_id, editor_id, first_at,"
            " last_at, due_at) values (%s, 'o1', 'd1', 'e1', %s, %s, %s)", a1.api_key, now, now, now + 20_000)
        _plant(db, "update notification_batch_items set entity_data = entity_data || %s where api_key_id = %s",
               Jsonb({"n": BIG_INTEGERS[-1]}), a2.api_key)
        _plant(db, "update notification_batch_items set action_user = '\"corrupt\"'::jsonb where api_key_id = %s",
               a3.api_key)

        clock["now"] += 20
        flush(live)
        assert batches(client, b) == [["b1"]]  # B's delayed notification arrived
        clock["now"] += 6  # B's retry (5 s ± 10 %) is due
        settle(live, b)
        hooks = receiver.to("/b")
        assert [h.headers["webhook-id"] for h in hooks].count(first.headers["webhook-id"]) == 2  # the retry arrived
        sent = sorted(json.loads(h.body)["data"]["payload"]["id"] for h in hooks)
        assert len(sent) == 3 and sent[:2] == ["direct", "direct"] and sent[2].startswith("ntf_")  # and the batch's

        # The poisoned tenants see why in their own message log; nothing was sent for them.
        assert receiver.to("/a") == []
        a1_log = messages(client, a1)["messages"]
        assert sorted(m["eventType"] for m in a1_log) == ["crdt.update_data", "notification.add"]
        assert all(m["status"] == "failed" and "2048 bits" in m["error"] for m in a1_log), a1_log
        [a2_message] = messages(client, a2)["messages"]
        assert a2_message["status"] == "failed" and "64-bit" in a2_message["error"]
        assert [r["notificationSourceData"]["activityIds"]
                for r in notifications(client, a2, documentId="d1")["data"]] == [["a2"]]

        # A3's batch is tried again after 1 and 5 minutes, then failed for good with its reason; never again.
        def a3_batch():
            return db.execute("select status, attempts, error from notification_batches where api_key_id = %s",
                              (a3.api_key, )).fetchone()

        assert (a3_batch()["attempts"], a3_batch()["error"]) == (1, FLUSH_FAILED)
        for step, tries in ((60, 2), (300, 3), (3600, 3)):
            clock["now"] += step
            flush(live)
            assert a3_batch()["attempts"] == tries
        assert a3_batch()["status"] == "failed" and notifications(client, a3, documentId="d1")["data"] == []
        # The crons still serve B.
        comment(client, b, "b2")
        clock["now"] += 20
        flush(live)
        assert batches(client, b) == [["b1"], ["b2"]]
    finally:
        for table in ("notification_batches", "webhook_crdt_pending", "webhook_messages"):
            db.execute(f"delete from {table} where api_key_id = any(%s)", (poisoned, ))
        db.execute("update api_keys set webhook_config = webhook_config - 'publicKey' where id = any(%s)", (poisoned, ))


def test_a_send_that_never_finishes_is_given_up_with_its_reason(client, live, receiver, clock, db):
    t, _ = webhook_tenant(client, receiver)
    receiver.reply(500)
    notify(client, t)
    settle(live, t)
    now = int(clock["now"] * 1000)
    # As if its job had died MAX_LOST_LEASES times already: the row says `sending`, its lease over.
    db.execute(
        "update webhook_deliveries set status = 'sending', lease_until = %s, lost_leases = %s where api_key_id = %s",
        (now - 1, MAX_LOST_LEASES, t.api_key))
    live.run(sweep({"svc": live.svc}))
    [message] = messages(client, t)["messages"]
    assert message["status"] == "failed"
    assert [(a["attempt"], a["statusCode"], a["error"]) for a in message["attempts"]] == [(1, 500, None),
                                                                                          (2, None, LOST)]
    clock["now"] += 86_400
    settle(live, t)
    assert len(receiver.requests) == 1  # never sent again


def test_sweep_takes_every_tenants_due_deliveries_in_turns(client, live, receiver, clock, db):
    busy, _ = webhook_tenant(client, receiver, path="/busy")
    quiet, _ = webhook_tenant(client, receiver, path="/quiet")
    receiver.reply(500, times=6)
    for i in range(5):
        notify(client, busy, f"n{i}")
    notify(client, quiet, "q")
    settle(live, busy)
    settle(live, quiet)
    now = int(clock["now"] * 1000)
    # The busy tenant's five retries fall due first; the quiet one's a second later (set outright: which sends
    # the receiver failed depends on the order the worker ran them in).
    for key, due in ((busy.api_key, now + 100_000), (quiet.api_key, now + 101_000)):
        db.execute(
            "update webhook_deliveries set status = 'pending', due_at = %s, lease_until = null where api_key_id = %s",
            (due, key))

    async def take_two():
        async with live.svc.pool.connection() as conn:
            async with conn.transaction(force_rollback=True):  # looks only: locks nothing past this
                # Deliveries other tests left waiting are set aside (undone with the rollback): two tenants here.
                await conn.execute(
                    "update webhook_deliveries set due_at = due_at + 1e13, lease_until = lease_until + 1e13"
                    " where api_key_id <> all(%s)", ([busy.api_key, quiet.api_key], ))
                return await webhooks_repo.due_deliveries(conn, now=now + 200_000, limit=2)

    try:
        rows = live.run(take_two())
        assert sorted(r["api_key_id"] for r in rows) == sorted([busy.api_key, quiet.api_key])
    finally:
        db.execute("delete from webhook_messages where api_key_id = any(%s)", ([busy.api_key, quiet.api_key], ))
