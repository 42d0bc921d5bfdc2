"""Advanced webhooks: delivery, retries on the injected clock, endpoint health, rate limits, payload options."""

import asyncio
import base64
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding as asymmetric
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from standardwebhooks.webhooks import Webhook

from collab.webhooks.delivery import SCHEDULE_S
from collab.webhooks.tasks import deliver_webhook, sweep
from support.factories import WEBHOOKS as BASE
from support.factories import messages, notify, secret_of, settle, webhook_tenant
from support.helpers import error, post, result


def delivery(db, t):
    [row] = db.execute("select * from webhook_deliveries where api_key_id = %s", (t.api_key, )).fetchall()
    return row


def attempts(db, t):
    return db.execute("select * from webhook_attempts where api_key_id = %s order by message_id, attempt",
                      (t.api_key, )).fetchall()


def endpoint_of(client, t):
    [endpoint] = result(post(client, f"{BASE}/endpoints/get", {}, t.headers))["data"]
    return endpoint


def test_retry_schedule_with_jitter_on_the_injected_clock(client, live, receiver, clock, db):
    t, _ = webhook_tenant(client, receiver)
    receiver.reply(500, times=len(SCHEDULE_S))
    notify(client, t)
    settle(live, t)
    for attempt in range(1, len(SCHEDULE_S)):
        row = delivery(db, t)
        made = attempts(db, t)
        assert [a["attempt"] for a in made] == list(range(1, attempt + 1)) and made[-1]["status_code"] == 500
        assert row["status"] == "pending" and row["attempts"] == attempt
        delay = row["due_at"] - made[-1]["at"]
        nominal = SCHEDULE_S[attempt] * 1000
        assert nominal * 0.9 <= delay <= nominal * 1.1, (attempt, delay)
        clock["now"] = (row["due_at"] - 1) / 1000  # a millisecond early: nothing happens
        settle(live, t)
        assert len(attempts(db, t)) == attempt
        clock["now"] = row["due_at"] / 1000
        settle(live, t)
        assert attempts(db, t)[-1]["at"] == row["due_at"]
    row = delivery(db, t)
    assert row["status"] == "failed" and row["attempts"] == 8 and len(receiver.requests) == 8
    # The same message id on every attempt; each attempt signs its own timestamp.
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 1
    assert len({r.headers["webhook-timestamp"] for r in receiver.requests}) == 8
    [message] = messages(client, t)["messages"]
    assert message["status"] == "failed" and [a["statusCode"] for a in message["attempts"]] == [500] * 8
    assert all(set(a) >= {"statusCode", "at", "durationMs"} for a in message["attempts"])


def test_410_disables_the_endpoint(client, live, receiver, db):
    t, endpoint = webhook_tenant(client, receiver)
    receiver.reply(410)
    notify(client, t, "n1")
    settle(live, t)
    assert delivery(db, t)["status"] == "failed"
    found = endpoint_of(client, t)
    assert found["disabled"] is True and "410" in found["disabledReason"]
    notify(client, t, "n2")  # no enabled endpoint takes it: nothing is recorded
    assert len(messages(client, t)["messages"]) == 1 and len(receiver.requests) == 1


def test_redirects_are_not_followed(client, live, receiver, db):
    t, _ = webhook_tenant(client, receiver)
    receiver.reply(302, {"Location": receiver.url("/elsewhere")})
    notify(client, t)
    settle(live, t)
    assert len(receiver.to("/hook")) == 1 and receiver.to("/elsewhere") == []
    [attempt] = attempts(db, t)
    assert attempt["status_code"] == 302 and delivery(db, t)["status"] == "pending"  # a failed attempt, retried


def test_retry_after_is_honoured_and_bounded(client, live, receiver, clock, db):
    t, _ = webhook_tenant(client, receiver)
    receiver.reply(429, {"Retry-After": "120"})
    notify(client, t)
    settle(live, t)
    now = int(clock["now"] * 1000)
    assert delivery(db, t)["due_at"] == now + 120_000
    clock["now"] += 120
    receiver.reply(503, {"Retry-After": "99999999"})
    settle(live, t)
    assert delivery(db, t)["due_at"] == int(clock["now"] * 1000) + 86_400_000
    clock["now"] += 86_400
    receiver.reply(500, {"Retry-After": "1"})  # only 429 and 503 carry a Retry-After we honour
    settle(live, t)
    row = delivery(db, t)
    assert row["attempts"] == 3 and row["due_at"] - int(clock["now"] * 1000) >= SCHEDULE_S[3] * 1000 * 0.9


def test_an_endpoint_failing_for_5_days_is_disabled(client, live, receiver, clock):
    t, _ = webhook_tenant(client, receiver)
    day = 86_400
    start = clock["now"]
    receiver.reply(500, times=100)
    notify(client, t, "n1")
    settle(live, t)
    clock["now"] = start + 3 * day  # a success in between resets the clock of failures
    receiver.reset()
    notify(client, t, "n2")
    settle(live, t)
    assert endpoint_of(client, t)["disabled"] is False
    receiver.reply(500, times=100)
    clock["now"] = start + 6 * day
    notify(client, t, "n3")
    settle(live, t)
    clock["now"] = start + 11 * day - 1
    settle(live, t)
    assert endpoint_of(client, t)["disabled"] is False
    clock["now"] = start + 11 * day
    notify(client, t, "n4")
    settle(live, t)
    found = endpoint_of(client, t)
    assert found["disabled"] is True and "5 days" in found["disabledReason"]
    # Switching it on again starts afresh.
    result(post(client, f"{BASE}/endpoints/update", {"endpointId": found["id"], "disabled": False}, t.headers))
    assert endpoint_of(client, t)["disabledReason"] is None


def test_rate_limit_reschedules_without_failing(client, live, receiver, clock, db):
    t, _ = webhook_tenant(client, receiver, rateLimit=1)
    for i in range(3):
        notify(client, t, f"n{i}")
    settle(live, t)
    assert len(receiver.requests) == 1
    rows = db.execute("select status, attempts, due_at from webhook_deliveries where api_key_id = %s order by status",
                      (t.api_key, )).fetchall()
    next_second = (int(clock["now"]) + 1) * 1000
    assert [(r["status"], r["attempts"], r["due_at"]) for r in rows
            if r["status"] == "pending"] == [("pending", 0, next_second)] * 2
    clock["now"] += 1
    settle(live, t)
    assert len(receiver.requests) == 2
    clock["now"] += 1
    settle(live, t)
    assert len(receiver.requests) == 3
    assert [a["status_code"] for a in attempts(db, t)] == [200, 200, 200]
    assert {m["status"] for m in messages(client, t)["messages"]} == {"succeeded"}


def test_a_job_run_twice_delivers_once_per_attempt(client, live, receiver, clock, db):
    t, _ = webhook_tenant(client, receiver)
    receiver.reply(500)
    notify(client, t)
    settle(live, t)
    clock["now"] = delivery(db, t)["due_at"] / 1000
    ctx = {"svc": live.svc, "pool": live.svc.pool}

    async def run_each_twice():
        await sweep({"svc": live.svc})
        async with live.svc.pool.connection() as conn:
            cur = await conn.execute("select id from jobs where api_key_id = %s and function = 'deliver_webhook'",
                                     (t.api_key, ))
            ids = [r["id"] for r in await cur.fetchall()]
            # As if arq handed every job over again after a crash: the rows say they never finished.
            await conn.execute("update jobs set status = 'queued' where id = any(%s)", (ids, ))
        await asyncio.gather(*(deliver_webhook(ctx, job_id) for job_id in ids for _ in range(2)))
        return ids

    ids = live.run(run_each_twice())
    settle(live, t)
    assert len(ids) == 2
    assert [a["status_code"] for a in attempts(db, t)] == [500, 200] and len(receiver.requests) == 2
    assert delivery(db, t)["status"] == "succeeded"


def test_messages_paging_and_retry(client, live, receiver, clock):
    t, endpoint = webhook_tenant(client, receiver)
    for i in range(5):
        clock["now"] += 1
        notify(client, t, f"n{i}")
    settle(live, t)
    ids = [m["id"] for m in messages(client, t)["messages"]]
    seen, iterator = [], None
    while True:
        page = messages(client, t, endpointId=endpoint["id"], limit=2, **({"iterator": iterator} if iterator else {}))
        seen += [m["id"] for m in page["messages"]]
        iterator = page["iterator"]
        if page["done"]:
            break
    assert seen == ids and len(ids) == 5  # newest first
    receiver.reply(410)
    clock["now"] += 1
    notify(client, t, "gone")
    settle(live, t)
    failed = messages(client, t)["messages"][0]
    assert failed["status"] == "failed"
    retry = {"messageId": failed["id"], "endpointId": endpoint["id"]}
    error(post(client, f"{BASE}/messages/retry", retry, t.headers), "FAILED_PRECONDITION")  # the endpoint is disabled
    result(post(client, f"{BASE}/endpoints/update", {"endpointId": endpoint["id"], "disabled": False}, t.headers))
    queued = result(post(client, f"{BASE}/messages/retry", retry, t.headers))
    assert queued == {**retry, "status": "queued"}
    settle(live, t)
    again = messages(client, t, limit=1)["messages"][0]
    assert again["status"] == "succeeded" and [a["statusCode"] for a in again["attempts"]] == [410, 200]
    error(post(client, f"{BASE}/messages/retry", {**retry, "messageId": "msg_nope"}, t.headers), "NOT_FOUND")


# Payload options.


def _rsa_pair():
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    der = private.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, base64.b64encode(der).decode()


def _decrypt(private, envelope: dict) -> bytes:
    key = private.decrypt(
        base64.b64decode(envelope["encryptedKey"]),
        asymmetric.OAEP(mgf=asymmetric.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
    assert envelope["version"] == 2 and envelope["alg"] == "RSA-OAEP-256+A256GCM"
    return AESGCM(key).decrypt(base64.b64decode(envelope["iv"]), base64.b64decode(envelope["encryptedData"]), None)


def _received(client, live, receiver, config):
    t, endpoint = webhook_tenant(client, receiver, config=config)
    notify(client, t)
    settle(live, t)
    [request] = receiver.requests
    Webhook(secret_of(client, t, endpoint["id"])).verify(request.body, request.headers, json_parse=False)
    return request


def test_encode_data_sends_base64_text(client, live, receiver):
    request = _received(client, live, receiver, {"encodeData": True})
    assert request.headers["content-type"] == "text/plain"
    assert json.loads(base64.b64decode(request.body))["type"] == "notification.add"


def test_encrypt_data_sends_an_rsa_wrapped_aes_envelope(client, live, receiver):
    private, public = _rsa_pair()
    request = _received(client, live, receiver, {"encryptData": True, "publicKey": public})
    envelope = json.loads(request.body)
    assert set(envelope) == {"version", "alg", "encryptedData", "encryptedKey", "iv"}
    assert b"Ana" not in request.body
    assert json.loads(_decrypt(private, envelope))["data"]["payload"]["id"] == "n1"


def test_encode_and_encrypt_encrypt_the_base64_text(client, live, receiver):
    private, public = _rsa_pair()
    request = _received(client, live, receiver, {"encryptData": True, "encodeData": True, "publicKey": public})
    plaintext = _decrypt(private, json.loads(request.body))
    assert json.loads(base64.b64decode(plaintext))["type"] == "notification.add"


def test_encrypt_data_without_a_usable_key_sends_nothing(client, live, receiver, db):
    t, _ = webhook_tenant(client, receiver, config={"encryptData": True})
    # A key stored before publicKey was checked on write (the API refuses it now).
    db.execute('update api_keys set webhook_config = webhook_config || \'{"publicKey": "bm90IGEga2V5"}\' where id = %s',
               (t.api_key, ))
    notify(client, t)
    settle(live, t)
    assert receiver.requests == []
    [message] = messages(client, t)["messages"]
    assert message["status"] == "failed" and "publicKey" in message["error"]


def test_data_protection_strips_personal_fields(client, live, receiver):
    request = _received(client, live, receiver, {"enableDataProtection": True})
    body = json.loads(request.body)
    assert body["data"]["actionUser"] == {"userId": "u0"}
    assert body["data"]["payload"]["notifyUsersByUserId"] == {"u1": True}
    assert body["data"]["payload"]["notifyUsers"] == {}  # keyed by e-mail: gone
    assert b"@example.com" not in request.body and b"Ana" not in request.body


def test_private_targets_are_refused_at_connect_time(client, live, receiver, db):
    t, _ = webhook_tenant(client, receiver)
    result(
        post(client, f"{BASE}/endpoints/update",
             {"endpointId": endpoint_of(client, t)["id"], "url": f"http://localhost:{receiver.port}/hook"}, t.headers))
    live.svc.settings.webhooks_allow_private_targets = False
    try:
        notify(client, t)
        settle(live, t)
    finally:
        live.svc.settings.webhooks_allow_private_targets = True
    assert receiver.requests == []
    [attempt] = attempts(db, t)
    assert attempt["status_code"] is None and attempt["error"].startswith("Refused")
