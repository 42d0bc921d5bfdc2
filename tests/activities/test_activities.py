"""Activity log: add (precondition, triggers, idempotent ids, history), update, get, delete."""

import dataclasses

import pytest
from velt_py.models.activity_api import DeleteActivitiesRequest

from collab.activities import service
from collab.activities.schemas import AddActivities
from collab.kit.auth import Tenant as Caller
from collab.kit.redisclient import redis_client
from support.factories import ANA as USER
from support.factories import activity, page_of
from support.factories import add_activities as add
from support.helpers import enable_activities, error, issue_paths, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

ADD, UPDATE, GET, DELETE = (f"/v2/activities/{op}" for op in ("add", "update", "get", "delete"))


def listed(client, t, **filters):
    return page_of(client, GET, t, **{"organizationId": "org1", **filters})


def test_add_requires_enabled_activity_service(client):
    t = new_tenant(client)
    error(add(client, t, activity()), "FAILED_PRECONDITION")
    result(
        post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"immutable": False}}, t.headers))
    error(add(client, t, activity()), "FAILED_PRECONDITION")
    enable_activities(client, t)
    assert result(add(client, t, activity())) == {"success": True, "message": "1 activity added."}


def test_generated_ids_and_stored_fields(client, clock):
    t = new_tenant(client)
    enable_activities(client, t)
    data = activity(targetEntityId="ann1", targetSubEntityId="c1", entityData={"commentText": "Looks off"},
                    displayMessageTemplate="{{actionUser.name}} commented", displayMessageTemplateData={"x": 1},
                    actionIcon="https://i.io/c.png", changes={"status": {"from": "open", "to": "open"}})
    result(add(client, t, data))
    [record] = listed(client, t)["data"]
    assert record["id"].startswith("act_")
    assert record["timestamp"] == int(clock["now"] * 1000)
    assert record["actionUser"] == USER and record["entityData"] == {"commentText": "Looks off"}
    assert record["organizationId"] == "org1" and record["documentId"] == "doc1"
    assert record["isActivityResolverUsed"] is False


def test_supplied_id_overwrites(client):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add(client, t, activity(id="a-1", entityData={"commentText": "first"})))
    result(add(client, t, activity(id="a-1", entityData={"commentText": "second"})))
    records = listed(client, t)["data"]
    assert len(records) == 1 and records[0]["entityData"] == {"commentText": "second"}


def test_one_call_with_an_id_twice_keeps_the_later_record_in_order(client):
    t = new_tenant(client)
    enable_activities(client, t)
    batch = [
        activity(id="a-1", entityData={"commentText": "first"}),
        activity(id="a-2"),
        activity(id="a-1", entityData={"commentText": "second"})
    ]
    assert result(add(client, t, *batch)) == {"success": True, "message": "3 activities added."}
    records = {r["id"]: r for r in listed(client, t)["data"]}
    assert sorted(records) == ["a-1", "a-2"] and records["a-1"]["entityData"] == {"commentText": "second"}


def test_triggers_off_are_not_logged_absent_are(client):
    t = new_tenant(client)
    enable_activities(client, t, triggers={"comment": {"comment_annotation.suggestion_accept": False}})
    response = add(client, t, activity(actionType="comment_annotation.suggestion_accept", id="off"),
                   activity(actionType="comment_annotation.suggestion_reject", id="on"),
                   activity(featureType="custom", actionType="build.finished", targetEntityId="b1", id="custom"))
    assert "1 not logged" in result(response)["message"]
    assert sorted(r["id"] for r in listed(client, t)["data"]) == ["custom", "on"]


def judgment_jobs(db, t):
    """The tenant's judgment jobs as recorded: their ids (sorted) and whether each was sent to the queue."""
    rows = db.execute(
        "select args, enqueued_at is not null as sent from jobs where api_key_id = %s"
        " and function = 'derive_judgments' order by created_at", (t.api_key, )).fetchall()
    return [(sorted(r["args"]["activity_ids"]), r["sent"]) for r in rows]


def test_one_statement_and_transaction_paths_store_the_same(client, db, clock):
    # Without notifications or a webhook endpoint an add is one statement; with the notification service on it
    # takes the transaction path. What is stored, and the judgments' job, must not differ.
    batch = [
        activity(id="a-1", targetEntityId="ann1", targetSubEntityId="c1", entityData={"commentText": "Ünï 😀"},
                 changes={"status": {"from": None, "to": "open"}}, displayMessageTemplate="{{x}}",
                 displayMessageTemplateData={"n": [1, 2.5, True, None]}, actionIcon="https://i.io/c.png",
                 isActivityResolverUsed=True, timestamp=1_700_000_000_000),
        activity(featureType="custom", actionType="build.finished", targetEntityId="b1", id="a-2")
    ]
    stored = []
    for notifying in (False, True):
        t = new_tenant(client)
        enable_activities(client, t)
        if notifying:
            result(post(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, t.headers))
        assert result(add(client, t, *batch)) == {"success": True, "message": "2 activities added."}
        assert judgment_jobs(db, t) == [(["a-1", "a-2"], True)]
        # Velt's metadata names each tenant's own API key; the rest must match.
        records = [{k: v for k, v in r.items() if k != "metadata"} for r in listed(client, t)["data"]]
        stored.append(sorted(records, key=lambda r: r["id"]))
    assert stored[0] == stored[1]
    assert stored[0][0]["entityData"] == {"commentText": "Ünï 😀"}
    assert stored[0][0]["displayMessageTemplateData"] == {"n": [1, 2.5, True, None]}


def test_an_activity_that_is_no_judgment_and_has_a_new_id_needs_no_judgment_job(client, db):
    for notifying in (False, True):  # the one-statement path, then the transaction path
        t = new_tenant(client)
        enable_activities(client, t)
        if notifying:
            result(post(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, t.headers))
        viewed = activity(featureType="custom", actionType="document.viewed", targetEntityId="d1")
        assert result(add(client, t, viewed)) == {"success": True, "message": "1 activity added."}
        assert judgment_jobs(db, t) == []  # logged, and the worker has nothing to derive
        result(add(client, t, viewed, activity(targetEntityId="ann1")))
        records = {r["actionType"]: r["id"] for r in listed(client, t)["data"]}
        assert judgment_jobs(db, t) == [([records["comment.add"]], True)]  # only the one that may be a judgment


def test_an_overwrite_that_is_no_judgment_removes_the_judgment_of_the_earlier_activity(client, db, live):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add(client, t, activity(id="a-1", entityData={"commentText": "Wrong clause cited"})))
    settle_jobs(live, t)
    judged = "select count(*) as n from judgments where api_key_id = %s and id = 'a-1'"
    assert db.execute(judged, (t.api_key, )).fetchone()["n"] == 1
    result(add(client, t, activity(id="a-1", featureType="custom", actionType="document.viewed", targetEntityId="d1")))
    settle_jobs(live, t)
    assert db.execute(judged, (t.api_key, )).fetchone()["n"] == 0


def test_an_add_while_redis_is_down_leaves_the_judgments_job_for_the_sweep(live, client, db, tmp_path):
    t = new_tenant(client)
    enable_activities(client, t)
    svc = dataclasses.replace(live.svc, redis=redis_client(f"unix://{tmp_path}/none.sock"))
    data = AddActivities.model_validate(
        {"organizationId": "org1", "documentId": "doc1", "activities": [activity(id="a-1")]})
    caller = Caller(api_key_id=t.api_key, workspace_id=t.workspace["id"])
    assert live.run(service.add(svc, tenant=caller, data=data))["message"] == "1 activity added."
    assert [r["id"] for r in listed(client, t)["data"]] == ["a-1"]
    assert judgment_jobs(db, t) == [(["a-1"], False)]  # unsent: the worker's sweep sends it


def test_history_timestamp_and_future_refused(client, clock):
    t = new_tenant(client)
    enable_activities(client, t)
    past = int(clock["now"] * 1000) - 86_400_000
    result(add(client, t, activity(id="old", timestamp=past)))
    assert listed(client, t)["data"][0]["timestamp"] == past
    err = error(add(client, t, activity(timestamp=int(clock["now"] * 1000) + 3_600_000)), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["activities", "0", "timestamp"]]


@pytest.mark.parametrize(
    "body, paths",
    [({}, [["activities"], ["documentId"], ["organizationId"]]),
     ({"organizationId": "o", "documentId": "d", "activities": []}, [["activities"]]),
     ({"organizationId": "o", "documentId": "d", "activities": [{"featureType": "poll"}]
       }, [["activities", "0", "actionType"], ["activities", "0", "actionUser"], ["activities", "0", "featureType"]]),
     ({"organizationId": "o", "documentId": "d", "activities": [activity(actionUser={"name": "x"})]
       }, [["activities", "0", "actionUser", "userId"]]),
     ({"organizationId": "o", "documentId": "d", "activities": [activity(featureType="custom")]
       }, [["activities", "0", "targetEntityId"]]),
     ({"organizationId": 1, "documentId": "d", "activities": [activity()]}, [["organizationId"]])])
def test_add_validation(client, body, paths):
    t = new_tenant(client)
    enable_activities(client, t)
    err = error(post(client, ADD, body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == paths
    assert listed(client, t)["data"] == []


def test_update_keyed_results(client):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add(client, t, activity(id="a1", actionIcon="old")))
    body = {
        "organizationId": "org1", "activities": [{"id": "a1", "entityData": {"commentText": "edited"}}, {"id": "nope"}]
    }
    data = result(post(client, UPDATE, body, t.headers))
    assert data == {
        "a1": {"success": True, "message": "Activity updated."},
        "nope": {"success": False, "message": "Failed to update activity."}
    }
    [record] = listed(client, t)["data"]
    assert record["entityData"] == {"commentText": "edited"} and record["actionIcon"] == "old"


def test_update_in_another_org_or_tenant_fails(client):
    a, b = new_tenant(client), new_tenant(client)
    enable_activities(client, a)
    result(add(client, a, activity(id="a1")))
    body = {"organizationId": "org1", "activities": [{"id": "a1", "actionIcon": "x"}]}
    assert result(post(client, UPDATE, body, b.headers))["a1"]["success"] is False
    other_org = {"organizationId": "org2", "activities": [{"id": "a1", "actionIcon": "x"}]}
    assert result(post(client, UPDATE, other_org, a.headers))["a1"]["success"] is False


def test_get_filters_order_and_paging(client, clock):
    t = new_tenant(client)
    enable_activities(client, t)
    base = int(clock["now"] * 1000) - 10_000
    for i in range(5):
        result(add(client, t, activity(id=f"a{i}", timestamp=base + i, targetEntityId=f"ann{i % 2}"),
                   doc=f"doc{i % 2}"))
    page = listed(client, t, pageSize=2)
    assert [r["id"] for r in page["data"]] == ["a4", "a3"]
    page2 = listed(client, t, pageSize=2, pageToken=page["pageToken"])
    assert [r["id"] for r in page2["data"]] == ["a2", "a1"]
    page3 = listed(client, t, pageSize=2, pageToken=page2["pageToken"])
    assert [r["id"] for r in page3["data"]] == ["a0"] and page3["pageToken"] is None
    assert [r["id"] for r in listed(client, t, order="asc", documentId="doc1")["data"]] == ["a1", "a3"]
    assert [r["id"] for r in listed(client, t, targetEntityId="ann0", activityIds=["a0", "a4"])["data"]] == ["a4", "a0"]
    assert listed(client, t, userId="someone-else")["data"] == []
    error(post(client, GET, {"organizationId": "org1", "pageToken": "garbage!"}, t.headers), "INVALID_ARGUMENT")


def test_delete(client):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add(client, t, activity(id="a1"), activity(id="a2")))
    data = result(post(client, DELETE, {"organizationId": "org1", "activityIds": ["a1"]}, t.headers))
    assert data["deletedIds"] == ["a1"]
    assert [r["id"] for r in listed(client, t)["data"]] == ["a2"]
    error(post(client, DELETE, {"organizationId": "org1"}, t.headers), "INVALID_ARGUMENT")


def test_delete_by_target_entity_as_velt_py_sends_it(client, sdk):
    t = new_tenant(client)
    enable_activities(client, t)
    result(
        add(client, t, activity(id="a1", targetEntityId="ann1"), activity(id="a2", targetEntityId="ann2"),
            activity(id="a3", targetEntityId="ann1")))
    answer = sdk(t).api.activities.deleteActivities(
        DeleteActivitiesRequest(organizationId="org1", targetEntityId="ann1"))
    assert sorted(answer["result"]["data"]["deletedIds"]) == ["a1", "a3"]
    assert [r["id"] for r in listed(client, t)["data"]] == ["a2"]
    # Narrowing filters combine: another document's activities about the entity stay.
    assert result(
        post(client, DELETE, {"organizationId": "org1", "documentId": "elsewhere", "targetEntityId": "ann2"},
             t.headers))["deletedIds"] == []
    err = error(post(client, DELETE, {"organizationId": "org1", "targetEntityId": ""}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["targetEntityId"]]


def test_other_tenant_sees_nothing(client):
    a, b = new_tenant(client), new_tenant(client)
    enable_activities(client, a)
    enable_activities(client, b)
    result(add(client, a, activity(id="secret")))
    assert listed(client, b)["data"] == []
    assert (result(post(client, DELETE, {"organizationId": "org1", "activityIds": ["secret"]},
                        b.headers))["deletedIds"] == [])
    assert len(listed(client, a)["data"]) == 1
