"""Builders the test modules share: request bodies, seeded tenants and list reads (helpers.py holds the HTTP basics).

A test module never imports another test module; what two of them need lives here.
"""

import threading

from collab.notifications.tasks import flush_due
from collab.testing.receiver import settle_webhooks
from support.helpers import add_organization, enable_activities, enable_advanced_queries, new_tenant, post, result

WEBHOOKS = "/v2/workspace/advancedwebhook"
ANA = {"userId": "u1", "name": "Ana", "email": "ana@example.com"}
DELAYED = {"delayConfig": {"isEnabled": True, "delaySeconds": 20}}

# Reads.


def page_of(client, path, t, **data):
    """The `result` of one request to a list operation, which must answer 200."""
    response = post(client, path, data, t.headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def triples(decoded):
    """A decoded checklist's tasks as (text, category, source)."""
    return [(t.text, t.category, t.source) for t in decoded.tasks]


# Activities.


def activity(**fields):
    """A comment activity by Ana (u1)."""
    return {"featureType": "comment", "actionType": "comment.add", "actionUser": ANA, **fields}


def judged(record_id, reasoning, *, action="comment_annotation.reject", ts=None, target="ann1", user="u1", **extra):
    """A review activity whose `reasoning` becomes a judgment (`entity` adds entityData fields)."""
    record = {
        "id": record_id, "featureType": "comment", "actionType": action,
        "actionUser": {"userId": user, "name": f"User {user}"}, "targetEntityId": target,
        "entityData": {"reasoning": reasoning, **extra.pop("entity", {})}, **extra
    }
    if ts is not None:
        record["timestamp"] = ts
    return record


def add_activities(client, t, *activities, org="org1", doc="doc1"):
    """The response to adding `activities` to one document."""
    return post(client, "/v2/activities/add",
                {"organizationId": org, "documentId": doc, "activities": list(activities)}, t.headers)


def rejections_tenant(client, live, texts):
    """A fresh tenant whose judgments j0, j1, ... reject for these reasons, derived and embedded."""
    from support.helpers import settle_jobs

    t = new_tenant(client)
    enable_activities(client, t)
    result(add_activities(client, t, *(judged(f"j{i}", text) for i, text in enumerate(texts))))
    settle_jobs(live, t)
    return t


def comment(client, t, activity_id, user="u0", **entity):
    """Log a comment_annotation.add activity on o1/d1 (`entity` adds entityData fields)."""
    body = {
        "organizationId": "o1", "documentId": "d1", "activities": [{
            "id": activity_id, "featureType": "comment", "actionType": "comment_annotation.add",
            "actionUser": {"userId": user,
                           "name": f"User {user}"}, "entityData": {"commentText": f"text {activity_id}", **entity}
        }]
    }
    result(post(client, "/v2/activities/add", body, t.headers))


# Notifications.


def notifications(client, t, **data):
    """One page of notifications of o1 (or of the organization `data` names)."""
    return page_of(client, "/v2/notifications/get", t, **{"organizationId": "o1", **data})


def ping(client, t, by, to, notification_id=None, doc="d1"):
    """Add a notification on o1/`doc` from user `by` to user `to` only."""
    body = {
        "organizationId": "o1", "documentId": doc, "notifyAll": False, "actionUser": {"userId": by},
        "displayHeadlineMessageTemplate": "{actionUser} pinged you", "displayBodyMessage": "hi",
        "notifyUsers": [{"userId": to}], **({"notificationId": notification_id} if notification_id else {})
    }
    return result(post(client, "/v2/notifications/add", body, t.headers))


def tenant_with_users(client, *org_users, doc_users=()):
    """A tenant with advanced queries on and o1/d1 holding these organization and document users."""
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    enable_advanced_queries(client, t)
    if org_users:
        result(
            post(client, "/v2/users/add", {"organizationId": "o1", "users": [{"userId": u} for u in org_users]},
                 t.headers))
    if doc_users:
        result(
            post(client, "/v2/users/add",
                 {"organizationId": "o1", "documentId": "d1", "users": [{"userId": u} for u in doc_users]}, t.headers))
    return t


def service_tenant(client, config=None, doc_users=("u1", "u2")):
    """A tenant whose comment activities on o1/d1 become notifications (the notification service)."""
    t = tenant_with_users(client, doc_users=doc_users)
    enable_activities(client, t)
    body = {"useNotificationService": True, **({"notificationServiceConfig": config} if config else {})}
    result(post(client, "/v2/workspace/notificationconfig/update", body, t.headers))
    return t


# Due batches, waiting for any a concurrent flush holds (the live worker's own cron runs every 5 s and skips them).
_DUE_BATCHES = "select id from notification_batches where status in ('open', 'closed') and due_at <= %(now)s for update"


def flush(live):
    """Run the notification service's flush cron until no batch is due (by the injected clock)."""

    async def until_none_due():
        while True:
            await flush_due({"svc": live.svc})
            async with live.svc.pool.connection() as conn:
                cur = await conn.execute(_DUE_BATCHES, {"now": live.svc.now_ms()})
                if not await cur.fetchall():
                    return

    live.run(until_none_due())


def batches(client, t):
    """activityIds of each service notification, sorted (notifications of one instant have no order)."""
    records = notifications(client, t, documentId="d1", order="asc")["data"]
    return sorted(r["notificationSourceData"]["activityIds"] for r in records if r["notificationSource"] == "comment")


# Webhooks.


def enable_webhooks(client, t, **config):
    """Turn advanced webhooks on for the tenant (with `config`)."""
    return result(post(client, "/v2/workspace/advancedwebhookconfig/update", {"isEnabled": True, **config}, t.headers))


def create_endpoint(client, t, url, **fields):
    """Register a webhook endpoint at `url`."""
    return result(post(client, f"{WEBHOOKS}/endpoints/create", {"url": url, **fields}, t.headers))


def webhook_tenant(client, receiver, path="/hook", config=None, **fields):
    """A tenant with webhooks on and one endpoint at the receiver."""
    t = new_tenant(client)
    enable_webhooks(client, t, **(config or {}))
    return t, create_endpoint(client, t, receiver.url(path), **fields)


def secret_of(client, t, endpoint_id):
    """An endpoint's signing secret."""
    return result(post(client, f"{WEBHOOKS}/endpoints/secret/get", {"endpointId": endpoint_id}, t.headers))["key"]


def notify(client, t, notification_id="n1", **fields):
    """Add a notification (a `notification.add` event), creating its organization and document."""
    body = {
        "organizationId": "o1", "documentId": "d1", "notificationId": notification_id, "notifyAll": False,
        "actionUser": {"userId": "u0", "name": "Ana",
                       "email": "ana@example.com"}, "displayHeadlineMessageTemplate": "{actionUser} pinged you",
        "displayBodyMessage": "Hello", "notifyUsers": [{"userId": "u1", "email": "u1@example.com"}],
        "createOrganization": True, "createDocument": True, **fields
    }
    return result(post(client, "/v1/notifications/add", body, t.headers))


def settle(live, t):
    """Run every webhook delivery of the tenant to its end."""
    live.run(settle_webhooks(live.svc, t.api_key), timeout=120)


def messages(client, t, **data):
    """The tenant's webhook messages (Svix shape)."""
    return result(post(client, f"{WEBHOOKS}/messages/get", data, t.headers))


def delayed_batch_and_failed_delivery(client, live, receiver):
    """A tenant with a comment (b1) batched for 20 s and a webhook at /b whose first attempt failed: (tenant, that
    attempt)."""
    t = service_tenant(client, DELAYED)
    enable_webhooks(client, t)
    create_endpoint(client, t, receiver.url("/b"), filterTypes=["notification.add"])
    receiver.reply(500)
    notify(client, t, "direct")
    settle(live, t)
    [first] = receiver.to("/b")
    comment(client, t, "b1")
    return t, first


# Worker drills.


def with_own_key(client):
    """A tenant with its own OpenAI key (off the platform key's quota)."""
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-own-key"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    return t


def release(fake) -> None:
    """Let every hanging fake-provider call answer (later `hang` scripts hang again)."""
    fake.loop.call_soon_threadsafe(lambda: (fake.release.set(), fake.release.clear()))


def wait_for(condition, what: str, limit_s: float = 60) -> None:
    """Wait for a state the service reaches on its own (not a fixed delay)."""
    pause = threading.Event()
    for _ in range(int(limit_s / 0.02)):
        if condition():
            return
        pause.wait(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# Seeds.


def seed_document(client, t, *, to, notification_id=None):
    """o1/d1 with u1's grant, presence, recording, CRDT content and notification to `to`; o1/keep empty."""
    add_organization(client, t, "o1", "d1", "keep")
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u1"}]},
             t.headers))
    ping(client, t, "u1", to, notification_id)
    result(
        post(client, "/v2/presence/update", {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u1"}]},
             t.headers))
    result(
        post(
            client, "/v2/recordings/add", {
                "organizationId": "o1", "documentId": "d1", "recordings": [{
                    "annotationId": "rec1", "recordingType": "screen", "mode": "floating", "displayName": "Demo",
                    "recordedTime": {"duration": 5000}, "from": {"userId": "u1"}, "attachments": [{
                        "url": "https://cdn.example.com/r.webm", "mimeType": "video/webm", "name": "r.webm",
                        "type": "video", "size": 100
                    }]
                }]
            }, t.headers))
    result(
        post(client, "/v2/crdt/add", {
            "organizationId": "o1", "documentId": "d1", "editorId": "e1", "type": "text", "data": "hello",
            "userId": "u1"
        }, t.headers))


# Review agents (agents/*).

AGENTS = "/v2/agents"


def agent_body(**fields):
    """Velt's minimal agent (its docs' example 1), with `fields` on top."""
    return {
        "name": "Simple Content Checker", "description": "Checks for broken images and missing alt text",
        "enabled": True, "instructions": "Check for broken images and missing alt text on the page.",
        "contextGathering": {"strategies": ["web-page-html"]}, "execution": {}, **fields
    }


def create_agent(client, t, **fields):
    """A new agent's id."""
    return result(post(client, f"{AGENTS}/create", agent_body(**fields), t.headers))["agentId"]


def create_group(client, t, **fields):
    """A new agent group as answered."""
    return result(post(client, f"{AGENTS}/groups/create", {"name": "Brand QA", **fields}, t.headers))["group"]
