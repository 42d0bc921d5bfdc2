"""CRDT editor content: real Yjs documents per editor, diff updates, Yjs clients' updates merged, isolation."""

import base64
import json
import random
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from pycrdt import Array, Doc, Map, Text, XmlElement, XmlFragment, XmlText, write_var_uint

from support.helpers import error, issue_paths, new_tenant, post, result

ADD, GET, UPDATE, DELETE = (f"/v2/crdt/{op}" for op in ("add", "get", "update", "delete"))
DOC = {"organizationId": "org1", "documentId": "doc1"}
ROOTS = {"text": Text, "xmltext": Text, "map": Map, "array": Array, "xml": XmlFragment}


def add(client, t, editor="e1", type="text", data="Hello", **extra):
    return post(client, ADD, {**DOC, "editorId": editor, "type": type, "data": data, **extra}, t.headers)


def get(client, t, **filters):
    return result(post(client, GET, {**DOC, **filters}, t.headers))


def one(client, t, editor="e1", **filters):
    [record] = get(client, t, editorId=editor, **filters)
    return record


def send(client, t, update: bytes, editor="e1", **extra):
    body = {**DOC, "editorId": editor, "yjsUpdate": base64.b64encode(update).decode(), **extra}
    return post(client, UPDATE, body, t.headers)


def fetch_doc(client, t, editor="e1") -> Doc:
    """A Yjs client joining: a local pycrdt Doc loaded from the server's state."""
    doc = Doc()
    doc.apply_update(base64.b64decode(one(client, t, editor, format="yjs")["yjsUpdate"]))
    return doc


def local_edit(doc: Doc, edit) -> bytes:
    """Edit a client's doc and return just that edit as a Yjs update, as a provider would send it."""
    before = doc.get_state()
    edit()
    return doc.get_update(before)


# --- add and get -----------------------------------------------------------------------------------------

CASES = [("text", "Hello, wörld 😀"),
         ("map", {"title": "Plan", "count": 3, "ratio": 0.5, "done": False, "tags": ["a", "b"], "meta": {"x": None}}),
         ("array", [1, "two", {"three": 3}, [4, 5], None, True]),
         ("xml", '<p class="lead">Hello <b>bold</b> &amp; more</p><ul><li>one</li><li>two</li></ul>tail'),
         ("xmltext", "Plain text in an XmlText")]


@pytest.mark.parametrize("kind,data", CASES)
def test_round_trip_of_every_type(client, clock, kind, data):
    t = new_tenant(client)
    response = add(client, t, type=kind, data=data, userId="u1", sessionId="s1")
    assert response.status_code == 200, response.text
    assert response.json() == {"result": {"status": "success", "message": "CRDT data added successfully."}}
    clock["now"] += 1.5
    assert get(client, t) == [{
        "data": data, "id": "e1", "lastUpdate": "2027-01-15T08:00:00.000Z", "lastUpdatedBy": "u1", "sessionId": "s1"
    }]
    # The state is a real Yjs document: the content sits under "content" in the shared type of its kind.
    doc = fetch_doc(client, t)
    root = doc.get("content", type=ROOTS[kind])
    if kind in ("text", "xmltext"):
        assert str(root) == data
    elif kind == "xml":
        assert [c.tag for c in root.children if isinstance(c, XmlElement)] == ["p", "ul"]
        assert str(root.children[2]) == "tail"
    else:
        assert root.to_py() == data  # pycrdt reads numbers as floats; 3.0 == 3


def test_content_key_and_xml_canonical_form(client):
    t = new_tenant(client)
    xml = "<?xml version='1.0'?><doc b='2' a=\"1\"><br/><![CDATA[<raw>]]><!-- gone --></doc>"
    result(add(client, t, type="xml", data=xml, contentKey="default"))
    record = one(client, t, format="yjs")
    assert record["data"] == '<doc a="1" b="2"><br></br>&lt;raw&gt;</doc>'
    doc = Doc()
    doc.apply_update(base64.b64decode(record["yjsUpdate"]))
    assert "default" in doc.keys() and "content" not in doc.keys()
    # Without format yjs there is no yjsUpdate.
    assert "yjsUpdate" not in one(client, t)


def test_get_lists_all_editors_and_nothing_unknown(client):
    t = new_tenant(client)
    result(add(client, t, editor="e2", data="two"))
    result(add(client, t, editor="e1", data="one"))
    result(post(client, ADD, {**DOC, "documentId": "doc2", "editorId": "e3", "type": "text", "data": "x"}, t.headers))
    assert [(r["id"], r["data"]) for r in get(client, t)] == [("e1", "one"), ("e2", "two")]
    assert get(client, t, editorId="nope") == []
    assert result(post(client, GET, {"organizationId": "org1", "documentId": "nope"}, t.headers)) == []
    # The same routes answer under /v1.
    assert len(result(post(client, "/v1/crdt/get", DOC, t.headers))) == 2


def test_without_user_last_updated_by_is_null(client):
    t = new_tenant(client)
    result(add(client, t))
    record = one(client, t)
    assert record["lastUpdatedBy"] is None and record["sessionId"] is None
    result(post(client, UPDATE, {**DOC, "editorId": "e1", "data": "Hi", "userId": "u2", "sessionId": "s2"}, t.headers))
    assert (one(client, t)["lastUpdatedBy"], one(client, t)["sessionId"]) == ("u2", "s2")
    # The last write names who made it: an update without userId is made by no known user.
    result(post(client, UPDATE, {**DOC, "editorId": "e1", "data": "Hey"}, t.headers))
    assert (one(client, t)["lastUpdatedBy"], one(client, t)["sessionId"]) == (None, None)


def test_already_exists(client):
    t = new_tenant(client)
    result(add(client, t, data="first"))
    err = error(add(client, t, data="second"), "ALREADY_EXISTS")
    assert err["message"] == "CRDT data already exists for this editor ID."
    assert one(client, t)["data"] == "first"


# --- validation --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,data,message", [("text", {"a": 1}, "Data must be a string for type text."),
                                               ("map", "x", "Data must be an object for type map."),
                                               ("map", [1], "Data must be an object for type map."),
                                               ("array", {"a": 1}, "Data must be an array for type array."),
                                               ("xml", ["<p/>"], "Data must be a string for type xml."),
                                               ("xmltext", 5, "Data must be a string for type xmltext.")])
def test_data_must_match_type(client, kind, data, message):
    t = new_tenant(client)
    err = error(add(client, t, type=kind, data=data), "INVALID_ARGUMENT")
    assert err["message"] == message
    assert err["details"]["issues"] == [{"code": "invalid_type", "path": ["data"], "message": message}]
    assert get(client, t) == []


@pytest.mark.parametrize("field,message", [("editorId", "Editor ID is required."),
                                           ("organizationId", "Organization ID is required"),
                                           ("documentId", "Document ID is required.")])
def test_missing_ids_have_their_messages(client, field, message):
    t = new_tenant(client)
    body = {**DOC, "editorId": "e1", "type": "text", "data": "x"}
    for path in (ADD, UPDATE, GET, DELETE):
        if field == "editorId" and path in (GET, DELETE):
            continue  # optional there
        sent = {k: v for k, v in body.items() if k != field}
        err = error(post(client, path, sent, t.headers), "INVALID_ARGUMENT")
        assert err["message"] == message
        assert err["details"]["issues"] == [{"code": "invalid_type", "path": [field], "message": message}]
    # null reads as missing.
    err = error(post(client, ADD, {**body, field: None}, t.headers), "INVALID_ARGUMENT")
    assert err["message"] == message


def test_a_null_id_is_named_beside_another_id_of_the_wrong_type(client):
    t = new_tenant(client)
    body = {**DOC, "documentId": None, "editorId": 5, "type": "text", "data": "x"}
    assert sorted(issue_paths(error(post(client, ADD, body, t.headers), "INVALID_ARGUMENT"))) == [["documentId"],
                                                                                                  ["editorId"]]
    body = {**DOC, "organizationId": 5, "documentId": None, "type": "text"}
    assert sorted(issue_paths(error(post(client, ADD, body, t.headers), "INVALID_ARGUMENT"))) == [["data"],
                                                                                                  ["documentId"],
                                                                                                  ["editorId"],
                                                                                                  ["organizationId"]]


def test_other_invalid_fields(client):
    t = new_tenant(client)
    assert issue_paths(error(add(client, t, type="rich"), "INVALID_ARGUMENT")) == [["type"]]
    assert issue_paths(error(add(client, t, editor="e" * 201), "INVALID_ARGUMENT")) == [["editorId"]]
    assert issue_paths(error(add(client, t, contentKey="k" * 201), "INVALID_ARGUMENT")) == [["contentKey"]]
    assert issue_paths(error(add(client, t, contentKey=""), "INVALID_ARGUMENT")) == [["contentKey"]]
    assert issue_paths(error(add(client, t, userId=7), "INVALID_ARGUMENT")) == [["userId"]]
    err = error(add(client, t, data=None), "INVALID_ARGUMENT")
    assert (err["message"], issue_paths(err)) == ("Data is required.", [["data"]])
    err = error(post(client, GET, {**DOC, "format": "binary"}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["format"]]
    err = error(post(client, DELETE, {**DOC, "editorIds": ["a", "a"]}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["editorIds"]]
    assert get(client, t) == []


@pytest.mark.parametrize(
    "kind,data,path",
    [
        ("xml", "<p>unclosed", ["data"]),
        ("xml", "<p>a</p></extra>", ["data"]),
        ("xml", '<!DOCTYPE x [<!ENTITY e "boom">]><x>&e;</x>', ["data"]),
        ("xml", "<a>" * 150 + "</a>" * 150, ["data"]),
        ("array", [10**400], ["data", "0"])  # refused at the JSON layer, which names the element
    ])
def test_content_that_cannot_be_stored(client, kind, data, path):
    t = new_tenant(client)
    err = error(add(client, t, type=kind, data=data), "INVALID_ARGUMENT")
    assert issue_paths(err) == [path]
    assert get(client, t) == []


def test_content_nested_past_the_body_limit_is_refused(client):
    t = new_tenant(client)
    err = error(add(client, t, type="map", data={"deep": json.loads("[" * 150 + "]" * 150)}), "INVALID_ARGUMENT")
    assert "nested deeper" in err["details"]["issues"][0]["message"]
    assert get(client, t) == []


def test_unpaired_surrogate_is_refused(client):
    t = new_tenant(client)
    body = {**DOC, "editorId": "e1", "type": "text", "data": "a\ud800"}
    raw = json.dumps({"data": body})  # the escape \ud800, as JavaScript sends a lone surrogate
    response = client.post(ADD, content=raw, headers={**t.headers, "content-type": "application/json"})
    assert issue_paths(error(response, "INVALID_ARGUMENT")) == [["data"]]


# --- update ------------------------------------------------------------------------------------------------


def test_update_needs_an_existing_editor_and_the_stored_type(client):
    t = new_tenant(client)
    err = error(post(client, UPDATE, {**DOC, "editorId": "e1", "data": "x"}, t.headers), "NOT_FOUND")
    assert err["message"] == "CRDT data does not exist for this editor ID."
    error(send(client, t, Doc().get_update()), "NOT_FOUND")
    result(add(client, t, type="map", data={"a": 1}))
    err = error(post(client, UPDATE, {**DOC, "editorId": "e1", "data": "text"}, t.headers), "INVALID_ARGUMENT")
    assert err["message"] == "Data must be an object for type map."
    for body in ({}, {"data": {"a": 2}, "yjsUpdate": "AAA="}):
        err = error(post(client, UPDATE, {**DOC, "editorId": "e1", **body}, t.headers), "INVALID_ARGUMENT")
        assert sorted(issue_paths(err)) == [["data"], ["yjsUpdate"]]
    assert one(client, t)["data"] == {"a": 1}


@pytest.mark.parametrize("kind,before,after",
                         [("text", "Hello world", "Hello brave new world!"), ("xmltext", "abc", "aXbc"),
                          ("map", {"a": 1, "b": {"c": 2}, "gone": True}, {"a": 1, "b": {"c": 3}, "new": [1]}),
                          ("array", [1, 2, 3, 4], [0, 1, 3, 4, 5]),
                          ("xml", "<p>one</p><p>two</p>", "<p>one</p><h1>title</h1><p>TWO</p>")])
def test_update_by_data_changes_only_what_differs(client, clock, kind, before, after):
    t = new_tenant(client)
    result(add(client, t, type=kind, data=before))
    old_state = base64.b64decode(one(client, t, format="yjs")["yjsUpdate"])
    clock["now"] += 60
    result(post(client, UPDATE, {**DOC, "editorId": "e1", "data": after, "userId": "u9"}, t.headers))
    record = one(client, t, format="yjs")
    assert (record["data"], record["lastUpdate"], record["lastUpdatedBy"]) == (after, "2027-01-15T08:01:00.000Z", "u9")
    # The change is a set of operations on the same document: a client holding the old state catches up
    # by applying only what it lacks, and ends with the new content.
    client_doc = Doc()
    client_doc.apply_update(old_state)
    new_state = base64.b64decode(record["yjsUpdate"])
    diff = Doc()
    diff.apply_update(new_state)
    client_doc.apply_update(diff.get_update(client_doc.get_state()))
    root = client_doc.get("content", type=ROOTS[kind])
    if kind in ("text", "xmltext"):
        assert str(root) == after
    elif kind in ("map", "array"):
        assert root.to_py() == after


def test_text_update_is_a_minimal_diff(client):
    t = new_tenant(client)
    long_text = "The quick brown fox jumps over the lazy dog. " * 200
    result(add(client, t, data=long_text))
    before = base64.b64decode(one(client, t, format="yjs")["yjsUpdate"])
    changed = long_text.replace("lazy", "sleepy", 1)
    result(post(client, UPDATE, {**DOC, "editorId": "e1", "data": changed}, t.headers))
    after = base64.b64decode(one(client, t, format="yjs")["yjsUpdate"])
    doc = Doc()
    doc.apply_update(before)
    # The new operations insert a few characters: nowhere near a rewrite of the 9,000-character text.
    probe = Doc()
    probe.apply_update(after)
    assert len(probe.get_update(doc.get_state())) < 100
    assert one(client, t)["data"] == changed


# --- Yjs clients -------------------------------------------------------------------------------------------


def test_two_yjs_clients_merge(client):
    t = new_tenant(client)
    result(add(client, t, data="Hello world"))
    alice, bob = fetch_doc(client, t), fetch_doc(client, t)
    a_text, b_text = alice.get("content", type=Text), bob.get("content", type=Text)
    a_update = local_edit(alice, lambda: a_text.insert(0, ">> "))
    b_update = local_edit(bob, lambda: b_text.insert(len(b_text), "!"))
    result(send(client, t, a_update, userId="alice", sessionId="sa"))
    result(send(client, t, b_update, userId="bob", sessionId="sb"))
    record = one(client, t)
    assert record["data"] == ">> Hello world!"
    assert (record["lastUpdatedBy"], record["sessionId"]) == ("bob", "sb")
    # A client sending its whole state (not just its edit) is merged the same way, idempotently.
    result(send(client, t, alice.get_update()))
    assert one(client, t)["data"] == ">> Hello world!"


def test_data_update_concurrent_with_a_yjs_client_merges(client):
    t = new_tenant(client)
    result(add(client, t, data="Hello world"))
    editor = fetch_doc(client, t)
    text = editor.get("content", type=Text)
    edit = local_edit(editor, lambda: text.insert(len(text), " and moon"))
    # Meanwhile the server side rewrites the start of the text from JSON.
    result(post(client, UPDATE, {**DOC, "editorId": "e1", "data": "Goodbye world"}, t.headers))
    result(send(client, t, edit))
    assert one(client, t)["data"] == "Goodbye world and moon"

    result(add(client, t, editor="m", type="map", data={"title": "Draft", "owner": "ana"}))
    editor = fetch_doc(client, t, "m")
    fields = editor.get("content", type=Map)
    edit = local_edit(editor, lambda: fields.__setitem__("status", "review"))
    result(post(client, UPDATE, {**DOC, "editorId": "m", "data": {"title": "Final", "owner": "ana"}}, t.headers))
    result(send(client, t, edit, editor="m"))
    assert one(client, t, "m")["data"] == {"title": "Final", "owner": "ana", "status": "review"}

    result(add(client, t, editor="x", type="xml", data="<p>one</p><p>two</p>"))
    editor = fetch_doc(client, t, "x")
    fragment = editor.get("content", type=XmlFragment)
    edit = local_edit(editor, lambda: fragment.children[0].children.append(XmlText(" more")))
    result(post(client, UPDATE, {**DOC, "editorId": "x", "data": "<p>one</p><p>TWO</p>"}, t.headers))
    result(send(client, t, edit, editor="x"))
    assert one(client, t, "x")["data"] == "<p>one more</p><p>TWO</p>"


def test_shared_types_a_client_nested_in_a_map_are_edited_in_place(client):
    t = new_tenant(client)
    result(add(client, t, type="map", data={"title": "Plan"}))
    writer = fetch_doc(client, t)
    fields = writer.get("content", type=Map)
    result(send(client, t, local_edit(writer, lambda: fields.__setitem__("body", Text("Hello")))))
    assert one(client, t)["data"] == {"title": "Plan", "body": "Hello"}
    reader = fetch_doc(client, t)
    body = reader.get("content", type=Map)["body"]
    edit = local_edit(reader, lambda: body.insert(0, ">> "))
    # The server diffs the nested Y.Text instead of replacing it, so the client's edit still lands.
    result(post(client, UPDATE, {**DOC, "editorId": "e1", "data": {"title": "Plan", "body": "Hello world"}}, t.headers))
    result(send(client, t, edit))
    assert one(client, t)["data"] == {"title": "Plan", "body": ">> Hello world"}


def test_concurrent_yjs_updates_are_all_kept(client, live):
    t = new_tenant(client)
    result(add(client, t, type="array", data=[]))
    base = fetch_doc(client, t)

    def push(i):
        doc = Doc()
        doc.apply_update(base.get_update())
        items = doc.get("content", type=Array)
        update = local_edit(doc, lambda: items.append(i))
        with httpx.Client(base_url=live.url, timeout=30) as c:
            return send(c, t, update).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(push, range(16))) == {200}
    assert sorted(one(client, t)["data"]) == list(range(16))


def test_bad_yjs_updates_are_refused_and_nothing_is_written(client):
    t = new_tenant(client)
    result(add(client, t, data="Hello"))
    state_before = one(client, t, format="yjs")["yjsUpdate"]
    # An update that builds on changes the server never saw (its base is another document).
    stranger = Doc()
    s_text = stranger.get("content", type=Text)
    s_text.insert(0, "elsewhere")
    orphan = local_edit(stranger, lambda: s_text.insert(0, "x"))
    deep = _nested_any_update(100_000)
    for bad in ("not base64!", base64.b64encode(b"\x01\x02garbage").decode(), base64.b64encode(orphan).decode(),
                base64.b64encode(deep).decode()):
        err = error(post(client, UPDATE, {**DOC, "editorId": "e1", "yjsUpdate": bad}, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["yjsUpdate"]], err
    assert one(client, t, format="yjs")["yjsUpdate"] == state_before
    # The service is still up and a good update still applies.
    doc = fetch_doc(client, t)
    text = doc.get("content", type=Text)
    result(send(client, t, local_edit(doc, lambda: text.insert(5, "!"))))
    assert one(client, t)["data"] == "Hello!"


def _nested_any_update(depth: int) -> bytes:
    """A hand-encoded Yjs update whose one array item is a value nested `depth` levels deep."""
    name = b"content"
    value = bytes([117, 1]) * depth + bytes([126])  # [[[...null...]]]
    item = bytes([8]) + write_var_uint(1) + write_var_uint(len(name)) + name + write_var_uint(1) + value
    return write_var_uint(1) + write_var_uint(1) + write_var_uint(4242) + write_var_uint(0) + item + write_var_uint(0)


# --- delete, isolation, user-data deletion ------------------------------------------------------------------


def test_delete(client):
    t = new_tenant(client)
    for editor in ("e1", "e2", "e3"):
        result(add(client, t, editor=editor))
    body = {**DOC, "editorIds": ["e1", "nope"]}
    assert result(post(client, DELETE, body, t.headers)) == {
        "e1": {"success": True, "id": "e1", "message": "CRDT data deleted."},
        "nope": {"success": False, "id": "nope", "message": "CRDT data does not exist."}
    }
    assert [r["id"] for r in get(client, t)] == ["e2", "e3"]
    assert result(post(client, DELETE, DOC, t.headers)) == {
        "e2": {"success": True, "id": "e2", "message": "CRDT data deleted."},
        "e3": {"success": True, "id": "e3", "message": "CRDT data deleted."}
    }
    assert get(client, t) == []
    assert result(post(client, DELETE, DOC, t.headers)) == {}
    # An editor id is free again once deleted.
    result(add(client, t, data="again"))


def test_other_tenants_cannot_see_or_touch(client):
    owner, other = new_tenant(client), new_tenant(client)
    result(add(client, owner, data="secret", userId="u1"))
    assert get(client, other) == [] and get(client, other, editorId="e1") == []
    error(post(client, UPDATE, {**DOC, "editorId": "e1", "data": "hacked"}, other.headers), "NOT_FOUND")
    error(send(client, other, Doc().get_update()), "NOT_FOUND")
    gone = result(post(client, DELETE, {**DOC, "editorIds": ["e1"]}, other.headers))
    assert gone == {"e1": {"success": False, "id": "e1", "message": "CRDT data does not exist."}}
    assert result(post(client, DELETE, DOC, other.headers)) == {}
    # The same editor id is independent per tenant.
    result(add(client, other, data="mine"))
    assert one(client, other)["data"] == "mine"
    assert one(client, owner)["data"] == "secret"


def test_forget_user_clears_only_last_updated_by(client, live):
    from collab.crdt.repository import forget_user

    t = new_tenant(client)
    result(add(client, t, editor="e1", userId="u1"))
    result(add(client, t, editor="e2", userId="u2"))
    result(
        post(
            client, ADD, {
                "organizationId": "org2", "documentId": "doc1", "editorId": "e1", "type": "text", "data": "other org",
                "userId": "u1"
            }, t.headers))

    async def forget(organization_ids):
        async with live.svc.pool.connection() as conn:
            await forget_user(conn, api_key_id=t.api_key, user_ids=["u1"], organization_ids=organization_ids)

    live.run(forget(["org1"]))
    listed = [(r["id"], r["lastUpdatedBy"], r["data"]) for r in get(client, t)]
    assert listed == [("e1", None, "Hello"), ("e2", "u2", "Hello")]
    org2 = {"organizationId": "org2", "documentId": "doc1"}
    assert result(post(client, GET, org2, t.headers))[0]["lastUpdatedBy"] == "u1"
    live.run(forget(None))
    assert result(post(client, GET, org2, t.headers))[0]["lastUpdatedBy"] is None


def test_mutated_bodies_never_give_a_500(client):
    t = new_tenant(client)
    result(add(client, t, editor="e1", data="Hello"))
    result(add(client, t, editor="m1", type="map", data={"a": 1}))
    values = [
        None, True, 0, -1, 10**20, 1.5, "", " ", "x" * 300, "\u0000", "💥", "\ud800", [], [1], {}, {"a": 1}, [None],
        "<p>", "AAA=", "AQEBAQ==", -(10**400)
    ]
    seeds = {
        ADD: {
            **DOC, "editorId": "e2", "type": "xml", "data": "<p>x</p>", "contentKey": "c", "userId": "u",
            "sessionId": "s"
        }, GET: {**DOC, "editorId": "e1", "format": "yjs"},
        UPDATE: {**DOC, "editorId": "m1", "data": {"a": [1, {"b": 2}]}, "userId": "u",
                 "sessionId": "s"}, DELETE: {**DOC, "editorIds": ["zz", "e9"]}
    }
    rng = random.Random(11)

    def mutate(obj):
        if isinstance(obj, dict) and obj and rng.random() < 0.7:
            key = rng.choice(list(obj))
            return {**obj, key: mutate(obj[key]) if rng.random() < 0.5 else rng.choice(values)}
        if isinstance(obj, list) and obj and rng.random() < 0.7:
            i = rng.randrange(len(obj))
            return obj[:i] + [mutate(obj[i])] + obj[i + 1:]
        return rng.choice(values)

    failures = []
    for path, seed in seeds.items():
        for _ in range(40):
            body = json.dumps({"data": mutate(seed)})  # \ud800 goes out as an escape, as JavaScript would send it
            response = client.post(path, content=body, headers={**t.headers, "content-type": "application/json"})
            if response.status_code >= 500 or ("result" not in response.json() and "error" not in response.json()):
                failures.append((path, body[:200], response.text[:200]))
    assert failures == []
