"""Awareness under abuse: bounded per message, per state, per socket and per room; a client id is its socket's own."""

import json

from collab.kit.lib0 import buf, uint
from support.helpers import new_tenant
from support.realtime_support import AWARENESS, QUERY_AWARENESS, YClient, frame, room, token_for, url

LIMITED, TOO_LARGE, MALFORMED = 4429, 4413, 4400


def _awareness(*entries: tuple[int, int, object]) -> bytes:
    body = uint(len(entries))
    for client, clock, state in entries:
        body += uint(client) + uint(clock) + buf(json.dumps(state).encode())
    return frame(AWARENESS, body)


def _setup(client):
    t = new_tenant(client)
    room(client, t)
    return t, token_for(client, t, "ed", "org", "doc"), token_for(client, t, "vic", "org", "doc", role="viewer")


def test_a_message_of_many_clients_is_refused_before_it_is_parsed(client, live):
    """The review's attack: one message of 330,000 client entries (~2 MB). Refused at its count, the room unchanged."""
    t, ed, vic = _setup(client)
    # Built here, not in the scenario: that runs on the service's loop, which the tripwire holds to 250 ms of CPU.
    entries = b"".join(uint(1000 + i) + uint(0) + buf(b"1") for i in range(330_000))
    attack = frame(AWARENESS, uint(330_000) + entries)

    async def scenario():
        watcher = await YClient.open(url(live, "org", "doc", "e1", ed))
        attacker = await YClient.open(url(live, "org", "doc", "e1", vic))
        await attacker.ws.send(attack)
        assert await attacker.closed() == MALFORMED
        await watcher.handled()
        assert watcher.awareness == {}
        rt_room = live.app.state.realtime.hub.rooms[(t.api_key, "org", "doc")]
        assert rt_room.awareness.get("e1", {}) == {} and rt_room.awareness_bytes.get("e1", 0) == 0
        await watcher.close()

    live.run(scenario())


def test_a_state_over_its_byte_cap_closes_with_4413(client, live, tune):
    tune(realtime_awareness_state_bytes=1024)
    t, ed, vic = _setup(client)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic))
        await c.set_awareness(5, 1, {"user": {"name": "Vic"}, "blob": "x" * 1024})
        assert await c.closed() == TOO_LARGE
        ok = await YClient.open(url(live, "org", "doc", "e1", ed))
        await ok.set_awareness(6, 1, {"user": {"name": "Ed"}})  # a normal cursor still goes through
        await ok.handled()
        await ok.close()

    live.run(scenario())


def test_a_socket_speaks_for_a_few_clients_only(client, live, tune):
    tune(realtime_awareness_clients=2)
    t, ed, vic = _setup(client)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic))
        await c.set_awareness(1, 1, {"n": 1})
        await c.set_awareness(2, 1, {"n": 2})
        await c.set_awareness(1, 2, None)  # a client that left frees its place
        await c.set_awareness(3, 1, {"n": 3})
        await c.handled()
        await c.set_awareness(4, 1, {"n": 4})  # a third at once
        assert await c.closed() == LIMITED

    live.run(scenario())


def test_an_editor_rooms_states_are_capped_in_bytes(client, live, tune):
    tune(realtime_awareness_room_bytes=8192, realtime_awareness_state_bytes=4096)
    t, ed, vic = _setup(client)

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", vic))
        await a.set_awareness(1, 1, {"blob": "a" * 3000})
        await a.set_awareness(2, 1, {"blob": "b" * 3000})
        await a.handled()
        b = await YClient.open(url(live, "org", "doc", "e1", vic))
        await b.set_awareness(3, 1, {"blob": "c" * 3000})  # past 8 KiB in the room
        assert await b.closed() == TOO_LARGE
        # The answer to a query is bounded by the room's cap.
        seen = a.awareness_messages
        await a.ws.send(uint(QUERY_AWARENESS))
        await a.until(lambda: a.awareness_messages > seen)
        assert set(a.awareness) == {1, 2}
        await a.close()

    live.run(scenario())


def test_no_socket_can_change_or_remove_another_users_cursor(client, live):
    """The review's spoof: a viewer sent the editor's client id with a higher clock, then null. Both are dropped."""
    t, ed, vic = _setup(client)

    async def scenario():
        editor = await YClient.open(url(live, "org", "doc", "e1", ed))
        await editor.set_awareness(4242, 1, {"user": {"name": "Ed"}})
        viewer = await YClient.open(url(live, "org", "doc", "e1", vic))
        await viewer.until(lambda: 4242 in viewer.awareness)
        await viewer.ws.send(_awareness((4242, 5, {"user": {"name": "Boss (spoofed by vic)"}}), (777, 1, {"n": "vic"})))
        await editor.until(lambda: 777 in editor.awareness)  # vic's own client is relayed, the spoof is not
        await viewer.ws.send(_awareness((4242, 6, None)))
        await viewer.handled()
        await editor.handled()  # the answer to its query holds the room's states: its own is as it set it
        assert editor.awareness[4242] == {"user": {"name": "Ed"}}
        third = await YClient.open(url(live, "org", "doc", "e1", vic))
        await third.until(lambda: 4242 in third.awareness and 777 in third.awareness)
        assert third.awareness[4242] == {"user": {"name": "Ed"}}
        # When the editor leaves, its client goes with it.
        await editor.close()
        await third.until(lambda: 4242 not in third.awareness)
        await viewer.close()
        await third.close()

    live.run(scenario())


def test_query_awareness_is_rate_limited(client, live, tune):
    tune(realtime_updates_per_s=5.0)
    t, ed, vic = _setup(client)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic))
        for _ in range(40):
            await c.ws.send(uint(QUERY_AWARENESS))
        assert await c.closed() == LIMITED

    live.run(scenario())


def test_a_reconnecting_user_keeps_its_client_id(client, live):
    """The same user's new socket may take over its client id while the old socket is still open (a reconnect the
    server has not noticed yet); the old socket's goodbye then removes nothing."""
    t, ed, vic = _setup(client)

    async def scenario():
        watcher = await YClient.open(url(live, "org", "doc", "e1", vic))
        old = await YClient.open(url(live, "org", "doc", "e1", ed))
        await old.set_awareness(99, 1, {"user": {"name": "Ed"}, "cursor": 1})
        await watcher.until(lambda: watcher.awareness.get(99, {}).get("cursor") == 1)
        new = await YClient.open(url(live, "org", "doc", "e1", ed))
        await new.set_awareness(99, 2, {"user": {"name": "Ed"}, "cursor": 2})
        await watcher.until(lambda: watcher.awareness.get(99, {}).get("cursor") == 2)
        await old.close()
        await new.handled()
        await watcher.handled()
        assert watcher.awareness[99] == {"user": {"name": "Ed"}, "cursor": 2}
        await new.close()
        await watcher.until(lambda: 99 not in watcher.awareness)
        await watcher.close()

    live.run(scenario())
