"""Advanced webhooks: which operation emits which event, filtering by type and channel, the CRDT debounce."""

import json

import pytest

from support.factories import WEBHOOKS as BASE
from support.factories import (
    create_endpoint,
    enable_webhooks,
    messages,
    notify,
    settle,
    webhook_tenant,
)
from support.helpers import add_organization, enable_activities, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model", "model_client")  # derives, searches, calls models


def received(receiver, path="/hook"):
    """The JSON bodies a path received, in order."""
    return [json.loads(r.body) for r in receiver.to(path)]


def comment(client, t, activity_id, action_type="comment_annotation.add", feature="comment", user="u0"):
    body = {
        "organizationId": "o1", "documentId": "d1", "activities": [{
            "id": activity_id, "featureType": feature, "actionType": action_type,
            "actionUser": {"userId": user, "name": f"User {user}"}, "targetEntityId": "ann1",
            "entityData": {"commentText": f"text {activity_id}"}
        }]
    }
    result(post(client, "/v2/activities/add", body, t.headers))


def test_comment_activities_emit_their_action_type(client, live, receiver):
    t, _ = webhook_tenant(client, receiver)
    enable_activities(client, t)
    comment(client, t, "a1")
    comment(client, t, "a2", action_type="comment.reaction_add")
    comment(client, t, "a1")  # an overwrite of a logged activity is not new: no second event
    comment(client, t, "r1", action_type="comment.add", feature="reaction")  # not a comment activity
    comment(client, t, "c1", action_type="custom.thing")
    settle(live, t)
    events = received(receiver)
    assert [(e["type"], e["data"]["payload"]["id"]) for e in events] == [("comment_annotation.add", "a1"),
                                                                         ("comment.reaction_add", "a2")]
    first = events[0]
    assert first["data"]["actionUser"] == {"userId": "u0", "name": "User u0"}
    assert first["data"]["metadata"] == {"apiKey": t.api_key, "organizationId": "o1", "documentId": "d1"}
    assert first["data"]["payload"]["featureType"] == "comment" and first["data"]["payload"]["targetEntityId"] == "ann1"
    assert first["data"]["payload"]["entityData"] == {"commentText": "text a1"}


def test_notifications_emit_notification_add(client, live, receiver):
    t, _ = webhook_tenant(client, receiver)
    notify(client, t, "n1")
    notify(client, t, "n1")  # a repeated id adds nothing
    settle(live, t)
    [event] = received(receiver)
    assert event["type"] == "notification.add" and event["data"]["payload"]["id"] == "n1"
    assert event["data"]["payload"]["notifyUsersByUserId"] == {"u1": True}


def test_the_notification_service_emits_notification_add(client, live, receiver):
    t, _ = webhook_tenant(client, receiver, filterTypes=["notification.add"])
    add_organization(client, t, "o1", "d1")
    result(
        post(client, "/v2/users/add",
             {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u1"}, {"userId": "u2"}]}, t.headers))
    enable_activities(client, t)
    result(post(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, t.headers))
    comment(client, t, "a1")
    settle(live, t)
    [event] = received(receiver)
    assert event["type"] == "notification.add"
    assert event["data"]["payload"]["notificationSource"] == "comment"
    assert event["data"]["payload"]["notifyUsersByUserId"] == {"u1": True, "u2": True}


def test_crdt_changes_are_debounced_per_editor(client, live, receiver, clock):
    t, _ = webhook_tenant(client, receiver)
    start = clock["now"]
    editor = {"organizationId": "o1", "documentId": "d1", "editorId": "e1"}
    result(post(client, "/v2/crdt/add", {**editor, "type": "text", "data": "hello", "userId": "u1"}, t.headers))
    result(post(client, "/v2/crdt/add", {**editor, "editorId": "e2", "type": "text", "data": "x"}, t.headers))
    clock["now"] = start + 2
    result(post(client, "/v2/crdt/update", {**editor, "data": "hello world", "userId": "u2"}, t.headers))
    clock["now"] = start + 4.999
    settle(live, t)
    assert received(receiver) == []
    clock["now"] = start + 5
    settle(live, t)
    events = sorted(received(receiver), key=lambda e: e["data"]["payload"]["editorId"])
    assert [e["type"] for e in events] == ["crdt.update_data"] * 2  # one per editor
    assert events[0]["data"]["payload"] == {
        "organizationId": "o1", "documentId": "d1", "editorId": "e1", "lastUpdatedBy": "u2", "updates": 2,
        "firstUpdateAt": "2027-01-15T08:00:00.000Z", "lastUpdateAt": "2027-01-15T08:00:02.000Z"
    }
    assert events[0]["data"]["actionUser"] == {"userId": "u2"}
    clock["now"] = start + 6
    result(post(client, "/v2/crdt/update", {**editor, "data": "again"}, t.headers))
    settle(live, t)
    assert len(received(receiver)) == 2
    clock["now"] = start + 11
    settle(live, t)
    assert len(received(receiver)) == 3


def test_document_migration_emits_completed_and_failed(client, live, receiver):
    t, _ = webhook_tenant(client, receiver, filterTypes=["document.migrate"])
    add_organization(client, t, "o1", "d1", "d2", "taken")
    migrate = "/v2/organizations/documents/migrate"
    ok = result(
        post(client, migrate, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d1-new"}, t.headers))
    settle_jobs(live, t)
    bad = result(
        post(client, migrate, {"organizationId": "o1", "documentId": "d2", "newDocumentId": "taken"}, t.headers))
    settle_jobs(live, t)
    settle(live, t)
    payloads = [e["data"]["payload"] for e in received(receiver)]
    assert payloads[0] == {
        "migrationId": ok["migrationId"], "status": "completed", "documentId": "d1", "newDocumentId": "d1-new"
    }
    assert payloads[1]["migrationId"] == bad["migrationId"] and payloads[1]["status"] == "failed"
    assert payloads[1]["newDocumentId"] == "taken" and payloads[1]["reason"]
    assert len(payloads) == 2


def test_user_data_deletion_emits_when_complete(client, live, receiver):
    t, _ = webhook_tenant(client, receiver, filterTypes=["user_data.delete"])
    response = post(client, "/v2/users/data/delete", {"userIds": ["u1"], "organizationIds": ["o1"]}, t.headers)
    assert response.status_code == 202
    job_id = response.json()["data"]["jobId"]
    settle_jobs(live, t)
    settle(live, t)
    [event] = received(receiver)
    assert event["type"] == "user_data.delete"
    assert event["data"]["payload"] == {"jobId": job_id, "userIds": ["u1"], "organizationIds": ["o1"]}
    assert event["data"]["metadata"] == {"apiKey": t.api_key, "organizationId": None, "documentId": None}


def test_filter_types_and_channels_choose_endpoints(client, live, receiver):
    t = new_tenant(client)
    enable_webhooks(client, t)
    create_endpoint(client, t, receiver.url("/comments"), filterTypes=["comment.add"])
    create_endpoint(client, t, receiver.url("/notifications"), filterTypes=["notification.add"])
    create_endpoint(client, t, receiver.url("/all"))
    create_endpoint(client, t, receiver.url("/o1"), channels=["o1"])
    create_endpoint(client, t, receiver.url("/o2"), channels=["o2"])
    create_endpoint(client, t, receiver.url("/off"), disabled=True)
    notify(client, t)
    settle(live, t)
    assert sorted(r.path for r in receiver.requests) == ["/all", "/notifications", "/o1"]
    [message] = messages(client, t)["messages"]
    assert message["status"] == "succeeded" and len(message["attempts"]) == 3


def test_nothing_is_recorded_when_no_endpoint_takes_the_event(client, live, receiver):
    t, endpoint = webhook_tenant(client, receiver, filterTypes=["comment.add"])
    notify(client, t, "n1")
    result(post(client, f"{BASE}/endpoints/update", {"endpointId": endpoint["id"], "filterTypes": None}, t.headers))
    result(post(client, "/v2/workspace/advancedwebhookconfig/update", {"isEnabled": False}, t.headers))
    notify(client, t, "n2")
    result(post(client, "/v2/workspace/advancedwebhookconfig/update", {"isEnabled": True}, t.headers))
    settle(live, t)
    assert receiver.requests == [] and messages(client, t)["messages"] == []


def test_user_data_deletion_removes_the_messages_about_the_user(client, live, receiver):
    t, _ = webhook_tenant(client, receiver)
    add_organization(client, t, "o1", "d1")
    enable_activities(client, t)
    comment(client, t, "by-u1", user="u1")
    comment(client, t, "by-u2", user="u2")
    notify(client, t, "n1")  # u0 notifies u1: a message about u1 too
    settle(live, t)
    assert len(messages(client, t)["messages"]) == 3
    response = post(client, "/v2/users/data/delete", {"userIds": ["u1"]}, t.headers)
    assert response.status_code == 202
    settle_jobs(live, t)
    settle(live, t)
    left = [m["eventType"] for m in messages(client, t)["messages"]]
    # u2's comment stays; u1's comment and the notification to u1 are gone; the deletion's own event is new.
    assert sorted(left) == ["comment_annotation.add", "user_data.delete"]
