"""Sync and subscriptions under abuse: every message type is priced by its cost, the send queue is bounded in bytes,
sync answers come from the room's document, and a socket's subscriptions are capped."""

import asyncio
import json

from collab.crdt import ydoc
from collab.kit.lib0 import uint
from support.helpers import new_tenant, post, result
from support.realtime_support import LIVESTATE, STEP1, STEP2, SYNC, YClient, frame, room, token_for, url

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


class Held:
    """What the server holds for one socket, watched from the server's side: the bytes its Connection accepted and
    the writer has not yet handed over (waiting or being sent), plus the transport's unwritten buffer. Sampled at
    every message offered and every send done, until the socket is closed (a close drops what was waiting)."""

    def __init__(self, conn, transport, monkeypatch):
        self.conn, self.transport = conn, transport
        self.accepted = self.written = self.peak = self.answers = 0
        self.changed = asyncio.Event()
        send, send_bytes = conn.send, conn.ws.send_bytes

        def offered(data: bytes) -> None:
            send(data)
            if conn.close_code is None:
                self.accepted += len(data)
            self.answers += data[:2] == bytes([SYNC, STEP2])
            self.sample()

        async def sent(data: bytes) -> None:
            await send_bytes(data)
            self.written += len(data)
            self.sample()

        monkeypatch.setattr(conn, "send", offered)
        monkeypatch.setattr(conn.ws, "send_bytes", sent)

    def sample(self) -> None:
        if self.conn.close_code is None:
            self.peak = max(self.peak, self.accepted - self.written + self.transport.get_write_buffer_size())
        self.changed.set()

    async def until(self, predicate) -> None:
        while not predicate():
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 30)


def _transport(live, ws):
    """The server's transport of a client's socket (uvicorn's connection whose peer is the client's address)."""
    return next(p.transport for p in live.server.server_state.connections if p.client == ws.local_address[:2])


def test_the_send_queue_is_bounded_in_bytes(client, live, tune, monkeypatch):
    """A client that reads nothing and asks for the 1 MB document again, one request at a time, until the server gives
    up on it: the bytes the server holds for the socket (waiting, being sent, in the transport's buffer) never pass
    the bound, and the socket is closed with 1013. However much the kernel's socket buffers take first (they autotune
    to tens of MiB on some machines), and whatever else runs: each request waits for its answer, not for a time."""
    limit = 4 * 1024 * 1024
    tune(realtime_send_queue_bytes=limit, realtime_updates_per_s=1000)  # a burst of 200 step 1s is allowed
    t, vic = _setup(client, text="z" * 1_000_000)
    rt = live.app.state.realtime

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", vic))
        [conn] = rt.hub.rooms[(t.api_key, "org", "doc")].editors["e1"]
        transport = _transport(live, c.ws)
        held = Held(conn, transport, monkeypatch)
        c.ws.transport.pause_reading()  # from here the client reads nothing until the server has closed the socket
        for _ in range(150):  # 150 MB: far more than any kernel's socket buffers take
            asked = held.answers
            await c.ws.send(STEP1_EMPTY)
            await held.until(lambda: held.answers > asked)
            if conn.close_code is not None:
                break
        assert conn.close_code == SLOW, f"still open after {held.answers} answers, {held.written} bytes sent"
        # Within the transport's low-water mark: a message is counted as written once the send after it returns.
        assert 0 < held.peak <= limit + transport.get_write_buffer_limits()[0], held.peak
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
