"""Realtime test support: rooms set up over REST, and a pycrdt client speaking y-websocket over `websockets`."""

import asyncio
import json
from typing import Any
from urllib.parse import quote

from pycrdt import Doc, Text, get_state
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from collab.kit.lib0 import Reader, buf, uint
from support.helpers import Tenant, add_organization, post, result

SYNC, AWARENESS, QUERY_AWARENESS, LIVESTATE = 0, 1, 3, 100
STEP1, STEP2, UPDATE = 0, 1, 2


def frame(kind: int, *parts: bytes, step: int | None = None) -> bytes:
    head = uint(kind) + (uint(step) if step is not None else b"")
    return head + b"".join(buf(p) for p in parts)


def token_for(client, t: Tenant, user: str, org: str, doc: str, role: str = "editor", **resource: Any) -> str:
    """A user token granting `role` on the document (the grant is stored too)."""
    body = {
        "userId": user, "userProperties": {"name": user.title(), "email": f"{user}@example.com"}, "permissions": {
            "resources": [{"type": "document", "id": doc, "organizationId": org, "accessRole": role, **resource}]
        }
    }
    return result(post(client, "/v2/auth/generate_token", body, t.headers))["token"]


def room(client, t: Tenant, *, org: str = "org", doc: str = "doc", editor: str = "e1", text: str = "Hello") -> None:
    """An organization, a document in it and a text editor of that document."""
    add_organization(client, t, org, doc)
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": org, "documentId": doc, "editorId": editor, "type": "text", "data": text}, t.headers))


def crdt_text(client, t: Tenant, *, org: str = "org", doc: str = "doc", editor: str = "e1") -> str:
    body = {"organizationId": org, "documentId": doc, "editorId": editor}
    return result(post(client, "/v2/crdt/get", body, t.headers))[0]["data"]


def url(live, org: str, doc: str, editor: str, token: str | None, version: str = "v2") -> str:
    base = live.url.replace("http://", "ws://")
    path = "/".join(quote(i, safe="") for i in (org, doc, editor))
    return f"{base}/{version}/realtime/{path}" + (f"?token={quote(token)}" if token is not None else "")


class YClient:
    """A y-websocket client on pycrdt: syncs a Doc, sends its edits, applies what the server relays."""

    def __init__(self, ws, key: str = "content"):
        self.ws = ws
        self.doc = Doc()
        self.text = self.doc.get(key, type=Text)
        self.awareness: dict[int, Any] = {}
        self.livestate: list[dict[str, Any]] = []
        self.synced = False
        self.awareness_messages = 0

    @classmethod
    async def open(cls, address: str, *, sync: bool = True, key: str = "content") -> "YClient":
        ws = await connect(address, max_size=None)
        c = cls(ws, key)
        if sync:
            await c.ws.send(frame(SYNC, get_state(c.doc.get_update()), step=STEP1))
            await c.until(lambda: c.synced)
        return c

    async def recv_one(self, timeout: float = 10.0) -> bytes:
        data = await asyncio.wait_for(self.ws.recv(), timeout)
        self.apply(data)
        return data

    def apply(self, data: bytes) -> None:
        # The server's own lib0 reader; real y-websocket clients (tests/js) check the wire format independently.
        message = Reader(data)
        kind = message.uint()
        if kind == SYNC:
            step, payload = message.uint(), message.bytes()
            if step == STEP1:
                # The server's state vector: answer with what it lacks (the y-websocket client does the same).
                asyncio.ensure_future(self.ws.send(frame(SYNC, self.doc.get_update(payload), step=STEP2)))
            else:
                self.doc.apply_update(payload)
                if step == STEP2:
                    self.synced = True
        elif kind == AWARENESS:
            self.awareness_messages += 1
            body = Reader(message.bytes())
            for _ in range(body.uint()):
                client, _clock, state = body.uint(), body.uint(), json.loads(body.string())
                if state is None:
                    self.awareness.pop(client, None)
                else:
                    self.awareness[client] = state
        elif kind == LIVESTATE:
            self.livestate.append(json.loads(message.bytes()))

    async def until(self, predicate, timeout: float = 10.0) -> None:
        """Receive until `predicate()` holds (a deadline, not a sleep)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            await self.recv_one(max(0.01, deadline - loop.time()))

    async def edit(self, fn) -> bytes:
        """Change the local document and send the update."""
        before = get_state(self.doc.get_update())
        fn(self.text)
        update = self.doc.get_update(before)
        await self.ws.send(frame(SYNC, update, step=UPDATE))
        return update

    async def handled(self) -> None:
        """Wait until the server handled everything this socket sent (it answers a query awareness in order)."""
        seen = self.awareness_messages
        await self.ws.send(uint(QUERY_AWARENESS))
        await self.until(lambda: self.awareness_messages > seen)

    async def set_awareness(self, client_id: int, clock: int, state: Any) -> None:
        raw = json.dumps(state).encode()
        body = uint(1) + uint(client_id) + uint(clock) + buf(raw)
        await self.ws.send(frame(AWARENESS, body))

    async def livestate_op(self, op: str, live_state_id: str) -> None:
        await self.ws.send(frame(LIVESTATE, json.dumps({"op": op, "liveStateDataId": live_state_id}).encode()))

    async def closed(self, timeout: float = 10.0) -> int:
        """Read until the server closes; its close code."""
        try:
            while True:
                await self.recv_one(timeout)
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else exc.code if hasattr(exc, "code") else 1006

    async def close(self) -> None:
        await self.ws.close()


async def refused(address: str, send: bytes | None = None, timeout: float = 10.0) -> int:
    """The close code of a socket the server refuses (at once, or after `send`)."""
    async with connect(address, max_size=None) as ws:
        if send is not None:
            await ws.send(send)
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout)
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else 1006


def settle(live, t: Tenant) -> None:
    """Wait until the server finished every socket of the tenant (their last messages handled, presence written)."""
    rt = live.app.state.realtime
    live.run(rt.until(lambda: t.api_key not in rt.hub.by_tenant))
