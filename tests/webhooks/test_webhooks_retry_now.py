"""messages/retry on a message waiting for its next scheduled attempt sends it now, never twice at once."""

import dataclasses

from collab.kit.auth import Tenant as Caller
from collab.webhooks import messages as webhook_messages
from collab.webhooks.schemas import RetryMessage
from collab.webhooks.tasks import deliver_webhook
from support.factories import WEBHOOKS as BASE
from support.factories import messages, notify, settle, webhook_tenant
from support.helpers import error, post, result

HOURS_2 = "7200"


def _waiting(client, live, receiver, db):
    """A tenant whose message failed once (503) and waits two hours for its next attempt."""
    t, endpoint = webhook_tenant(client, receiver)
    receiver.reply(503, {"Retry-After": HOURS_2})
    notify(client, t)
    settle(live, t)
    row = db.execute("select * from webhook_deliveries where api_key_id = %s", (t.api_key, )).fetchone()
    assert row["status"] == "pending" and row["attempts"] == 1 and row["due_at"] >= live.svc.now_ms() + 7000_000
    [message] = messages(client, t)["messages"]
    assert message["status"] == "pending" and "nextAttemptAt" in message
    return t, endpoint, message


def _delivery_jobs(db, t):
    return db.execute("select id, status from jobs where api_key_id = %s and function = 'deliver_webhook' order by id",
                      (t.api_key, )).fetchall()


def test_a_retry_sends_a_waiting_message_now(client, live, receiver, clock, db):
    t, endpoint, message = _waiting(client, live, receiver, db)
    retry = {"messageId": message["id"], "endpointId": endpoint["id"]}
    assert result(post(client, f"{BASE}/messages/retry", retry, t.headers)) == {**retry, "status": "queued"}
    settle(live, t)  # the clock has not moved: only the pulled-forward attempt can run
    assert len(receiver.requests) == 2
    [again] = messages(client, t)["messages"]
    assert again["status"] == "succeeded" and [a["statusCode"] for a in again["attempts"]] == [503, 200]
    assert "nextAttemptAt" not in again


def test_a_retry_never_makes_two_deliveries_at_once(client, live, receiver, clock, db):
    t, endpoint, message = _waiting(client, live, receiver, db)
    retry = {"messageId": message["id"], "endpointId": endpoint["id"]}
    jobs_before = _delivery_jobs(db, t)
    # Being sent right now (a worker holds the attempt): refused, nothing more is queued.
    db.execute("update webhook_deliveries set status = 'sending', lease_until = %s where api_key_id = %s",
               (live.svc.now_ms() + 60_000, t.api_key))
    refused = error(post(client, f"{BASE}/messages/retry", retry, t.headers), "FAILED_PRECONDITION")
    assert "being sent" in refused["message"]
    assert _delivery_jobs(db, t) == jobs_before
    db.execute("update webhook_deliveries set status = 'pending', lease_until = null where api_key_id = %s",
               (t.api_key, ))
    # Two retries before the attempt is made (the queue is held back, so neither job runs in between): one job.
    held = dataclasses.replace(live.svc, redis=None)
    caller = Caller(api_key_id=t.api_key, workspace_id=t.workspace["id"])
    data = RetryMessage.model_validate(retry)
    for _ in range(2):
        answer = live.run(webhook_messages.retry(held, tenant=caller, data=data))
        assert answer == {**retry, "status": "queued"}
    new = [j for j in _delivery_jobs(db, t) if j not in jobs_before]
    assert len(new) == 1
    # At-least-once delivery hands the one job over twice: the receiver still gets the message once.
    ctx = {"svc": live.svc, "pool": live.svc.pool}
    for _ in range(2):
        live.run(deliver_webhook(ctx, new[0]["id"]))
    assert len(receiver.requests) == 2
    [again] = messages(client, t)["messages"]
    assert again["status"] == "succeeded" and [a["statusCode"] for a in again["attempts"]] == [503, 200]
