"""Notifications: add, get (advanced queries, visibility, paging), update, delete, and the notification service."""

import concurrent.futures

import pytest

from support.factories import batches, comment, flush, service_tenant, tenant_with_users
from support.factories import notifications as listed
from support.helpers import (
    add_organization,
    enable_activities,
    enable_advanced_queries,
    error,
    issue_paths,
    new_tenant,
    post,
    result,
)

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

ADD, GET = "/v1/notifications/add", "/v2/notifications/get"
ACTOR = {"userId": "u0", "name": "Ana", "email": "ana@example.com"}
RECORD_KEYS = {
    "id", "notificationSource", "notificationSourceData", "actionUser", "displayBodyMessage",
    "displayHeadlineMessageTemplate", "displayHeadlineMessageTemplateData", "metadata", "notifyUsers",
    "notifyUsersByUserId", "timestamp", "readByUserIds"
}


def notification(**fields):
    return {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR,
        "displayHeadlineMessageTemplate": "{actionUser} mentioned {recipientUser} in {docName}",
        "displayHeadlineMessageTemplateData": {"docName": "Plan"}, "displayBodyMessage": "Please review",
        "notifyUsers": [{"userId": "u1", "email": "u1@example.com"}], **fields
    }


def test_add_and_get_in_the_spec_shape(client, clock):
    t = tenant_with_users(client, "u2", "u3")
    added = result(post(client, ADD, notification(notificationId="n-1_a"), t.headers))
    assert added == {"success": True, "message": "Notification added successfully.", "id": "n-1_a"}
    [record] = listed(client, t, documentId="d1")["data"]
    assert set(record) == RECORD_KEYS
    assert record["displayHeadlineMessageTemplate"] == "{actionUser} mentioned {recipientUser} in {docName}"
    assert record["metadata"] == {"apiKey": t.api_key, "documentId": "d1", "organizationId": "o1"}
    assert record["timestamp"] == int(clock["now"] * 1000) and record["actionUser"] == ACTOR
    # notifyAll (default true): the listed user plus every organization user, the actor excluded.
    assert record["notifyUsersByUserId"] == {"u1": True, "u2": True, "u3": True}
    assert record["notifyUsers"] == {"u1@example.com": True, "u2": True, "u3": True}
    assert record["notificationSource"] == "custom"


def test_notify_all_false_and_repeated_id(client):
    t = tenant_with_users(client, "u2")
    result(post(client, ADD, notification(notificationId="n1", notifyAll=False), t.headers))
    again = result(post(client, ADD, notification(notificationId="n1", displayBodyMessage="changed"), t.headers))
    assert again["message"] == "Notification already exists."
    [record] = listed(client, t, documentId="d1")["data"]
    assert record["notifyUsersByUserId"] == {"u1": True} and record["displayBodyMessage"] == "Please review"


def test_add_validation_and_missing_organization(client):
    t = new_tenant(client)
    for bad_id in ("a b", "a.b", "ä", "x" * 201):
        err = error(post(client, ADD, notification(notificationId=bad_id, createOrganization=True), t.headers),
                    "INVALID_ARGUMENT")
        assert issue_paths(err) == [["notificationId"]]
    # The texts are required unless a resolver fills them in (tests/notifications/test_velt_notifications.py).
    for field in ("actionUser", "notifyUsers", "documentId", "displayHeadlineMessageTemplate", "displayBodyMessage"):
        body = notification()
        del body[field]
        assert issue_paths(error(post(client, ADD, body, t.headers), "INVALID_ARGUMENT")) == [[field]]
    err = error(post(client, ADD, notification(notifyAll="false"), t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["notifyAll"]]
    error(post(client, ADD, notification(), t.headers), "NOT_FOUND")
    result(post(client, ADD, notification(createOrganization=True, createDocument=True), t.headers))
    docs = result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
    assert [d["documentId"] for d in docs] == ["d1"]


def test_get_rules(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    error(post(client, GET, {"organizationId": "o1", "documentId": "d1"}, t.headers), "FAILED_PRECONDITION")
    enable_advanced_queries(client, t)
    assert issue_paths(error(post(client, GET, {"organizationId": "o1"}, t.headers), "INVALID_ARGUMENT")) == [[]]
    err = error(
        post(client, GET, {"organizationId": "o1", "userId": "u", "notificationIds": [str(i) for i in range(31)]},
             t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["notificationIds"]]
    err = error(post(client, GET, {"organizationId": "o1", "userId": "u", "order": "newest"}, t.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["order"]]


def test_filters_order_and_paging(client, clock):
    t = tenant_with_users(client)
    for i in range(12):
        clock["now"] += 1
        location = {"locationId": "loc"} if i % 3 == 0 else {}
        result(post(client, ADD, notification(notificationId=f"n{i:02}", **location), t.headers))
    ids = [r["id"] for r in listed(client, t, userId="u1")["data"]]
    assert ids == [f"n{i:02}" for i in reversed(range(12))]
    assert [r["id"] for r in listed(client, t, documentId="d1", locationId="loc", order="asc")["data"]
            ] == ["n00", "n03", "n06", "n09"]
    assert [r["id"]
            for r in listed(client, t, documentId="d1", notificationIds=["n05", "n01"])["data"]] == ["n05", "n01"]
    assert listed(client, t, userId="nobody")["data"] == []
    seen, token = [], None
    while True:
        page = listed(client, t, documentId="d1", order="asc", pageSize=5, **({"pageToken": token} if token else {}))
        seen += [r["id"] for r in page["data"]]
        token = page["pageToken"]
        if token is None:
            break
    assert seen == [f"n{i:02}" for i in range(12)]


def test_private_comment_reaches_only_its_users(client):
    t = tenant_with_users(client)
    private = {"visibility": "private", "visibleToUserIds": ["u1"]}
    body = notification(notifyUsers=[{"userId": "u1"}, {"userId": "u2"}], notificationSourceData=private)
    result(post(client, ADD, body, t.headers))
    assert len(listed(client, t, userId="u1")["data"]) == 1
    assert listed(client, t, userId="u2")["data"] == []
    restricted = {"commentAnnotation": {"visibility": {"type": "restricted", "userIds": ["u2"]}}}
    result(
        post(client, ADD,
             notification(notifyUsers=[{"userId": "u1"}, {"userId": "u2"}], notificationSourceData=restricted),
             t.headers))
    assert len(listed(client, t, userId="u2")["data"]) == 1 and len(listed(client, t, userId="u1")["data"]) == 1


def test_update_and_delete(client):
    t = tenant_with_users(client)
    result(post(client, ADD, notification(notificationId="n1"), t.headers))
    changed = result(
        post(
            client, "/v2/notifications/update", {
                "organizationId": "o1", "notifications": [{
                    "id": "n1", "readByUserIds": ["u1"], "displayBodyMessage": "Updated"
                }, {"id": "zz", "readByUserIds": ["u1"]}]
            }, t.headers))
    assert changed == {
        "n1": {"success": True, "id": "n1", "message": "Notification updated."},
        "zz": {"success": False, "id": "zz", "message": "Notification does not exist."}
    }
    [record] = listed(client, t, documentId="d1")["data"]
    assert record["readByUserIds"] == ["u1"] and record["displayBodyMessage"] == "Updated"
    gone = result(
        post(client, "/v2/notifications/delete", {"organizationId": "o1", "notificationIds": ["n1", "zz"]}, t.headers))
    assert gone["n1"]["success"] and not gone["zz"]["success"]
    assert listed(client, t, documentId="d1")["data"] == []


def test_another_tenants_notifications_are_invisible(client):
    a = tenant_with_users(client)
    b = tenant_with_users(client)
    result(post(client, ADD, notification(notificationId="n1"), a.headers))
    assert listed(client, b, documentId="d1")["data"] == [] and listed(client, b, userId="u1")["data"] == []
    upd = result(
        post(client, "/v2/notifications/update",
             {"organizationId": "o1", "notifications": [{"id": "n1", "readByUserIds": ["x"]}]}, b.headers))
    assert upd["n1"]["success"] is False
    gone = result(
        post(client, "/v2/notifications/delete", {"organizationId": "o1", "notificationIds": ["n1"]}, b.headers))
    assert gone["n1"]["success"] is False
    [record] = listed(client, a, documentId="d1")["data"]
    assert record["readByUserIds"] == []


# The notification service: comment activities become notifications.


def test_comment_activity_notifies_the_documents_users_but_the_actor(client):
    t = service_tenant(client, doc_users=("u0", "u1", "u2"))
    comment(client, t, "a1")
    [record] = listed(client, t, documentId="d1")["data"]
    assert record["notifyUsersByUserId"] == {"u1": True, "u2": True}
    assert record["displayHeadlineMessageTemplate"] == "{actionUser} added a comment"
    assert record["displayBodyMessage"] == "text a1" and record["actionUser"]["userId"] == "u0"
    # A retry of the same activity id does not notify twice; a trigger set false stops notifications.
    comment(client, t, "a1")
    result(
        post(client, "/v2/workspace/notificationconfig/update",
             {"notificationServiceConfig": {"triggers": {"comment": {"comment_annotation.add": False}}}}, t.headers))
    comment(client, t, "a2")
    assert batches(client, t) == [["a1"]]


def test_service_off_creates_nothing(client):
    t = tenant_with_users(client, doc_users=("u1", ))
    enable_activities(client, t)
    comment(client, t, "a1")
    assert listed(client, t, documentId="d1")["data"] == []


def test_switching_the_service_on_and_off_takes_effect_at_the_next_activity(client):
    # Without the service an add is one statement; with it, the transaction that notifies (and a key seen with it
    # on goes straight there for a while). Either way each add follows the setting as it is at that moment.
    t = tenant_with_users(client, doc_users=("u0", "u1"))
    enable_activities(client, t)
    service = "/v2/workspace/notificationconfig/update"
    comment(client, t, "before")
    result(post(client, service, {"useNotificationService": True}, t.headers))
    comment(client, t, "during")
    result(post(client, service, {"useNotificationService": False}, t.headers))
    comment(client, t, "after")
    [record] = listed(client, t, documentId="d1")["data"]
    assert record["displayBodyMessage"] == "text during"
    logged = result(post(client, "/v2/activities/get", {"organizationId": "o1"}, t.headers))
    assert sorted(a["id"] for a in logged) == ["after", "before", "during"]


def test_delay_holds_notifications_back(client, live, clock):
    t = service_tenant(client, {"delayConfig": {"isEnabled": True, "delaySeconds": 20}})
    start = clock["now"]
    comment(client, t, "a1")
    assert batches(client, t) == []
    clock["now"] = start + 19.999
    flush(live)
    assert batches(client, t) == []
    clock["now"] = start + 20
    flush(live)
    flush(live)  # flushing twice is a no-op
    assert batches(client, t) == [["a1"]]


def test_document_batches_of_3_3_1(client, live, clock):
    t = service_tenant(client,
                       {"batchConfig": {"document": {"isEnabled": True, "batchWindowSeconds": 60, "maxActivities": 3}}})
    start = clock["now"]
    for i in range(7):
        comment(client, t, f"a{i}")
    # Two batches filled up and went out at once; the seventh event waits for its window.
    assert batches(client, t) == [["a0", "a1", "a2"], ["a3", "a4", "a5"]]
    clock["now"] = start + 59
    flush(live)
    assert len(batches(client, t)) == 2
    clock["now"] = start + 60
    flush(live)
    assert batches(client, t) == [["a0", "a1", "a2"], ["a3", "a4", "a5"], ["a6"]]
    [full] = [
        r for r in listed(client, t, documentId="d1")["data"] if r["notificationSourceData"]["activityIds"][0] == "a0"
    ]
    assert full["displayHeadlineMessageTemplate"] == "{actionUser} and others made {activityCount} updates"
    assert full["displayHeadlineMessageTemplateData"]["activityCount"] == "3"


def test_concurrent_events_make_exactly_ceil_n_over_max_batches(client, live, clock):
    t = service_tenant(
        client, {"batchConfig": {"document": {"isEnabled": True, "batchWindowSeconds": 600, "maxActivities": 3}}})
    with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda i: comment(client, t, f"c{i:02}"), range(50)))
    clock["now"] += 600
    flush(live)
    found = batches(client, t)
    assert len(found) == 17  # ⌈50 / 3⌉
    assert sorted(len(b) for b in found) == [2] + [3] * 16
    assert sorted(a for b in found for a in b) == [f"c{i:02}" for i in range(50)]


def test_user_batches_go_to_each_recipient(client, live, clock):
    t = service_tenant(client,
                       {"batchConfig": {"user": {"isEnabled": True, "batchWindowSeconds": 30, "maxActivities": 5}}})
    comment(client, t, "a1")
    comment(client, t, "a2")
    clock["now"] += 30
    flush(live)
    for user in ("u1", "u2"):
        [record] = listed(client, t, userId=user)["data"]
        assert record["notifyUsersByUserId"] == {user: True}
        assert record["notificationSourceData"]["activityIds"] == ["a1", "a2"]
        assert record["displayHeadlineMessageTemplateData"]["recipientUser"] == {"userId": user}


def test_private_comment_activity_notifies_only_who_may_see_it(client):
    t = service_tenant(client, doc_users=("u1", "u2", "u3"))
    comment(client, t, "a1", visibility="private", visibleToUserIds=["u2"])
    assert listed(client, t, userId="u1")["data"] == [] and listed(client, t, userId="u3")["data"] == []
    [record] = listed(client, t, userId="u2")["data"]
    assert record["notifyUsersByUserId"] == {"u2": True}


def test_user_data_deletion_removes_their_notifications_and_mentions(client, live):
    from support.helpers import settle_jobs

    t = service_tenant(client, doc_users=("u0", "u1", "u2"))
    comment(client, t, "by-u1", user="u1")
    result(
        post(client, ADD,
             notification(notificationId="mention", notifyAll=False, notifyUsers=[{"userId": "u1"}, {"userId": "u2"}]),
             t.headers))
    response = post(client, "/v2/users/data/delete", {"userIds": ["u1"]}, t.headers)
    assert response.status_code == 202
    settle_jobs(live, t)
    records = listed(client, t, documentId="d1")["data"]
    assert [r["id"] for r in records] == ["mention"]  # the notification u1 caused is gone
    assert records[0]["notifyUsersByUserId"] == {"u2": True}
