"""Realtime over the y-websocket protocol with pycrdt clients: sync, relay, REST in both directions, refusals."""

import asyncio
import base64

from pycrdt import Doc, Text

from support.helpers import new_tenant, post, result
from support.realtime_support import (
    SYNC,
    UPDATE,
    YClient,
    crdt_text,
    frame,
    refused,
    room,
    settle,
    token_for,
    url,
)


def test_sync_handshake_and_an_edit_is_stored_and_relayed(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        b = await YClient.open(url(live, "org", "doc", "e1", token, version="v1"))
        assert str(a.text) == str(b.text) == "Hello"
        await a.edit(lambda text: text.insert(5, ", world"))
        await b.until(lambda: str(b.text) == "Hello, world")
        # Stored before relayed: the REST read already has it.
        assert crdt_text(client, t) == "Hello, world"
        await a.close()
        await b.close()

    asyncio.run(scenario())


def test_rest_update_reaches_connected_clients(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        result(
            post(client, "/v2/crdt/update",
                 {"organizationId": "org", "documentId": "doc", "editorId": "e1", "data": "Hello there"}, t.headers))
        await a.until(lambda: str(a.text) == "Hello there")
        # A client's own edits on top of it merge with REST writes that follow (b sees them once they are stored).
        b = await YClient.open(url(live, "org", "doc", "e1", token))
        await a.edit(lambda text: text.insert(0, ">> "))
        await a.edit(lambda text: text.insert(len(str(text).encode()), "!"))
        await b.until(lambda: str(b.text) == ">> Hello there!")
        result(
            post(client, "/v2/crdt/update",
                 {"organizationId": "org", "documentId": "doc", "editorId": "e1", "data": ">> Hello there!?"},
                 t.headers))
        await a.until(lambda: str(a.text) == ">> Hello there!?")
        await b.until(lambda: str(b.text) == ">> Hello there!?")
        await a.close()
        await b.close()
        assert crdt_text(client, t) == ">> Hello there!?"

    asyncio.run(scenario())


def test_yjs_format_of_crdt_get_includes_socket_edits(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        await a.edit(lambda text: text.insert(0, "Oh, "))
        await a.handled()
        await a.close()

    asyncio.run(scenario())
    settle(live, t)
    body = {"organizationId": "org", "documentId": "doc", "editorId": "e1", "format": "yjs"}
    record = result(post(client, "/v2/crdt/get", body, t.headers))[0]
    doc = Doc()
    doc.apply_update(base64.b64decode(record["yjsUpdate"]))
    assert str(doc.get("content", type=Text)) == "Oh, Hello"
    assert record["lastUpdatedBy"] == "alice"


def test_viewer_edits_are_dropped_and_nothing_is_stored(client, live, db):
    t = new_tenant(client)
    room(client, t)
    viewer = token_for(client, t, "victor", "org", "doc", role="viewer")
    editor = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        v = await YClient.open(url(live, "org", "doc", "e1", viewer))
        a = await YClient.open(url(live, "org", "doc", "e1", editor))
        await v.edit(lambda text: text.insert(0, "VANDAL "))
        await v.handled()
        # The editor's next edit arrives; the viewer's never did (the socket relays in order).
        await a.edit(lambda text: text.insert(5, "!"))
        await v.until(lambda: "!" in str(v.text))
        assert str(v.text) == "VANDAL Hello!"  # its own local edit only
        b = await YClient.open(url(live, "org", "doc", "e1", editor))
        assert str(b.text) == "Hello!"
        for c in (v, a, b):
            await c.close()

    asyncio.run(scenario())
    assert crdt_text(client, t) == "Hello!"
    rows = db.execute("select user_id from crdt_updates where api_key_id = %s", (t.api_key, )).fetchall()
    assert {r["user_id"] for r in rows} <= {"alice"}


def test_malformed_messages_close_with_4400(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    address = url(live, "org", "doc", "e1", token)

    async def scenario():
        assert await refused(address, b"\x00\x02\xff") == 4400  # a length past the end
        assert await refused(address, b"\x07\x00") == 4400  # an unknown message type
        assert await refused(address, frame(SYNC, b"\x01\x02\x03\x04", step=UPDATE)) == 4400  # not a Yjs update
        assert await refused(address, frame(100, b"not json")) == 4400
        assert await refused(address, frame(100, b'{"op": "dance"}')) == 4400
        async with __import__("websockets").asyncio.client.connect(address) as ws:
            await ws.send("text frames are not the protocol")
            try:
                while True:
                    await asyncio.wait_for(ws.recv(), 10)
            except __import__("websockets").exceptions.ConnectionClosed as exc:
                assert exc.rcvd.code == 4400

    asyncio.run(scenario())
    assert crdt_text(client, t) == "Hello"


def test_oversize_message_closes_with_4413(client, live, tune):
    tune(realtime_max_message_bytes=1024)
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        await a.edit(lambda text: text.insert(0, "x" * 2000))
        assert await a.closed() == 4413

    asyncio.run(scenario())
    assert crdt_text(client, t) == "Hello"


def test_tokens_that_open_nothing(client, live, clock):
    t = new_tenant(client)
    other = new_tenant(client)
    room(client, t)
    room(client, other, org="elsewhere", doc="d2")
    theirs = token_for(client, other, "mallory", "elsewhere", "d2")
    ours = token_for(client, t, "alice", "org", "doc")
    outsider = token_for(client, t, "bob", "org", "doc", role="viewer")
    # Bob's grant goes; his token still verifies, the permissions model says no.
    result(
        post(client, "/v2/auth/permissions/remove", {
            "userId": "bob", "permissions": {"resources": [{"type": "document", "id": "doc", "organizationId": "org"}]}
        }, t.headers))

    async def scenario():
        assert await refused(url(live, "org", "doc", "e1", theirs)) == 4401  # another tenant's token
        assert await refused(url(live, "org", "doc", "e1", None)) == 4401
        assert await refused(url(live, "org", "doc", "e1", ours[:-4] + "AAAA")) == 4401  # forged signature
        assert await refused(url(live, "org", "doc", "e1", "not-a-jwt")) == 4401
        assert await refused(url(live, "org", "doc", "e1", outsider)) == 4403
        assert await refused(url(live, "org", "doc", "nope", ours)) == 4404  # no such editor
        assert await refused(url(live, "org", "nodoc", "e1", ours)) == 4404  # no such document
        clock["now"] += 49 * 3600  # user tokens last 48 hours
        assert await refused(url(live, "org", "doc", "e1", ours)) == 4401

    asyncio.run(scenario())


def test_ids_are_url_decoded(client, live):
    t = new_tenant(client)
    room(client, t, org="org/1", doc="doc 1", editor="é?#")
    token = token_for(client, t, "alice", "org/1", "doc 1")

    async def scenario():
        a = await YClient.open(url(live, "org/1", "doc 1", "é?#", token))
        await a.edit(lambda text: text.insert(0, "Hi. "))
        await a.handled()  # another socket: nothing orders its sync after a's edit but this
        b = await YClient.open(url(live, "org/1", "doc 1", "é?#", token))
        assert str(b.text) == "Hi. Hello"
        await a.close()
        await b.close()

    asyncio.run(scenario())


def test_an_expired_grant_closes_the_open_connection(client, live, clock):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc", expiresAt=clock["now"] + 60)
    rt = live.app.state.realtime

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        live.run(rt.upkeep.recheck())  # still granted: stays open
        await a.edit(lambda text: text.insert(0, "still here "))
        await a.ws.ping()
        clock["now"] += 61
        live.run(rt.upkeep.recheck())
        assert await a.closed() == 4403

    asyncio.run(scenario())


def test_a_disabled_organization_closes_connections(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")
    rt = live.app.state.realtime

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        result(
            post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["org"], "disabled": True},
                 t.headers))
        live.run(rt.upkeep.recheck())
        assert await a.closed() == 4403
        assert await refused(url(live, "org", "doc", "e1", token)) == 4403

    asyncio.run(scenario())


def test_edits_to_a_deleted_editor_close_with_4404(client, live):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        result(
            post(client, "/v2/crdt/delete", {"organizationId": "org", "documentId": "doc", "editorIds": ["e1"]},
                 t.headers))
        await a.edit(lambda text: text.insert(0, "gone? "))
        assert await a.closed() == 4404

    asyncio.run(scenario())
