"""Poisoned CRDT updates (review findings 6 and 7): a socket's update is held to REST's standard before it is stored
(close 4400 otherwise), an update an earlier release stored that cannot be folded is quarantined instead of breaking
the editor, reads and writes answer defined errors, and the compaction sweep takes API keys in turns."""

import base64

import psycopg
from pycrdt import Doc, Text

from collab.crdt import repository as crdt_repo
from collab.kit.jobs import transaction
from collab.realtime.tasks import compact_sweep
from support import pathological_yjs
from support.helpers import add_organization, error, new_tenant, post, result
from support.realtime_support import SYNC, UPDATE, YClient, crdt_text, frame, room, token_for, url

MALFORMED = 4400
POISON = pathological_yjs.NOT_UTF8


def _pending(live, t, editor="e1") -> list[bytes]:

    async def read():
        async with live.svc.pool.connection() as conn:
            found = await crdt_repo.pending(conn, api_key_id=t.api_key, organization_id="org", document_id="doc",
                                            editor_ids=[editor])
        return [p["yjs_update"] for p in found.get(editor, [])]

    return live.run(read())


def _append(live, t, update: bytes, editor="e1") -> None:
    """An update stored as an earlier release's socket would have stored it (without today's checks)."""

    async def append():
        async with transaction(live.svc.pool, None) as tx:
            await crdt_repo.append_update(tx.conn, api_key_id=t.api_key, organization_id="org", document_id="doc",
                                          editor_id=editor, update=update, user_id="mallory", now=0)

    live.run(append())


def test_socket_updates_that_would_break_the_editor_close_with_4400(client, live):
    t = new_tenant(client)
    room(client, t)
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "org", "documentId": "doc", "editorId": "m1", "type": "map", "data": {"a": 1}},
             t.headers))
    token = token_for(client, t, "mallory", "org", "doc")

    async def send(editor: str, update: bytes) -> int:
        c = await YClient.open(url(live, "org", "doc", editor, token))
        await c.ws.send(frame(SYNC, update, step=UPDATE))
        return await c.closed()

    assert live.run(send("e1", POISON)) == MALFORMED
    assert live.run(send("e1", pathological_yjs.parked())) == MALFORMED
    assert live.run(send("m1", pathological_yjs.deep_map())) == MALFORMED
    # Nothing was stored: both editors read as before, over REST and over a new socket, and take edits.
    assert _pending(live, t) == [] and _pending(live, t, "m1") == []
    assert crdt_text(client, t) == "Hello"
    assert crdt_text(client, t, editor="m1") == {"a": 1}

    async def still_works():
        c = await YClient.open(url(live, "org", "doc", "e1", token))
        assert str(c.text) == "Hello"
        await c.edit(lambda text: text.insert(5, "!"))
        await c.handled()
        await c.close()

    live.run(still_works())
    assert crdt_text(client, t) == "Hello!"


def test_an_update_of_too_many_structs_is_refused_before_it_is_applied(client, live, tune):
    """Finding 7: one message of a million one-length structs held the event loop for a second."""
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "mallory", "org", "doc")
    tune(realtime_max_update_structs=1000)
    gc_structs = pathological_yjs.gc_structs(1001)

    async def send() -> int:
        c = await YClient.open(url(live, "org", "doc", "e1", token))
        await c.ws.send(frame(SYNC, gc_structs, step=UPDATE))
        return await c.closed()

    assert live.run(send()) == MALFORMED
    assert _pending(live, t) == [] and crdt_text(client, t) == "Hello"


def test_an_update_stored_before_the_checks_is_quarantined_not_retried(client, live, tune, servers):
    t = new_tenant(client)
    room(client, t)
    _append(live, t, POISON)
    # Reads and writes go on without it (they used to answer 500), and a new socket syncs.
    assert crdt_text(client, t) == "Hello"
    result(
        post(client, "/v2/crdt/update",
             {"organizationId": "org", "documentId": "doc", "editorId": "e1", "data": "Hello, world"}, t.headers))
    assert crdt_text(client, t) == "Hello, world"
    with psycopg.connect(servers["database_url"]) as db:
        kept = db.execute("select yjs_update, reason from crdt_quarantine where api_key_id = %s",
                          (t.api_key, )).fetchall()
    assert [bytes(k[0]) for k in kept] == [POISON] and "cannot be applied" in kept[0][1]

    # The sweep does the same for an editor no write touches: the bad update leaves, the good one is folded.
    _append(live, t, POISON)
    before = Doc()
    before.apply_update(
        base64.b64decode(
            result(
                post(client, "/v2/crdt/get",
                     {"organizationId": "org", "documentId": "doc", "editorId": "e1", "format": "yjs"},
                     t.headers))[0]["yjsUpdate"]))
    seen = before.get_state()
    before.get("content", type=Text).insert(12, "!")
    _append(live, t, before.get_update(seen))
    tune(realtime_compact_after_s=0)
    live.run(compact_sweep({"svc": live.svc}))
    assert _pending(live, t) == [] and crdt_text(client, t) == "Hello, world!"

    token = token_for(client, t, "ann", "org", "doc")

    async def syncs():
        c = await YClient.open(url(live, "org", "doc", "e1", token))
        assert str(c.text) == "Hello, world!"
        await c.close()

    live.run(syncs())


def test_a_stored_document_that_cannot_be_read_answers_a_defined_error(client, live):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "org", "documentId": "doc", "editorId": "m1", "type": "map", "data": {}}, t.headers))

    async def spoil():  # what compacting an earlier release's deep-nesting update left behind
        async with transaction(live.svc.pool, None) as tx:
            await crdt_repo.save(tx.conn, api_key_id=t.api_key, organization_id="org", document_id="doc",
                                 editor_id="m1", state=pathological_yjs.deep_map(), last_updated_by="mallory",
                                 session_id=None, now=0)

    live.run(spoil())
    body = {"organizationId": "org", "documentId": "doc", "editorId": "m1"}
    err = error(post(client, "/v2/crdt/get", body, t.headers), "FAILED_PRECONDITION", 400)
    assert "cannot be read" in err["message"]
    # What the message says works: new content replaces the unreadable one.
    result(post(client, "/v2/crdt/update", {**body, "data": {"a": 1}}, t.headers))
    assert result(post(client, "/v2/crdt/get", body, t.headers))[0]["data"] == {"a": 1}


def test_the_compaction_sweep_takes_api_keys_in_turns(client, live, tune):
    """One tenant's many due editors cannot fill the sweep's page ahead of everyone else's."""
    busy, other = new_tenant(client), new_tenant(client)
    for t, editors in ((busy, ["e1", "e2", "e3"]), (other, ["e1"])):
        add_organization(client, t, "org", "doc")
        for editor in editors:
            result(
                post(client, "/v2/crdt/add",
                     {"organizationId": "org", "documentId": "doc", "editorId": editor, "type": "text", "data": ""},
                     t.headers))
            doc = Doc()
            doc.get("content", type=Text).insert(0, "x")
            _append(live, t, doc.get_update(), editor)

    async def order():
        async with live.svc.pool.connection() as conn:
            due = await crdt_repo.editors_to_compact(conn, before=2**62, limit=10_000)
        return [(d["api_key_id"], d["editor_id"]) for d in due]

    due = live.run(order())
    assert due.index((other.api_key, "e1")) < due.index((busy.api_key, "e2"))
