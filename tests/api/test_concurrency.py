"""Concurrent writers: one root workspace per e-mail, and no config update lost to a race."""

from concurrent.futures import ThreadPoolExecutor

import httpx

from support.helpers import fresh_email, fresh_ip, new_tenant, post, result


def test_concurrent_creates_for_one_email_make_one_workspace(live, db):
    email = fresh_email()

    def create(i):
        with httpx.Client(base_url=live.url, timeout=30) as client:
            body = {"ownerEmail": email, "workspaceName": f"WS {i}"}
            return post(client, "/v2/workspace/create", body, headers={"x-forwarded-for": fresh_ip()}).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(create, range(8)))
    assert codes.count(200) == 1 and set(codes) <= {200, 403}
    rows = db.execute("select is_root from workspaces where lower(owner_email) = lower(%s)", (email, )).fetchall()
    assert rows == [{"is_root": True}]


def test_concurrent_trigger_updates_are_all_kept(client, live):
    tenant = new_tenant(client)
    result(post(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, tenant.headers))
    events = [
        "comment.add", "comment.update", "comment.delete", "comment.accept", "comment.reject", "comment.reaction_add"
    ]

    def switch_off(event):
        with httpx.Client(base_url=live.url, timeout=30) as c:
            body = {"notificationServiceConfig": {"triggers": {"comment": {event: False}}}}
            return post(c, "/v2/workspace/notificationconfig/update", body, tenant.headers).status_code

    with ThreadPoolExecutor(6) as pool:
        assert set(pool.map(switch_off, events)) == {200}
    stored = result(post(client, "/v2/workspace/notificationconfig/get", {}, tenant.headers))
    triggers = stored["notificationServiceConfig"]["triggers"]["comment"]
    assert all(triggers[event] is False for event in events)
    assert triggers["comment_annotation.add"] is True
