"""Sync and subscriptions under abuse: every message type is priced by its cost, the send queue is bounded in bytes,
sync answers come from the room's document, and a socket's subscriptions are capped."""

import json

from collab.crdt import ydoc
from collab.kit.lib0 import uint
from support.helpers import new_tenant, post, result
from support.realtime_support import LIVESTATE, STEP1, SYNC, YClient, frame, room, token_for, url

LIMITED, SLOW = 4429, 1013
STEP1_EMPTY = frame(SYNC, uint(0), step=STEP1)  # "send me everything": the review's 5-byte message


def _setup(client, text="Hello"):
    t = new_tenant(client)
    room(client, t, text=text)
    return t, token_for(client, t, "vic", "org", "doc", role="viewer")


def test_a_flood_of_sync_requests_is_refused(client, live):
    """The review's attack: 100 step 1s on a socket that reads nothing. It is closed, not left to pin documents."""
    t, vic = _setup(client, text="x" * 100_000)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic), sync=False)
        for _ in range(100):
            await c.ws.send(STEP1_EMPTY)
        assert await c.closed() == LIMITED

    live.run(scenario())


def test_sync_answers_come_from_the_rooms_document(client, live, monkeypatch):
    """Sync answers come from the room's copy of the document: read and folded once, then kept current by every
    update (a REST write included), not read and folded per request."""
    t, vic = _setup(client, text="y" * 10_000)
    folds = []
    real = ydoc.fold
    monkeypatch.setattr(ydoc, "fold", lambda *a: folds.append(1) or real(*a))

    async def many_syncs():
        sockets = [await YClient.open(url(live, "org", "doc", "e1", vic)) for _ in range(5)]
        for c in sockets:
            for _ in range(3):
                await c.ws.send(STEP1_EMPTY)
        for c in sockets:
            await c.handled()
        return sockets

    sockets = live.run(many_syncs())
    assert len(folds) == 1  # 5 opens and 15 sync requests of one version
    # A REST write reaches the room's document: the next socket's sync answers with it, without a new fold.
    result(
        post(client, "/v2/crdt/update",
             {"organizationId": "org", "documentId": "doc", "editorId": "e1", "data": "changed"}, t.headers))

    async def after_the_write():
        await sockets[0].until(lambda: str(sockets[0].text) == "changed")
        late = await YClient.open(url(live, "org", "doc", "e1", vic))
        assert str(late.text) == "changed"
        for c in [*sockets, late]:
            await c.close()

    live.run(after_the_write())
    assert len(folds) == 1


def test_the_send_queue_is_bounded_in_bytes(client, live, tune):
    tune(realtime_send_queue_bytes=4 * 1024 * 1024, realtime_updates_per_s=1000)
    t, vic = _setup(client, text="z" * 1_000_000)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic))
        # A client that stops reading while asking for the 1 MB document 80 times: more than the sockets' buffers
        # hold, so answers pile up in the server's queue until its byte bound closes the socket.
        c.ws.transport.pause_reading()
        for _ in range(80):
            await c.ws.send(STEP1_EMPTY)
        c.ws.transport.resume_reading()
        assert await c.closed() == SLOW

    live.run(scenario())


def test_live_state_subscriptions_are_capped_per_socket(client, live, tune):
    tune(realtime_subscriptions_per_socket=5)
    t, vic = _setup(client)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic))
        for n in range(5):
            await c.livestate_op("subscribe", f"topic-{n}")
        await c.livestate_op("subscribe", "topic-0")  # again: no new place taken
        await c.handled()
        await c.ws.send(frame(LIVESTATE, json.dumps({"op": "subscribe", "liveStateDataId": "one-more"}).encode()))
        assert await c.closed() == LIMITED

    live.run(scenario())
