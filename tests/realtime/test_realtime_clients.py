"""Realtime with the real JavaScript client: yjs + y-websocket in Node (tests/js/client.mjs), unchanged.

Clients wait on events (synced, a text, an awareness state, a live state message), never on time. Presence is
read by polling presence/get until it shows what a user would see, since the server updates it after a
socket closes, with nothing for the test to wait on.
"""

import time
import uuid

import pytest

from support.api_process import ApiProcess
from support.clients import node
from support.helpers import add_organization, new_tenant, post, result
from support.js_clients import ClientError, Clients, YjsClient


@pytest.fixture
def clients():
    node()  # skipped (or failed under COLLAB_REQUIRE_CLIENTS=1) before anything starts when Node is missing
    opened = Clients()
    yield opened
    opened.close_all()


@pytest.fixture(scope="module")
def api2(live):
    """A second API process (`collab api`) on the session's Postgres and Redis, with the session's settings."""
    node()
    process = ApiProcess(live.settings).start()
    yield process
    process.stop()


class Room:
    """One CRDT editor of a fresh tenant's document, and user tokens for it."""

    def __init__(self, client, *, data="", type="text", org="org-rt", doc=None, editor="editor-1"):
        self.http = client
        self.tenant = new_tenant(client)
        self.org, self.doc, self.editor = org, doc or f"doc-{uuid.uuid4().hex[:6]}", editor
        add_organization(client, self.tenant, self.org, self.doc)
        result(
            post(client, "/v2/crdt/add", {
                "organizationId": self.org, "documentId": self.doc, "editorId": self.editor, "type": type, "data": data
            }, self.tenant.headers))

    def token(self, user: str, role: str = "editor") -> str:
        resource = {"type": "document", "id": self.doc, "organizationId": self.org, "accessRole": role}
        body = {"userId": user, "userProperties": {"name": user.title()}, "permissions": {"resources": [resource]}}
        return result(post(self.http, "/v2/auth/generate_token", body, self.tenant.headers))["token"]

    def join(self, clients: Clients, url: str, user: str, role: str = "editor", version: str = "v2") -> YjsClient:
        """A synced client of `user` on the API at `url`."""
        return clients.open(url, organization=self.org, document=self.doc, editor=self.editor,
                            token=self.token(user, role), version=version).synced()

    def stored(self) -> str:
        """The editor's content as crdt/get returns it."""
        records = result(
            post(self.http, "/v2/crdt/get",
                 {"organizationId": self.org, "documentId": self.doc, "editorId": self.editor}, self.tenant.headers))
        return records[0]["data"]

    def presence(self) -> dict[str, str]:
        users = result(
            post(self.http, "/v2/presence/get", {"organizationId": self.org, "documentId": self.doc},
                 self.tenant.headers))
        return {u["userId"]: u["status"] for u in users}


def eventually(check, timeout: float = 15):
    """Poll `check` until it returns something truthy (server-side effects with no event to wait on)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_two_clients_edit_concurrently_and_converge(client, live, clients):
    room = Room(client, data="Start:")
    ana, ben = room.join(clients, live.url, "ana"), room.join(clients, live.url, "ben")
    # The room's shared type is the content crdt/add stored.
    assert ana.wait_text("Start:") == ben.wait_text("Start:") == "Start:"
    # Both edit at the same place at once (concurrent unless one edit arrives before the other is made).
    ana.insert(6, " alpha")
    ben.insert(6, " beta")
    merged = ana.wait_text(includes=" beta")
    assert ben.wait_text(includes=" alpha") == merged
    assert merged in ("Start: alpha beta", "Start: beta alpha")
    # What the clients hold is what the REST API reads (stored before it was relayed).
    assert room.stored() == merged
    ana.insert("end", "!")
    assert ben.wait_text(merged + "!") == merged + "!"
    assert room.stored() == merged + "!"


def test_ids_are_url_encoded_in_the_room_name(client, live, clients):
    # What `new WebsocketProvider(BASE, org + '/' + doc + '/' + editor, ...)` opens with encoded ids; /v1 too.
    room = Room(client, data="x", org="org ü/1", doc="doc #1?", editor="editor/a b")
    ana, ben = room.join(clients, live.url, "ana"), room.join(clients, live.url, "ben", version="v1")
    assert ana.wait_text("x") == "x"
    ana.insert("end", "y")
    assert ben.wait_text("xy")
    assert room.stored() == "xy"


def test_refused_clients_are_closed_with_the_reason_code(client, live, clients):
    room, other = Room(client, data="secret"), Room(client, data="")
    kw = dict(organization=room.org, document=room.doc, editor=room.editor)
    # Another tenant's token names that tenant, where this room does not exist (or is not this document).
    stranger = clients.open(live.url, **kw, token=other.token("ana"))
    assert stranger.call("wait_closed")["code"] in (4401, 4404)
    no_grant = result(post(client, "/v2/auth/generate_token", {"userId": "nobody"}, room.tenant.headers))["token"]
    outsider = clients.open(live.url, **kw, token=no_grant)
    assert outsider.call("wait_closed")["code"] == 4403
    forged = clients.open(live.url, **kw, token="not-a-token")
    assert forged.call("wait_closed")["code"] == 4401
    missing = clients.open(live.url, **{**kw, "editor": "no-such-editor"}, token=room.token("ana"))
    assert missing.call("wait_closed")["code"] == 4404
    assert stranger.text() == outsider.text() == ""


def test_rest_update_reaches_every_client(client, live, clients):
    room = Room(client, data="draft")
    ana, ben = room.join(clients, live.url, "ana"), room.join(clients, live.url, "ben")
    ana.wait_text("draft")
    result(
        post(client, "/v2/crdt/update",
             {"organizationId": room.org, "documentId": room.doc, "editorId": room.editor, "data": "final draft"},
             room.tenant.headers))
    assert ana.wait_text("final draft") == ben.wait_text("final draft") == "final draft"
    # A client's edit after the REST one merges with it.
    ben.insert("end", ", approved")
    assert ana.wait_text("final draft, approved")
    assert room.stored() == "final draft, approved"


def test_viewer_receives_but_its_edit_is_refused_and_not_stored(client, live, clients):
    room = Room(client, data="shared")
    editor = room.join(clients, live.url, "ed")
    viewer = room.join(clients, live.url, "vi", role="viewer")
    assert viewer.wait_text("shared") == "shared"
    viewer.insert(0, "VIEWER ")
    # The server handles one socket's messages in order: once the viewer's next message (an awareness state)
    # reaches the editor, the server has dealt with its edit.
    viewer.call("awareness", state={"user": {"name": "after-edit"}})
    try:
        editor.call("wait_awareness", match={"user": {"name": "after-edit"}})
    except ClientError:
        # A server may close a viewer that writes instead of dropping its update: that is a refusal too.
        assert any(c["code"] == 4403 for c in viewer.state()["closes"]), viewer.state()
    editor.insert("end", " notes")
    assert viewer.wait_text(includes=" notes")
    assert editor.text() == "shared notes"
    assert room.stored() == "shared notes"
    # A client joining now gets the stored document: nothing of the viewer's edit.
    late = room.join(clients, live.url, "late")
    assert late.wait_text("shared notes") == "shared notes"


def test_clients_on_two_api_processes_converge(client, live, api2, clients):
    room = Room(client, data="")
    here, there = room.join(clients, live.url, "ana"), room.join(clients, api2.url, "ben")
    here.insert(0, "one")
    there.insert(0, "two")
    merged = here.wait_text(includes="two")
    assert there.wait_text(includes="one") == merged
    assert merged in ("onetwo", "twoone")
    assert room.stored() == merged
    # A REST write on one process reaches a client on the other.
    result(
        post(client, "/v2/crdt/update",
             {"organizationId": room.org, "documentId": room.doc, "editorId": room.editor, "data": merged + " three"},
             room.tenant.headers))
    assert there.wait_text(merged + " three")


def test_awareness_relays_and_presence_follows_connections(client, live, clients):
    room = Room(client, data="")
    ana, ben = room.join(clients, live.url, "ana"), room.join(clients, live.url, "ben")
    ana.call("awareness", state={"user": {"name": "Ana", "color": "#f0a"}, "cursor": {"index": 0}})
    ben.call("awareness", state={"user": {"name": "Ben", "color": "#0af"}})
    assert ben.call("wait_awareness", match={"user": {"name": "Ana"}, "cursor": {"index": 0}})
    assert ana.call("wait_awareness", match={"user": {"name": "Ben"}})
    online = eventually(lambda: (p := room.presence()).get("ana") == p.get("ben") == "online" and p)
    assert online and online["ana"] == online["ben"] == "online", room.presence()
    # Ana leaves: Ben sees her awareness state go, and presence reads her offline.
    ana.close()
    assert ben.call("wait_awareness", match={"user": {"name": "Ana"}}, absent=True)
    ben.close()
    gone = eventually(lambda: all(room.presence().get(u, "offline") == "offline" for u in ("ana", "ben")))
    assert gone, room.presence()


def test_livestate_broadcast_reaches_a_subscribed_client(client, live, clients):
    room = Room(client, data="")
    ana = room.join(clients, live.url, "ana")

    def broadcast(data, **extra):
        body = {"organizationId": room.org, "documentId": room.doc, "liveStateDataId": "board", "data": data}
        return result(post(client, "/v2/livestate/broadcast", body | extra, room.tenant.headers))

    broadcast({"slide": 1})
    # On subscribing, the client gets the last value: the subscription is in place from then on.
    ana.call("subscribe_livestate", liveStateDataId="board")
    ana.call("wait_livestate", liveStateDataId="board", data={"slide": 1})
    broadcast({"slide": 2})
    message = ana.call("wait_livestate", liveStateDataId="board", data={"slide": 2})["message"]
    assert message["op"] == "data" and message["data"] == {"slide": 2} and isinstance(message["updatedAt"], int)
    broadcast({"pointer": [3, 4]}, merge=True)
    merged = ana.call("wait_livestate", liveStateDataId="board", data={"slide": 2, "pointer": [3, 4]})["message"]
    assert merged["data"] == {"slide": 2, "pointer": [3, 4]}


@pytest.mark.parametrize("crash", [True, False], ids=["crash", "graceful"])
def test_reconnect_after_server_restart_loses_nothing(client, live, api2, clients, crash):
    room = Room(client, data="")
    ana, ben = room.join(clients, api2.url, "ana"), room.join(clients, api2.url, "ben")
    ana.insert(0, "before restart")
    # Ben has it: the server stored it before relaying it.
    ben.wait_text("before restart")
    api2.stop(kill=crash)  # SIGKILL: nothing is flushed on the way out; SIGTERM: a deploy's shutdown
    ana.call("wait_closed")
    # An edit made while the server is away is sent when the client reconnects.
    ana.insert("end", ", offline edit")
    api2.start()
    ana.synced(connects=2)
    ben.synced(connects=2)
    assert ben.wait_text("before restart, offline edit") == "before restart, offline edit"
    ben.insert("end", ", after")
    assert ana.wait_text("before restart, offline edit, after")
    assert room.stored() == "before restart, offline edit, after"
    # A new client on the other process reads the same document.
    fresh = room.join(clients, live.url, "cy")
    assert fresh.wait_text("before restart, offline edit, after")
