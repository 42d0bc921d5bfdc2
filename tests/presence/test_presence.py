"""Presence: update/add (heartbeat), get with away/offline by staleness, delete, validation, tenants."""

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from collab.kit.jobs import transaction
from collab.presence import repository as presence_repo
from support.helpers import error, issue_paths, new_tenant, post, result

UPDATE, ADD, GET, DELETE = (f"/v2/presence/{op}" for op in ("update", "add", "get", "delete"))
WHERE = {"organizationId": "o1", "documentId": "d1"}


def update(client, t, *users, path=UPDATE, **where):
    return post(client, path, {**WHERE, **where, "users": list(users)}, t.headers)


def present(client, t, **where):
    return result(post(client, GET, {**WHERE, **where}, t.headers))


def statuses(client, t, **where):
    return {u["userId"]: u["status"] for u in present(client, t, **where)}


def ms(clock):
    return int(clock["now"] * 1000)


def test_update_add_and_get(client, clock):
    t = new_tenant(client)
    assert result(update(client, t, {"userId": "u2", "name": "Bo", "email": "bo@example.com"})) == {"success": True}
    clock["now"] += 1
    assert result(update(client, t, {"userId": "u1", "status": "busy"}, path=ADD)) == {"success": True}
    assert present(client, t) == [{"userId": "u1", "status": "busy", "lastSeen": ms(clock)}, {
        "userId": "u2", "name": "Bo", "email": "bo@example.com", "status": "online", "lastSeen": ms(clock) - 1000
    }]
    # Both versions of the path answer, and the envelope carries a message.
    body = post(client, "/v1/presence/get", WHERE, t.headers).json()["result"]
    assert body["status"] == "success" and body["message"] and len(body["data"]) == 2


def test_update_keeps_name_and_email_and_defaults_status_to_online(client, clock):
    t = new_tenant(client)
    result(update(client, t, {"userId": "u1", "name": "Ana", "email": "ana@example.com", "status": "busy"}))
    clock["now"] += 30
    result(update(client, t, {"userId": "u1"}))
    assert present(client, t) == [{
        "userId": "u1", "name": "Ana", "email": "ana@example.com", "status": "online", "lastSeen": ms(clock)
    }]
    result(update(client, t, {"userId": "u1", "name": "Ana B."}))
    [user] = present(client, t)
    assert user["name"] == "Ana B." and user["email"] == "ana@example.com"


def test_away_and_offline_at_exact_boundaries(client, clock):
    t = new_tenant(client)
    start = clock["now"]
    result(
        update(client, t, {"userId": "online"}, {"userId": "busy", "status": "busy"},
               {"userId": "gone", "status": "offline"}))
    expected = [(299.999, {"online": "online", "busy": "busy", "gone": "offline"}),
                (300, {"online": "away", "busy": "away", "gone": "offline"}),
                (599.999, {"online": "away", "busy": "away", "gone": "offline"}),
                (600, {"online": "offline", "busy": "offline", "gone": "offline"}),
                (86_400, {"online": "offline", "busy": "offline", "gone": "offline"})]
    for elapsed, reads in expected:
        clock["now"] = start + elapsed
        assert statuses(client, t) == reads, elapsed
    # Offline users stay listed, with when they were last seen.
    assert {u["lastSeen"] for u in present(client, t)} == {int(start * 1000)}
    # Seen again: back to what they send.
    result(update(client, t, {"userId": "busy", "status": "busy"}, {"userId": "online"}))
    assert statuses(client, t) == {"online": "online", "busy": "busy", "gone": "offline"}


def test_thresholds_come_from_settings(client, clock, live, monkeypatch):
    t = new_tenant(client)
    monkeypatch.setattr(live.svc.settings, "presence_away_s", 10)
    monkeypatch.setattr(live.svc.settings, "presence_offline_s", 20)
    start = clock["now"]
    result(update(client, t, {"userId": "u1"}))
    clock["now"] = start + 9.999
    assert statuses(client, t) == {"u1": "online"}
    clock["now"] = start + 10
    assert statuses(client, t) == {"u1": "away"}
    clock["now"] = start + 20
    assert statuses(client, t) == {"u1": "offline"}


def test_presence_is_per_document_and_organization(client):
    t = new_tenant(client)
    result(update(client, t, {"userId": "u1"}))
    result(update(client, t, {"userId": "u2"}, documentId="d2"))
    result(update(client, t, {"userId": "u3"}, organizationId="o2"))
    assert list(statuses(client, t)) == ["u1"]
    assert list(statuses(client, t, documentId="d2")) == ["u2"]
    assert list(statuses(client, t, organizationId="o2")) == ["u3"]
    assert present(client, t, documentId="nobody-here") == []


def test_delete(client):
    t = new_tenant(client)
    result(update(client, t, {"userId": "u1"}, {"userId": "u2"}, {"userId": "u3"}))
    result(update(client, t, {"userId": "u1"}, documentId="d2"))
    body = {**WHERE, "userIds": ["u1", "u3", "never-here"]}
    assert result(post(client, DELETE, body, t.headers)) == {"success": True}
    assert list(statuses(client, t)) == ["u2"]
    assert list(statuses(client, t, documentId="d2")) == ["u1"]


def test_concurrent_heartbeats_naming_the_same_users(client, live):
    t = new_tenant(client)
    users = [{"userId": f"u{i:02d}"} for i in range(20)]

    def beat(i):
        with httpx.Client(base_url=live.url, timeout=30) as c:
            return update(c, t, *(users if i % 2 else users[::-1])).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(beat, range(16))) == {200}
    assert statuses(client, t) == {u["userId"]: "online" for u in users}


@pytest.mark.parametrize(
    "path, body, paths",
    [(UPDATE, {}, [["documentId"], ["organizationId"], ["users"]]), (UPDATE, {**WHERE, "users": []}, [["users"]]),
     (UPDATE, {**WHERE, "users": [{"name": "x"}]}, [["users", "0", "userId"]]),
     (UPDATE, {**WHERE, "users": [{"userId": 5}]}, [["users", "0", "userId"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1", "status": ""}]}, [["users", "0", "status"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1", "status": "   "}]}, [["users", "0", "status"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1", "status": "x" * 51}]}, [["users", "0", "status"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1", "status": True}]}, [["users", "0", "status"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1", "name": "x" * 501}]}, [["users", "0", "name"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1", "email": "e" * 321}]}, [["users", "0", "email"]]),
     (UPDATE, {**WHERE, "users": [{"userId": "u1"}, {"userId": "u1"}]}, [["users"]]),
     (UPDATE, {**WHERE, "users": [{"userId": f"u{i}"} for i in range(1001)]}, [["users"]]),
     (UPDATE, {**WHERE, "users": {"userId": "u1"}}, [["users"]]),
     (ADD, {"organizationId": 1, "documentId": "d1", "users": [{"userId": "u1"}]}, [["organizationId"]]),
     (ADD, {"organizationId": "o1", "documentId": "x" * 201, "users": [{"userId": "u1"}]}, [["documentId"]]),
     (GET, {"organizationId": "o1"}, [["documentId"]]), (DELETE, WHERE, [["userIds"]]),
     (DELETE, {**WHERE, "userIds": []}, [["userIds"]]), (DELETE, {**WHERE, "userIds": "u1"}, [["userIds"]])])
def test_validation(client, path, body, paths):
    t = new_tenant(client)
    err = error(post(client, path, body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == paths
    assert present(client, t) == []


def test_another_tenant_sees_and_changes_nothing(client, clock):
    a, b = new_tenant(client), new_tenant(client)
    result(update(client, a, {"userId": "u1", "name": "Ana", "status": "busy"}))
    assert present(client, b) == []
    assert result(post(client, DELETE, {**WHERE, "userIds": ["u1"]}, b.headers)) == {"success": True}
    result(update(client, b, {"userId": "u1", "name": "Other"}))
    assert present(client, a) == [{"userId": "u1", "name": "Ana", "status": "busy", "lastSeen": ms(clock)}]
    assert present(client, b) == [{"userId": "u1", "name": "Other", "status": "online", "lastSeen": ms(clock)}]


def test_forget_user_scoped_and_unscoped(client, live):
    t = new_tenant(client)
    result(update(client, t, {"userId": "u1"}, {"userId": "u2"}))
    result(update(client, t, {"userId": "u1"}, organizationId="o2"))
    result(update(client, t, {"userId": "u1"}, organizationId="o3", documentId="d9"))

    def forget(organization_ids):

        async def run():
            async with transaction(live.svc.pool, None) as tx:
                return await presence_repo.forget_user(tx.conn, api_key_id=t.api_key, user_ids=["u1"],
                                                       organization_ids=organization_ids)

        return live.run(run())

    assert forget(["o1"]) == 1
    assert list(statuses(client, t)) == ["u2"]
    assert list(statuses(client, t, organizationId="o2")) == ["u1"]
    assert forget(None) == 2
    assert present(client, t, organizationId="o2") == []
    assert present(client, t, organizationId="o3", documentId="d9") == []
    assert list(statuses(client, t)) == ["u2"]
