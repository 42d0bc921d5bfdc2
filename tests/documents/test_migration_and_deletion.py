"""Document migration and user-data deletion: jobs that move or remove every feature's data, exactly once."""

import pytest

from collab.documents.tasks import migrate_document
from collab.users.deletion import TASKS
from collab.users.tasks import delete_user_data
from support.factories import judged, seed_document
from support.helpers import add_organization, enable_activities, error, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

PRICE = "The price claim needs the original price beside it."
MIGRATE, STATUS = "/v2/organizations/documents/migrate", "/v2/organizations/documents/migrate/status"


def counts(db, t, doc):
    """Rows of every feature on one document of o1."""
    out = {}
    for table in ("documents", "activities", "judgments", "judgment_embeddings", "grants", "notifications", "presence",
                  "recordings", "crdt_editors"):
        column = {"documents": "id", "grants": "resource_id"}.get(table, "document_id")
        out[table] = db.execute(
            f"select count(*) as n from {table} where api_key_id = %s and organization_id = 'o1' and {column} = %s",
            (t.api_key, doc)).fetchone()["n"]
    return out


def seed(client, live, t):
    """o1/d1 with a grant, a notification, presence, a recording, two users' review activities and judgments."""
    enable_activities(client, t)
    seed_document(client, t, to="u2")
    activities = [judged("a1", PRICE, user="u1"), judged("a2", PRICE, user="u2")]
    body = {"organizationId": "o1", "documentId": "d1", "activities": activities}
    result(post(client, "/v2/activities/add", body, t.headers))
    settle_jobs(live, t)


def status(client, t, migration_id):
    return result(post(client, STATUS, {"organizationId": "o1", "migrationId": migration_id}, t.headers))


def test_migration_moves_every_feature(client, live, db):
    t = new_tenant(client)
    seed(client, live, t)
    before = counts(db, t, "d1")
    assert before == {
        "documents": 1, "activities": 2, "judgments": 2, "judgment_embeddings": 2, "grants": 1, "notifications": 1,
        "presence": 1, "recordings": 1, "crdt_editors": 1
    }
    started = result(
        post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d1-new"}, t.headers))
    migration_id = started["migrationId"]
    assert status(client, t, migration_id)["status"] in ("pending", "in_progress", "completed")
    settle_jobs(live, t)
    assert status(client, t, migration_id) == {
        "migrationId": migration_id, "status": "completed", "documentId": "d1", "newDocumentId": "d1-new"
    }
    assert counts(db, t, "d1") == dict.fromkeys(before, 0)
    assert counts(db, t, "d1-new") == before
    # What users see follows: the activity log and permissions answer under the new id.
    records = post(client, "/v2/activities/get", {"organizationId": "o1", "documentId": "d1-new"}, t.headers).json()
    assert sorted(r["id"] for r in records["result"]["data"]) == ["a1", "a2"]
    got = result(
        post(client, "/v2/auth/permissions/get", {"organizationId": "o1", "userIds": ["u1"], "documentIds": ["d1-new"]},
             t.headers))
    assert got["u1"]["documents"]["d1-new"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    [editor] = result(post(client, "/v2/crdt/get", {"organizationId": "o1", "documentId": "d1-new"}, t.headers))
    assert editor["data"] == "hello" and editor["lastUpdatedBy"] == "u1"


def test_migration_failures_are_recorded_with_a_reason(client, live):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", "d2")
    taken = result(post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d2"},
                        t.headers))
    missing = result(
        post(client, MIGRATE, {"organizationId": "o1", "documentId": "ghost", "newDocumentId": "d3"}, t.headers))
    settle_jobs(live, t)
    assert status(client, t, taken["migrationId"])["status"] == "failed"
    assert status(client, t, taken["migrationId"])["reason"] == "Document d2 already exists in organization o1."
    assert status(client, t, missing["migrationId"])["reason"] == "Document ghost does not exist in organization o1."
    # Nothing moved.
    ids = [
        d["documentId"]
        for d in result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
    ]
    assert ids == ["d1", "d2"]


def test_migration_validation_and_unknown_ids(client):
    a, b = new_tenant(client), new_tenant(client)
    add_organization(client, a, "o1", "d1")
    error(post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d1"}, a.headers),
          "INVALID_ARGUMENT")
    error(post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1"}, a.headers), "INVALID_ARGUMENT")
    error(post(client, STATUS, {"organizationId": "o1", "migrationId": "mig_unknown"}, a.headers), "NOT_FOUND")
    started = result(
        post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d9"}, a.headers))
    # Another tenant cannot read it, even knowing its id.
    error(post(client, STATUS, {"organizationId": "o1", "migrationId": started["migrationId"]}, b.headers), "NOT_FOUND")


def test_migration_job_run_twice_gives_the_same_state(client, live, db):
    t = new_tenant(client)
    seed(client, live, t)
    started = result(
        post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d2"}, t.headers))
    settle_jobs(live, t)
    after = counts(db, t, "d2")
    ctx = {"svc": live.svc, "pool": live.svc.pool}
    again = live.run(migrate_document.__wrapped__(ctx, api_key_id=t.api_key, migration_id=started["migrationId"]))
    assert again is None  # finished already: nothing done
    assert counts(db, t, "d2") == after and status(client, t, started["migrationId"])["status"] == "completed"


def delete_data(client, t, **data):
    response = post(client, "/v2/users/data/delete", data, t.headers)
    assert response.status_code == 202, response.text
    body = response.json()
    assert set(body) == {"status", "message", "data", "statusCode"}
    assert body["status"] == "success" and body["statusCode"] == 202
    return body["data"]


def deletion_status(client, t, job_id):
    return result(post(client, "/v2/users/data/delete/status", {"jobId": job_id}, t.headers))


def user_rows(db, t, user):
    return {
        "grants": db.execute("select count(*) as n from grants where api_key_id = %s and principal_id = %s",
                             (t.api_key, user)).fetchone()["n"],
        "members": db.execute("select count(*) as n from group_members where api_key_id = %s and user_id = %s",
                              (t.api_key, user)).fetchone()["n"],
        "activities": db.execute(
            "select count(*) as n from activities where api_key_id = %s and action_user->>'userId' = %s",
            (t.api_key, user)).fetchone()["n"], "judgments": db.execute(
                "select count(*) as n from judgments where api_key_id = %s and action_user->>'userId' = %s",
                (t.api_key, user)).fetchone()["n"], "notifications": db.execute(
                    "select count(*) as n from notifications"
                    " where api_key_id = %s and (action_user->>'userId' = %s or notify_users_by_user_id ? %s)",
                    (t.api_key, user, user)).fetchone()["n"],
        "presence": db.execute("select count(*) as n from presence where api_key_id = %s and user_id = %s",
                               (t.api_key, user)).fetchone()["n"],
        "recordings": db.execute(
            "select count(*) as n from recordings where api_key_id = %s and from_user->>'userId' = %s",
            (t.api_key, user)).fetchone()["n"],
        "profile": db.execute("select count(*) as n from users where api_key_id = %s and id = %s",
                              (t.api_key, user)).fetchone()["n"]
    }


def test_user_data_deletion_leaves_nothing_of_the_user_and_touches_no_one_else(client, live, db, clock):
    t = new_tenant(client)
    seed(client, live, t)
    result(
        post(client, "/v2/users/add",
             {"organizationId": "o1", "users": [{"userId": "u1", "name": "Ana"}, {"userId": "u2"}]}, t.headers))
    result(
        post(client, "/v2/organizations/usergroups/add",
             {"organizationId": "o1", "organizationUserGroups": [{"groupId": "g"}]}, t.headers))
    result(
        post(client, "/v2/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "g", "userIds": ["u1", "u2"]}, t.headers))
    result(
        post(client, "/v2/presence/update", {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u2"}]},
             t.headers))
    # u2 mentions u1 and u3: after the deletion the notification stays, without u1.
    result(
        post(
            client, "/v2/notifications/add", {
                "organizationId": "o1", "documentId": "d1", "actionUser": {"userId": "u2"}, "notifyAll": False,
                "notificationId": "by-u2", "displayHeadlineMessageTemplate": "{actionUser} mentioned you",
                "displayBodyMessage": "@u1 @u3", "notifyUsers": [{"userId": "u1"}, {"userId": "u3"}]
            }, t.headers))
    u2_before = user_rows(db, t, "u2")
    assert all(user_rows(db, t, "u1").values())

    started = delete_data(client, t, userIds=["u1"])
    assert started["tasksCount"] == len(TASKS)
    settle_jobs(live, t)
    assert deletion_status(client, t, started["jobId"]) == {
        "isDeleteCompleted": True, "tasksLeft": 0, "lastTaskCompletedTime": int(clock["now"] * 1000)
    }
    assert user_rows(db, t, "u1") == dict.fromkeys(u2_before, 0)
    # u2 keeps everything but the notification u1 sent them (u1 created it).
    assert user_rows(db, t, "u2") == u2_before | {"notifications": u2_before["notifications"] - 1}
    mention = db.execute(
        "select notify_users_by_user_id as m from notifications where id = 'by-u2' and api_key_id = %s",
        (t.api_key, )).fetchone()
    assert mention["m"] == {"u3": True}
    u2_before = user_rows(db, t, "u2")

    # Running the job again changes nothing.
    ctx = {"svc": live.svc, "pool": live.svc.pool}
    live.run(delete_user_data.__wrapped__(ctx, api_key_id=t.api_key, deletion_id=started["jobId"]))
    assert user_rows(db, t, "u2") == u2_before and user_rows(db, t, "u1") == dict.fromkeys(u2_before, 0)


def test_user_data_deletion_scoped_to_organizations(client, live, db):
    t = new_tenant(client)
    seed(client, live, t)
    add_organization(client, t, "o2", "x")
    result(post(client, "/v2/users/add", {"organizationId": "o2", "users": [{"userId": "u1"}]}, t.headers))
    started = delete_data(client, t, userIds=["u1"], organizationIds=["o1"])
    settle_jobs(live, t)
    assert deletion_status(client, t, started["jobId"])["isDeleteCompleted"] is True
    rows = user_rows(db, t, "u1")
    # o1's data went; the o2 access and the profile it still needs stayed.
    assert rows == {
        "grants": 1, "members": 0, "activities": 0, "judgments": 0, "notifications": 0, "presence": 0, "recordings": 0,
        "profile": 1
    }


def test_user_data_deletion_progress_and_isolation(client, live):
    a, b = new_tenant(client), new_tenant(client)
    add_organization(client, a, "o1")
    error(post(client, "/v2/users/data/delete", {}, a.headers), "INVALID_ARGUMENT")
    error(post(client, "/v2/users/data/delete", {"userIds": []}, a.headers), "INVALID_ARGUMENT")
    error(post(client, "/v2/users/data/delete", {"userIds": ["u"] * 2}, a.headers), "INVALID_ARGUMENT")
    started = delete_data(client, a, userIds=["u1"])
    error(post(client, "/v2/users/data/delete/status", {"jobId": started["jobId"]}, b.headers), "NOT_FOUND")
    error(post(client, "/v2/users/data/delete/status", {"jobId": "job_nope"}, a.headers), "NOT_FOUND")
    settle_jobs(live, a)
    assert deletion_status(client, a, started["jobId"])["tasksLeft"] == 0


def test_a_migrated_document_keeps_its_invitations(client, live):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    invite = {"email": "bo@example.com", "organizationId": "o1", "type": "doc_user", "documentId": "d1"}
    result(post(client, "/v2/users/invite/add", invite, t.headers))
    started = result(
        post(client, MIGRATE, {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d1-new"}, t.headers))
    settle_jobs(live, t)
    assert status(client, t, started["migrationId"])["status"] == "completed"
    [moved] = result(post(client, "/v2/users/invite/get", {"organizationId": "o1"}, t.headers))
    assert (moved["documentId"], moved["status"]) == ("d1-new", "PENDING")
    # Answered under the new id, the invitation grants on the migrated document.
    accepted = result(
        post(client, "/v2/users/invite/respond",
             {**invite, "documentId": "d1-new", "status": "ACCEPTED", "user": {"userId": "u2"}}, t.headers))
    assert accepted["status"] == "ACCEPTED"
