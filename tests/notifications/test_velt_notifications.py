"""Velt-shaped notification bodies, driven by velt-py: add's texts (required unless a resolver), update/delete by
document, location and user, update without ids, and the fields collab honours (verifyUserPermissions,
notificationSource, location)."""

from velt_py.models.notification_api import (
    AddNotificationsRequest,
    DeleteNotificationsRequest,
    GetNotificationsRequest,
    UpdateNotificationsRequest,
)

from support.factories import tenant_with_users
from support.helpers import error, issue_paths, new_tenant, post, velt

ACTOR = {"userId": "u0", "name": "Ana", "email": "ana@example.com"}


def records(api, **filters):
    answer = api.notifications.getNotifications(GetNotificationsRequest(organizationId="o1", **filters))
    assert answer["result"]["status"] == "success", answer
    return {r["id"]: r for r in answer["result"]["data"]}


TEXTS = {"displayHeadlineMessageTemplate": "{actionUser} pinged you", "displayBodyMessage": "b"}


def add(api, **fields):
    body = {"organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "notifyAll": False, **TEXTS, **fields}
    answer = api.notifications.addNotifications(AddNotificationsRequest(**body))
    assert answer["result"]["status"] == "success", answer
    return answer["result"]["data"]


def test_add_without_texts_is_refused_unless_a_resolver_fills_them_in(client, sdk):
    t = tenant_with_users(client, "u1")
    api = sdk(t).api
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "notifyAll": False, "notificationId": "plain",
        "notifyUsers": [{"userId": "u1"}]
    }
    answer = api.notifications.addNotifications(AddNotificationsRequest(**body))
    assert answer["error"]["status"] == "INVALID_ARGUMENT", answer
    assert issue_paths(answer["error"]) == [["displayHeadlineMessageTemplate"], ["displayBodyMessage"]]
    answer = api.notifications.addNotifications(AddNotificationsRequest(**body, displayBodyMessage="b"))
    assert issue_paths(answer["error"]) == [["displayHeadlineMessageTemplate"]]
    assert records(api, userId="u1") == {}  # nothing was stored, no default headline made up
    add(api, notificationId="resolved", notifyUsers=[{"userId": "u1"}], isNotificationResolverUsed=True,
        verifyUserPermissions=False, context={"access": {"team": "a"}}, displayHeadlineMessageTemplate=None,
        displayBodyMessage=None)
    found = records(api, userId="u1")
    # A notification resolver fills the texts in at read time: nothing is made up for it.
    assert found["resolved"]["displayHeadlineMessageTemplate"] == ""
    assert found["resolved"]["displayBodyMessage"] == ""


def test_source_and_location_object_are_kept(client, sdk):
    t = tenant_with_users(client, "u1")
    api = sdk(t).api
    add(api, notificationId="n1", notifyUsers=[{"userId": "u1"}], location={"id": "loc-1", "locationName": "Intro"},
        displayHeadlineMessageTemplate="h", displayBodyMessage="b")
    # velt-py 0.3.0 has no notificationSource field; Velt's docs list it: sent as its docs show.
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "notifyUsers": [{"userId": "u1"}],
        "notificationId": "n2", "notificationSource": "huddle", **TEXTS
    }
    assert post(client, "/v2/notifications/add", body, velt(t)).status_code == 200
    [record] = records(api, documentId="d1", locationId="loc-1").values()
    assert record["id"] == "n1" and record["notificationSource"] == "custom"
    assert records(api, documentId="d1")["n2"]["notificationSource"] == "huddle"


def test_verify_user_permissions_reaches_only_users_with_access(client, sdk):
    t = tenant_with_users(client, doc_users=("u1", ))
    api = sdk(t).api
    add(api, notificationId="n1", notifyUsers=[{"userId": "u1"}, {"userId": "stranger"}], verifyUserPermissions=True,
        displayHeadlineMessageTemplate="h", displayBodyMessage="b")
    assert records(api, documentId="d1")["n1"]["notifyUsersByUserId"] == {"u1": True}


def test_update_scoped_by_document_location_and_user_and_without_ids(client, sdk):
    t = tenant_with_users(client)
    api = sdk(t).api
    add(api, notificationId="a", notifyUsers=[{"userId": "u1"}], location={"id": "L1"})
    add(api, notificationId="b", notifyUsers=[{"userId": "u2"}], location={"id": "L1"})
    add(api, notificationId="c", notifyUsers=[{"userId": "u1"}], documentId="d2", createDocument=True)
    # Velt's shape: documentId + userId beside the id. Another document's id does not match it.
    answer = api.notifications.updateNotifications(
        UpdateNotificationsRequest(organizationId="o1", documentId="d2", userId="u1",
                                   notifications=[{"id": "a", "displayBodyMessage": "no"}]))
    assert answer["result"]["data"]["a"]["success"] is False
    # Without ids: every notification of the location, marked read, a new actor.
    answer = api.notifications.updateNotifications(
        UpdateNotificationsRequest(
            organizationId="o1", documentId="d1", locationId="L1", notifications=[{
                "readByUserIds": ["u1"], "persistReadForUsers": True, "actionUser": {"userId": "bot", "name": "Bot"}
            }]))
    assert sorted(answer["result"]["data"]) == ["a", "b"]
    found = records(api, documentId="d1")
    assert found["a"]["readByUserIds"] == ["u1"] and found["b"]["actionUser"] == {"userId": "bot", "name": "Bot"}
    assert records(api, documentId="d2")["c"]["readByUserIds"] == []
    # A change without an id needs a scope: it would otherwise touch the whole organization.
    err = error(
        post(client, "/v2/notifications/update",
             {"organizationId": "o1", "notifications": [{"displayBodyMessage": "x"}]}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["notifications"]]


def test_update_with_verify_user_permissions_marks_only_readers_with_access(client, sdk):
    t = tenant_with_users(client, doc_users=("u1", ))
    api = sdk(t).api
    add(api, notificationId="a", notifyUsers=[{"userId": "u1"}])
    api.notifications.updateNotifications(
        UpdateNotificationsRequest(organizationId="o1", documentId="d1", verifyUserPermissions=True,
                                   notifications=[{"id": "a", "readByUserIds": ["u1", "outsider"]}]))
    assert records(api, documentId="d1")["a"]["readByUserIds"] == ["u1"]


def test_delete_by_user_and_location(client, sdk):
    t = tenant_with_users(client)
    api = sdk(t).api
    add(api, notificationId="mine", notifyUsers=[{"userId": "u1"}], location={"id": "L1"})
    add(api, notificationId="shared", notifyUsers=[{"userId": "u1"}, {"userId": "u2"}], location={"id": "L1"})
    add(api, notificationId="other", notifyUsers=[{"userId": "u2"}], location={"id": "L2"})
    answer = api.notifications.deleteNotifications(
        DeleteNotificationsRequest(organizationId="o1", locationId="L1", userId="u1"))
    assert sorted(answer["result"]["data"]) == ["mine", "shared"]
    assert records(api, userId="u1") == {}
    # The other recipient keeps the shared notification.
    assert sorted(records(api, userId="u2")) == ["other", "shared"]
    answer = api.notifications.deleteNotifications(DeleteNotificationsRequest(organizationId="o1", locationId="L2"))
    assert list(answer["result"]["data"]) == ["other"]


def test_bad_input_is_refused_clearly(client):
    t = new_tenant(client)
    base = {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "createOrganization": True, "notifyUsers": [],
        **TEXTS
    }
    cases = [({"notificationSource": "email"}, "notificationSource"),
             ({"verifyUserPermissions": "yes"}, "verifyUserPermissions"), ({"context": {"access": "x"}}, "context"),
             ({"displayBodyMessage": "x" * 100_001}, "displayBodyMessage")]
    for extra, path in cases:
        err = error(post(client, "/v2/notifications/add", {**base, **extra}, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err)[0][0] == path
    err = error(post(client, "/v2/notifications/delete", {"organizationId": "o1"}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [[]]
