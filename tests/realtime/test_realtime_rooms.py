"""Realtime rooms: awareness, live presence, live state, compaction, limits, webhooks for socket edits."""

import asyncio
import json

from support.factories import settle as settle_webhooks
from support.factories import webhook_tenant
from support.helpers import add_organization, new_tenant, post, result
from support.realtime_support import YClient, crdt_text, refused, room, settle, token_for, url


def presence(client, t, org="org", doc="doc"):
    body = {"organizationId": org, "documentId": doc}
    return {p["userId"]: p for p in result(post(client, "/v2/presence/get", body, t.headers))}


def test_awareness_relays_between_clients_and_presence_follows_connections(client, live):
    t = new_tenant(client)
    room(client, t)
    alice = token_for(client, t, "alice", "org", "doc")
    bob = token_for(client, t, "bob", "org", "doc", role="viewer")
    result(
        post(client, "/v2/presence/update",
             {"organizationId": "org", "documentId": "doc", "users": [{"userId": "carol"}]}, t.headers))

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", alice))
        await a.set_awareness(11, 1, {"user": {"name": "Alice"}, "cursor": 3})
        b = await YClient.open(url(live, "org", "doc", "e1", bob))
        # A newcomer is told the states the room knows; then changes relay as they happen, both ways.
        await b.until(lambda: b.awareness.get(11, {}).get("cursor") == 3)
        await b.set_awareness(22, 1, {"user": {"name": "Bob"}})
        await a.until(lambda: 22 in a.awareness)
        await a.set_awareness(11, 2, {"user": {"name": "Alice"}, "cursor": 9})
        await b.until(lambda: b.awareness[11]["cursor"] == 9)
        here = presence(client, t)
        assert {u: here[u]["status"] for u in here} == {"alice": "online", "bob": "online", "carol": "online"}
        assert here["alice"]["name"] == "Alice" and here["alice"]["email"] == "alice@example.com"
        # Bob leaves: Alice is told his awareness client is gone, and he reads offline.
        await b.close()
        await a.until(lambda: 22 not in a.awareness)
        rt = live.app.state.realtime
        live.run(rt.until(lambda: rt.hub.count((t.api_key, "org", "doc")) == 1))
        assert presence(client, t)["bob"]["status"] == "offline"
        await a.close()

    asyncio.run(scenario())
    settle(live, t)
    here = presence(client, t)
    assert here["alice"]["status"] == "offline" and here["carol"]["status"] == "online"


def test_idle_users_read_away_and_idle_sockets_close(client, live, tune):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    rt = live.app.state.realtime

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        tune(realtime_away_after_s=0.000001)
        live.run(rt.upkeep.tick())
        assert presence(client, t)["alice"]["status"] == "away"
        tune(realtime_idle_timeout_s=0.000001)
        live.run(rt.upkeep.tick())
        assert await a.closed() == 4408

    asyncio.run(scenario())
    settle(live, t)
    assert presence(client, t)["alice"]["status"] == "offline"


def test_a_quiet_socket_gets_a_keepalive_that_changes_nothing(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    rt = live.app.state.realtime

    async def quiet_for_an_hour():
        for room_ in rt.hub.rooms.values():
            for conn in room_.connections():
                conn.last_sent -= 3600
        await rt.upkeep.tick()

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        await a.set_awareness(7, 1, {"name": "alice"})
        heard = a.awareness_messages
        live.run(quiet_for_an_hour())
        await a.until(lambda: a.awareness_messages > heard)
        assert str(a.text) == "Hello" and a.awareness == {}  # its own state is not echoed; nothing changed
        await a.edit(lambda text: text.insert(0, "Still here. "))
        await a.handled()  # stored before the REST read below
        await a.close()

    asyncio.run(scenario())
    assert crdt_text(client, t) == "Still here. Hello"


def test_livestate_broadcast_get_merge_and_subscribe(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    key = {"organizationId": "org", "documentId": "doc"}

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        await a.livestate_op("subscribe", "cursor-mode")
        result(post(client, "/v2/livestate/broadcast", {**key, "liveStateDataId": "other", "data": 1},
                    t.headers))  # not subscribed: not sent
        result(
            post(client, "/v2/livestate/broadcast",
                 {**key, "liveStateDataId": "cursor-mode", "data": {"mode": "draw", "size": 2}}, t.headers))
        await a.until(lambda: len(a.livestate) == 1)
        assert a.livestate[0]["op"] == "data" and a.livestate[0]["data"] == {"mode": "draw", "size": 2}
        result(
            post(client, "/v2/livestate/broadcast",
                 {**key, "liveStateDataId": "cursor-mode", "data": {"size": 3}, "merge": True}, t.headers))
        await a.until(lambda: len(a.livestate) == 2)
        assert a.livestate[1]["data"] == {"mode": "draw", "size": 3}
        assert all(m["liveStateDataId"] == "cursor-mode" for m in a.livestate)
        # A subscriber that comes later gets the value kept at once.
        b = await YClient.open(url(live, "org", "doc", "e1", token))
        await b.livestate_op("subscribe", "other")
        await b.until(lambda: len(b.livestate) == 1)
        assert b.livestate[0]["data"] == 1
        await b.livestate_op("unsubscribe", "other")
        await a.close()
        await b.close()

    asyncio.run(scenario())
    kept = result(post(client, "/v2/livestate/get", key, t.headers))
    assert [(v["liveStateDataId"], v["data"]) for v in kept] == [("cursor-mode", {"mode": "draw", "size": 3}),
                                                                 ("other", 1)]
    one = result(post(client, "/v2/livestate/get", {**key, "liveStateDataId": "other"}, t.headers))
    assert [v["data"] for v in one] == [1]
    # merge over a value that is not an object replaces it.
    result(
        post(client, "/v2/livestate/broadcast", {**key, "liveStateDataId": "other", "data": {"a": 1}, "merge": True},
             t.headers))
    kept = result(post(client, "/v2/livestate/get", {**key, "liveStateDataId": "other"}, t.headers))
    assert kept[0]["data"] == {"a": 1}
    # Another tenant sees none of it.
    assert result(post(client, "/v2/livestate/get", key, new_tenant(client).headers)) == []


def test_livestate_validation(client):
    t = new_tenant(client)
    bad = post(client, "/v2/livestate/broadcast",
               {"organizationId": "org", "documentId": "doc", "liveStateDataId": "x"}, t.headers)
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert bad.json()["error"]["details"]["issues"][0]["path"] == ["data"]
    wrong = post(client, "/v2/livestate/get", {"organizationId": 5, "documentId": "doc"}, t.headers)
    assert wrong.status_code == 400


def test_compaction_folds_updates_and_keeps_content(client, live, db, tune):
    tune(realtime_compact_every=3)
    t = new_tenant(client)
    room(client, t, text="")
    token = token_for(client, t, "alice", "org", "doc")

    def pending():
        return db.execute("select count(*) as n from crdt_updates where api_key_id = %s", (t.api_key, )).fetchone()["n"]

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        b = await YClient.open(url(live, "org", "doc", "e1", token))
        for i in range(7):
            await a.edit(lambda text: text.insert(len(str(text)), str(i)))
        await b.until(lambda: str(b.text) == "0123456")
        await a.close()
        await b.close()

    asyncio.run(scenario())
    settle(live, t)
    live.run(_compacted(live))
    assert pending() == 0  # every third update, and the rest when the room emptied
    assert crdt_text(client, t) == "0123456"
    # The sweep folds what no process did (one that died, say).
    live.run(_append(live, t, "!"))
    assert pending() == 1 and crdt_text(client, t) == "0123456!"
    from collab.realtime.tasks import compact_sweep

    tune(realtime_compact_after_s=0)
    live.run(compact_sweep({"svc": live.svc}))
    assert pending() == 0 and crdt_text(client, t) == "0123456!"


async def _compacted(live):
    """Wait for the compactions the rooms started."""
    await asyncio.gather(*live.app.state.realtime.background)


async def _append(live, t, suffix):
    """An update appended as a socket would, by a process that then died before compacting it."""
    from pycrdt import Doc, Text

    from collab.crdt import repository as crdt_repo
    from collab.kit.jobs import transaction

    async with live.svc.pool.connection() as conn:
        rows = await crdt_repo.list_editors(conn, api_key_id=t.api_key, organization_id="org", document_id="doc",
                                            editor_id="e1", after_id=None, limit=1, yjs=False, budget=2**62)
    doc = Doc()
    doc.apply_update(rows[0]["state"])
    for update in rows[0]["pending"] or []:
        doc.apply_update(update)
    text = doc.get("content", type=Text)
    before = doc.get_state()
    text.insert(len(str(text)), suffix)
    async with transaction(live.svc.pool, None) as tx:
        await crdt_repo.append_update(tx.conn, api_key_id=t.api_key, organization_id="org", document_id="doc",
                                      editor_id="e1", update=doc.get_update(before), user_id="alice", now=0)


def test_rate_and_connection_limits_close_with_4429(client, live, tune):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        tune(realtime_max_connections_per_document=1)
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        assert await refused(url(live, "org", "doc", "e1", token)) == 4429
        tune(realtime_max_connections_per_document=10, realtime_max_connections_per_tenant=1)
        assert await refused(url(live, "org", "doc", "e1", token)) == 4429
        tune(realtime_max_connections_per_tenant=10)
        await a.close()
        tune(realtime_updates_per_s=1)  # a burst of two, then one a second
        b = await YClient.open(url(live, "org", "doc", "e1", token))
        for i in range(5):
            await b.edit(lambda text: text.insert(0, "x"))
        assert await b.closed() == 4429

    asyncio.run(scenario())


def test_socket_edits_stop_at_the_document_size_cap(client, live, tune):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        tune(crdt_max_state_bytes=2048)
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        await a.edit(lambda text: text.insert(0, "x" * 500))
        await a.edit(lambda text: text.insert(0, "y" * 2000))  # past the cap: refused, not stored
        assert await a.closed() == 4413

    asyncio.run(scenario())
    stored = crdt_text(client, t)
    assert "x" * 500 in stored and "y" not in stored


def test_a_slow_consumer_is_closed_not_buffered():
    from collab.realtime.rooms import Connection

    conn = Connection(None, user=None, role="editor", organization_id="o", document_id="d", editor_id="e", queue=3,
                      rate=10)
    for i in range(3):
        conn.send(b"x")
    assert conn.close_code is None and len(conn.pending) == 3
    conn.send(b"x")
    assert conn.close_code == 1013 and not conn.pending


def test_socket_edits_fire_crdt_webhooks(client, live, receiver, clock):
    t, _ = webhook_tenant(client, receiver)
    add_organization(client, t, "o1", "d1")
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "o1", "documentId": "d1", "editorId": "e1", "type": "text", "data": "hi"}, t.headers))
    settle_webhooks(live, t)
    clock["now"] += 10
    settle_webhooks(live, t)
    first = len(receiver.to("/hook"))
    token = token_for(client, t, "alice", "o1", "d1")

    async def scenario():
        a = await YClient.open(url(live, "o1", "d1", "e1", token))
        await a.edit(lambda text: text.insert(0, "oh "))
        await a.handled()  # another socket: nothing orders its sync after a's edit but this
        b = await YClient.open(url(live, "o1", "d1", "e1", token))
        assert str(b.text) == "oh hi"
        await a.close()
        await b.close()

    asyncio.run(scenario())
    clock["now"] += 10
    settle_webhooks(live, t)
    events = [json.loads(r.body) for r in receiver.to("/hook")][first:]
    assert [e["type"] for e in events] == ["crdt.update_data"]
    assert events[0]["data"]["payload"]["editorId"] == "e1"
    assert events[0]["data"]["payload"]["lastUpdatedBy"] == "alice"


def test_rooms_span_api_processes(client, live):
    """A second app (its own rooms, its own Redis subscriber) serving the same data: clients on each converge."""
    from collab.testing.live import Live

    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    other = Live(live.settings, worker=False).start()
    try:

        async def scenario():
            a = await YClient.open(url(live, "org", "doc", "e1", token))
            b = await YClient.open(url(other, "org", "doc", "e1", token))
            await a.edit(lambda text: text.insert(0, "A "))
            await b.until(lambda: str(b.text) == "A Hello")
            await b.edit(lambda text: text.insert(len(str(text)), " B"))
            await a.until(lambda: str(a.text) == "A Hello B")
            await b.set_awareness(7, 1, {"user": "b"})
            await a.until(lambda: 7 in a.awareness)
            result(
                post(client, "/v2/crdt/update",
                     {"organizationId": "org", "documentId": "doc", "editorId": "e1", "data": "A Hello B C"},
                     t.headers))
            await a.until(lambda: str(a.text) == "A Hello B C")
            await b.until(lambda: str(b.text) == "A Hello B C")
            await b.close()
            await a.until(lambda: 7 not in a.awareness)  # b's process said its awareness client left
            await a.close()

        asyncio.run(scenario())
    finally:
        other.stop()
    assert crdt_text(client, t) == "A Hello B C"


def test_a_user_still_connected_elsewhere_stays_online(client, live):
    """Another process wrote the user offline (their last socket there closed): one holding a socket says online."""
    from collab.realtime.upkeep import LEFT

    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    rt = live.app.state.realtime

    async def elsewhere_left():
        rt._from_elsewhere(rt.hub.rooms[(t.api_key, "org", "doc")], "", LEFT, b"alice")
        await asyncio.gather(*rt.background)

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        # What the other process does: write offline, then publish LEFT (delivered here by the hub).
        result(
            post(client, "/v2/presence/update",
                 {"organizationId": "org", "documentId": "doc", "users": [{"userId": "alice", "status": "offline"}]},
                 t.headers))
        assert presence(client, t)["alice"]["status"] == "offline"
        live.run(elsewhere_left())
        assert presence(client, t)["alice"]["status"] == "online"
        await a.close()

    asyncio.run(scenario())
