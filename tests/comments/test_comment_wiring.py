"""Comment writes wired through activities (→ judgments → search), webhooks, notifications (mentions once,
private threads, triggerNotification), document migration and user-data deletion."""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.factories import create_endpoint, enable_webhooks, settle
from support.helpers import (
    add_organization,
    enable_activities,
    enable_advanced_queries,
    new_tenant,
    post,
    result,
    settle_jobs,
)

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

BASE = "/v2/commentannotations"
WHERE = {"organizationId": "org", "documentId": "doc"}


def setup(client, *users, notifications=False, activities=True):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc", "doc2")
    if users:
        result(post(client, "/v2/users/add", {**WHERE, "users": [{"userId": u} for u in users]}, t.headers))
    if activities:
        enable_activities(client, t)
    if notifications:
        result(post(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, t.headers))
        enable_advanced_queries(client, t)
    return t


def add(client, t, annotation_id, text="hello", user="u1", **more):
    body = {
        **WHERE, "commentAnnotations": [{
            "annotationId": annotation_id,
            "commentData": [{"commentText": text, "from": {"userId": user}, **more.pop("comment", {})}], **more
        }]
    }
    return result(post(client, f"{BASE}/add", body, t.headers))


def activities(client, t, **filters):
    return result(post(client, "/v2/activities/get", {"organizationId": "org", "order": "asc", **filters}, t.headers))


def notifications(client, t):
    return result(post(client, "/v2/notifications/get", {**WHERE, "pageSize": 100}, t.headers))


def edit_and_react(client, t, thread, reaction):
    """Edit comment 2 of the thread, then add and take back a reaction of u2's on comment 1."""
    steps = [("update", {"commentIds": [2], "updatedData": {"commentText": "e"}})]
    steps += [(f"reactions/{action}", {"commentId": 1, "reaction": reaction, "userId": "u2"})
              for action in ("add", "delete")]
    for path, body in steps:
        result(post(client, f"{BASE}/comments/{path}", {**thread, **body}, t.headers))


def test_each_write_logs_its_activity(client, live, clock):
    t = setup(client)
    add(client, t, "a1", assignedTo={"userId": "x"})
    thread = {**WHERE, "annotationId": "a1"}
    result(
        post(
            client, f"{BASE}/comments/add", {
                **thread, "commentData": [{"commentText": "reply", "from": {"userId": "u2"}}, {
                    "commentText": "quiet", "from": {"userId": "u2"}, "triggerActivities": False
                }]
            }, t.headers))
    edit_and_react(client, t, thread, "👍")
    result(
        post(
            client, f"{BASE}/update", {
                **WHERE, "annotationIds": ["a1"], "actionUser": {"userId": "boss"},
                "updatedData": {"status": {"id": "resolved"}, "assignedTo": {"userId": "y"}, "priority": {"id": "P1"}}
            }, t.headers))
    result(post(client, f"{BASE}/comments/delete", {**thread, "commentIds": [2]}, t.headers))
    logged = activities(client, t)
    # One instant (the clock stands still): compared as a set of types.
    assert sorted(a["actionType"] for a in logged) == sorted([
        "comment_annotation.add", "comment.add", "comment.update", "comment.reaction_add", "comment.reaction_delete",
        "comment_annotation.status_change", "comment_annotation.assign", "comment_annotation.priority_change",
        "comment.delete"
    ])
    by_type = {a["actionType"]: a for a in logged}
    first = by_type["comment_annotation.add"]
    assert first["targetEntityId"] == "a1" and first["actionUser"] == {"userId": "u1"}
    assert first["entityData"]["commentText"] == "hello"
    assert first["entityData"]["commentAnnotation"]["annotationId"] == "a1"
    status = by_type["comment_annotation.status_change"]
    assert status["changes"] == {"status": {"from": "open", "to": "resolved"}}
    assert status["actionUser"] == {"userId": "boss"}


def test_the_trigger_map_decides_what_is_logged(client):
    t = setup(client)
    result(
        post(client, "/v2/workspace/activityconfig/update",
             {"activityServiceConfig": {"triggers": {"comment": {"comment_annotation.add": False}}}}, t.headers))
    add(client, t, "a1")
    assert activities(client, t) == []
    t2 = setup(client, activities=False)
    add(client, t2, "a1")
    assert activities(client, t2) == []


def test_judgments_derive_from_a_stored_thread_and_search_reads_it(client, live):
    t = setup(client)
    add(client, t, "thread", "The discount claim needs the original price.", targetElement={"targetText": "50% off"})
    result(
        post(
            client, f"{BASE}/comments/add", {
                **WHERE, "annotationId": "thread",
                "commentData": [{"commentText": "Agreed, add the original price.", "from": {"userId": "u2"}}]
            }, t.headers))
    result(
        post(
            client, f"{BASE}/update", {
                **WHERE, "annotationIds": ["thread"], "actionUser": {"userId": "u3"},
                "updatedData": {"status": {"id": "resolved"}}
            }, t.headers))
    settle_jobs(live, t)
    out = result(
        post(client, "/v2/memory/judgments/query", {"organizationId": "org", "annotationId": "thread"}, t.headers))
    assert sorted(j["decision"] for j in out) == ["comment", "comment", "resolve"]
    found = post(client, "/v2/memory/search",
                 {"query": "price", "organizationId": "org", "filters": {"annotationId": "thread"}},
                 t.headers).json()["result"]
    texts = [r.get("reasoning") or r.get("content") for r in found["results"]]
    assert len(found["results"]) == 3
    assert any("original price" in json.dumps(r) for r in found["results"]), texts


def test_webhooks_carry_a_snapshot_of_the_thread_for_each_event(client, live, receiver):
    t = setup(client, activities=False)
    enable_webhooks(client, t)
    create_endpoint(client, t, receiver.url("/c"))
    add(client, t, "a1", context={"k": "v"})
    thread = {**WHERE, "annotationId": "a1"}
    result(
        post(client, f"{BASE}/comments/add",
             {**thread, "commentData": [{"commentText": "r", "from": {"userId": "u2"}}]}, t.headers))
    edit_and_react(client, t, thread, "+1")
    result(
        post(
            client, f"{BASE}/update", {
                **WHERE, "annotationIds": ["a1"], "updatedData": {
                    "status": {"id": "in_progress"}, "assignedTo": {"userId": "z"}, "priority": {"id": "P0"}
                }
            }, t.headers))
    result(post(client, f"{BASE}/comments/delete", {**thread, "commentIds": [2]}, t.headers))
    settle(live, t)
    events = [json.loads(r.body) for r in receiver.to("/c")]
    assert sorted(e["type"] for e in events) == sorted([
        "comment_annotation.add", "comment.add", "comment.update", "comment.reaction_add", "comment.reaction_delete",
        "comment_annotation.status_change", "comment_annotation.assign", "comment_annotation.priority_change",
        "comment.delete"
    ])
    for event in events:
        annotation = event["data"]["payload"]["entityData"]["commentAnnotation"]
        # Ids and small fields; the thread's free-form blobs (context here) stay out of every event (issue #34).
        assert annotation["annotationId"] == "a1" and annotation["from"] == {"userId": "u1"}
        assert "context" not in annotation and annotation["visibility"] == {"type": "public"}
        assert event["data"]["metadata"]["documentId"] == "doc"


def test_new_comments_notify_participants_and_mentions_notify_once(client, live):
    t = setup(client, "u1", "u2", "u3", notifications=True)
    add(client, t, "a1", comment={"taggedUserContacts": [{"userId": "m"}]})
    notes = notifications(client, t)
    mention = [n for n in notes if n["displayHeadlineMessageTemplate"].endswith("mentioned you in a comment")]
    assert [n["notifyUsersByUserId"] for n in mention] == [{"m": True}]
    general = [n for n in notes if n not in mention]
    assert [n["notifyUsersByUserId"] for n in general] == [{"u2": True, "u3": True}]  # not the actor, not m again
    # A retry of the same add (same id), many at once, notifies nobody again.
    with ThreadPoolExecutor(5) as pool:
        list(pool.map(lambda _: add(client, t, "a1", comment={"taggedUserContacts": [{"userId": "m"}]}), range(5)))
    # Concurrent edits tagging the same user again mention them once.
    body = {
        **WHERE, "annotationId": "a1", "commentIds": [1],
        "updatedData": {"taggedUserContacts": [{"userId": "m"}, {"userId": "n"}]}
    }
    with ThreadPoolExecutor(5) as pool:
        list(pool.map(lambda _: result(post(client, f"{BASE}/comments/update", body, t.headers)), range(5)))
    heads = [
        n for n in notifications(client, t)
        if n["displayHeadlineMessageTemplate"].endswith("mentioned you in a comment")
    ]
    assert sorted(list(n["notifyUsersByUserId"]) for n in heads) == [["m"], ["n"]]


def test_private_threads_notify_only_who_may_see_them_and_trigger_false_skips(client, live):
    t = setup(client, "u1", "u2", "u3", notifications=True)
    add(client, t, "p1", visibility={"type": "restricted", "userIds": ["u2"]},
        comment={"taggedUserContacts": [{"userId": "u3"}]})
    notes = notifications(client, t)
    assert [n["notifyUsersByUserId"] for n in notes] == [{"u2": True}]
    add(client, t, "quiet", comment={"triggerNotification": False, "taggedUserContacts": [{"userId": "u3"}]})
    assert len(notifications(client, t)) == 1


def test_migration_moves_threads_and_deletion_removes_a_users_parts(client, live):
    t = setup(client)
    add(client, t, "mine", "by gone", user="gone")
    add(client, t, "theirs", "by keep", user="keep", comment={"taggedUserContacts": [{"userId": "gone"}]},
        assignedTo={"userId": "gone"})
    thread = {**WHERE, "annotationId": "theirs"}
    result(
        post(client, f"{BASE}/comments/add",
             {**thread, "commentData": [{"commentText": "gone's reply", "from": {"userId": "gone"}}]}, t.headers))
    result(
        post(client, f"{BASE}/comments/reactions/add", {**thread, "commentId": 1, "reaction": "x", "userId": "gone"},
             t.headers))
    result(
        post(client, f"{BASE}/comments/reactions/add", {**thread, "commentId": 1, "reaction": "x", "userId": "keep"},
             t.headers))
    result(post(client, f"{BASE}/read/update", {**WHERE, "userId": "gone"}, t.headers))
    started = result(post(client, "/v2/organizations/documents/migrate", {**WHERE, "newDocumentId": "moved"},
                          t.headers))
    settle_jobs(live, t)
    status = result(
        post(client, "/v2/organizations/documents/migrate/status",
             {"organizationId": "org", "migrationId": started["migrationId"]}, t.headers))
    assert status["status"] == "completed"
    moved = result(post(client, f"{BASE}/get", {"organizationId": "org", "documentId": "moved"}, t.headers))
    assert sorted(a["annotationId"] for a in moved) == ["mine", "theirs"]
    assert result(post(client, f"{BASE}/get", {"organizationId": "org", "documentId": "doc"}, t.headers)) == []

    deletion = post(client, "/v2/users/data/delete", {"userIds": ["gone"]}, t.headers).json()["data"]
    settle_jobs(live, t)
    done = result(post(client, "/v2/users/data/delete/status", {"jobId": deletion["jobId"]}, t.headers))
    assert done["tasksLeft"] == 0
    (left, ) = result(post(client, f"{BASE}/get", {"organizationId": "org"}, t.headers))
    assert left["annotationId"] == "theirs" and "assignedTo" not in left
    (comment, ) = left["comments"]
    assert comment["commentText"] == "by keep" and comment["taggedUserContacts"] == []
    assert comment["reactions"] == [{"reaction": "x", "userIds": ["keep"]}]
    assert result(post(client, f"{BASE}/get", {"organizationId": "org", "mentionedUserIds": ["gone"]}, t.headers)) == []
    count = result(post(client, f"{BASE}/count/get", {"organizationId": "org", "userId": "keep"}, t.headers))
    assert count == {"moved": {"total": 1, "unread": 0, "unreadComments": 0}}
