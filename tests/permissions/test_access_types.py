"""Access types of documents and folders (issue #37 item 3, ADR 0051), set through velt-py and enforced wherever access
is decided: auth/permissions/get, user tokens, a realtime socket and comments written with verifyUserPermissions."""

import asyncio

import jwt
from velt_py.models.document import UpdateDocumentAccessRequest, UpdateDocumentDisableStateRequest
from velt_py.models.folder import AddFolderRequest, GetFoldersRequest, UpdateFolderAccessRequest

from support.helpers import error, issue_paths, new_tenant, post, result
from support.realtime_support import YClient, refused, url

NO_ACCESS = 4403
PERMISSIONS = "/v2/auth/permissions/get"


def _grant(client, t, user: str, kind: str, ident: str, role: str = "editor") -> None:
    body = {
        "user": {"userId": user},
        "permissions": {"resources": [{"type": kind, "id": ident, "organizationId": "o1", "accessRole": role}]}
    }
    result(post(client, "/v2/auth/permissions/add", body, t.headers))


def _tree(client, t) -> None:
    """o1 with folder f1 holding f2 holding d2; d1 at the top; ana holds an organization role, bo one on d2 only."""
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]}, t.headers))
    result(
        post(client, "/v2/organizations/folders/add", {"organizationId": "o1", "folders": [{"folderId": "f1"}]},
             t.headers))
    result(
        post(client, "/v2/organizations/folders/add",
             {"organizationId": "o1", "folders": [{"folderId": "f2", "parentFolderId": "f1"}]}, t.headers))
    result(
        post(client, "/v2/organizations/documents/add", {"organizationId": "o1", "documents": [{"documentId": "d1"}]},
             t.headers))
    result(
        post(client, "/v2/organizations/documents/add",
             {"organizationId": "o1", "folderId": "f2", "documents": [{"documentId": "d2"}]}, t.headers))
    _grant(client, t, "ana", "organization", "o1")
    _grant(client, t, "bo", "document", "d2", "viewer")


def _roles(client, t, *users: str) -> dict[str, dict[str, str | None]]:
    body = {"organizationId": "o1", "userIds": list(users), "documentIds": ["d1", "d2"], "folderIds": ["f1", "f2"]}
    answer = result(post(client, PERMISSIONS, body, t.headers))
    return {
        u: {k: v.get("accessRole")
            for section in ("folders", "documents")
            for k, v in answer[u][section].items()}
        for u in users
    }


def test_access_types_set_through_velt_py_decide_permissions(client, sdk):
    t = new_tenant(client)
    _tree(client, t)
    api = sdk(t).api
    before = _roles(client, t, "ana", "bo", "cy")
    assert before == {
        "ana": {"f1": "editor", "f2": "editor", "d1": "editor",
                "d2": "editor"}, "bo": {"f1": None, "f2": None, "d1": None, "d2": "viewer"},
        "cy": {"f1": None, "f2": None, "d1": None, "d2": None}
    }
    # A restricted folder keeps organization roles out of it and of what it holds; grants inside it still count.
    answer = api.folders.updateFolderAccess(
        UpdateFolderAccessRequest(organizationId="o1", folderIds=["f1", "nope"], accessType="restricted"))
    assert answer["result"]["data"]["f1"] == {
        "success": True, "id": "f1", "accessType": "restricted", "message": "Folder access type updated."
    }
    assert answer["result"]["data"]["nope"]["success"] is False
    assert _roles(client, t, "ana", "bo") == {
        "ana": {"f1": None, "f2": None, "d1": "editor", "d2": None},
        "bo": {"f1": None, "f2": None, "d1": None, "d2": "viewer"}
    }
    # The nearest setting wins: the document made public is open to every user of the key, as a viewer at least.
    api.documents.updateDocumentAccess(
        UpdateDocumentAccessRequest(organizationId="o1", documentIds=["d2"], accessType="public"))
    roles = _roles(client, t, "ana", "bo", "cy")
    assert [roles[u]["d2"] for u in ("ana", "bo", "cy")] == ["editor", "viewer", "viewer"]
    assert roles["ana"]["f2"] is None  # the folder above it stays restricted
    # A folder set to inherit takes its parent's again; organizationPrivate is the rule before access types.
    inherit = api.folders.updateFolderAccess(
        UpdateFolderAccessRequest(organizationId="o1", folderIds=["f1"], inheritFromParent=True))
    assert inherit["result"]["data"]["f1"]["accessType"] is None
    assert inherit["result"]["data"]["f1"]["inheritFromParent"] is True
    api.documents.updateDocumentAccess(
        UpdateDocumentAccessRequest(organizationId="o1", documentIds=["d2"], accessType="organizationPrivate"))
    assert _roles(client, t, "ana", "bo", "cy") == before


def test_a_document_disabled_alone_denies_everyone_on_it_only(client, sdk):
    t = new_tenant(client)
    _tree(client, t)
    api = sdk(t).api.documents
    answer = api.updateDocumentDisableState(
        UpdateDocumentDisableStateRequest(organizationId="o1", documentIds=["d1"], disabled=True))
    assert answer["result"]["data"]["d1"]["disabled"] is True
    entry = result(
        post(client, PERMISSIONS, {"organizationId": "o1", "userIds": ["ana"], "documentIds": ["d1", "d2"]},
             t.headers))["ana"]["documents"]
    assert entry["d1"] == {
        "error": "Document access is disabled.", "errorCode": "permission_denied", "accessType": "organizationPrivate"
    }
    assert entry["d2"]["accessRole"] == "editor"
    api.updateDocumentDisableState(
        UpdateDocumentDisableStateRequest(organizationId="o1", documentIds=["d1"], disabled=False))
    assert _roles(client, t, "ana")["ana"]["d1"] == "editor"


def test_tokens_carry_only_what_the_access_type_lets_through(client):
    t = new_tenant(client)
    _tree(client, t)
    result(
        post(client, "/v2/organizations/documents/access/update",
             {"organizationId": "o1", "documentIds": ["d1"], "accessType": "restricted"}, t.headers))
    body = {
        "userId": "ana", "permissions": {
            "resources": [{"type": "organization", "id": "o1", "organizationId": "o1", "accessRole": "editor"}]
        }
    }
    token = result(post(client, "/v2/auth/generate_token", body, t.headers))["token"]
    granted = jwt.decode(token, options={"verify_signature": False})["permissions"]["resources"]
    assert [(r["type"], r["id"]) for r in granted] == [("organization", "o1")]
    # A user with a grant on the restricted document itself gets it into the token.
    body = {
        "userId": "dan", "permissions": {
            "resources": [{"type": "document", "id": "d1", "organizationId": "o1", "accessRole": "viewer"}]
        }
    }
    token = result(post(client, "/v2/auth/generate_token", body, t.headers))["token"]
    granted = jwt.decode(token, options={"verify_signature": False})["permissions"]["resources"]
    assert [(r["id"], r["accessRole"]) for r in granted] == [("d1", "viewer")]


def test_a_socket_follows_the_documents_access_type(client, live):
    t = new_tenant(client)
    _tree(client, t)
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "o1", "documentId": "d1", "editorId": "e1", "type": "text", "data": "hi"}, t.headers))
    ana = result(post(client, "/v2/auth/generate_token", {"userId": "ana"}, t.headers))["token"]
    cy = result(post(client, "/v2/auth/generate_token", {"userId": "cy"}, t.headers))["token"]
    address = url(live, "o1", "d1", "e1", ana)
    outsider = url(live, "o1", "d1", "e1", cy)
    rt = live.app.state.realtime

    async def scenario():
        assert await refused(outsider) == NO_ACCESS  # organizationPrivate: cy holds no role
        a = await YClient.open(address)
        result(
            post(client, "/v2/organizations/documents/access/update",
                 {"organizationId": "o1", "documentIds": ["d1"], "accessType": "restricted"}, t.headers))
        live.run(rt.upkeep.recheck())
        assert await a.closed() == NO_ACCESS  # ana's organization role no longer reaches it
        assert await refused(address) == NO_ACCESS
        result(
            post(client, "/v2/organizations/documents/access/update",
                 {"organizationId": "o1", "documentIds": ["d1"], "accessType": "public"}, t.headers))
        c = await YClient.open(outsider)  # public: any user of the key joins, as a viewer
        await c.close()

    asyncio.run(scenario())


def test_comments_written_with_verify_follow_the_access_type(client):
    t = new_tenant(client)
    _tree(client, t)
    add = "/v2/commentannotations/add"

    def write(user: str):
        return post(
            client, add, {
                "organizationId": "o1", "documentId": "d1", "verifyUserPermissions": True,
                "commentAnnotations": [{"commentData": [{"commentText": "hi", "from": {"userId": user}}]}]
            }, t.headers)

    assert write("ana").status_code == 200
    result(
        post(client, "/v2/organizations/documents/access/update",
             {"organizationId": "o1", "documentIds": ["d1"], "accessType": "restricted"}, t.headers))
    assert error(write("ana"), "PERMISSION_DENIED")
    result(
        post(client, "/v2/organizations/documents/access/update",
             {"organizationId": "o1", "documentIds": ["d1"], "accessType": "public"}, t.headers))
    assert error(write("cy"), "PERMISSION_DENIED")  # public gives viewers: they read and react, editors write
    _grant(client, t, "cy", "document", "d1")
    assert write("cy").status_code == 200


def test_bad_access_updates_are_refused_and_change_nothing(client):
    t = new_tenant(client)
    _tree(client, t)
    docs, folders = "/v2/organizations/documents/access/update", "/v2/organizations/folders/access/update"
    for path, body, where in (
        (docs, {"organizationId": "o1", "documentIds": ["d1"], "accessType": "private"}, ["accessType"]),
        (docs, {"organizationId": "o1", "documentIds": [], "accessType": "public"}, ["documentIds"]),
        (docs, {"organizationId": "o1", "documentIds": "d1", "accessType": "public"}, ["documentIds"]),
        (docs, {"organizationId": "o1", "documentIds": ["d1"] * 2, "accessType": "public"}, ["documentIds"]),
        (docs, {"organizationId": "o1", "documentIds": [f"d{i}" for i in range(101)],
                "accessType": "public"}, ["documentIds"]),
        (folders, {"organizationId": "o1", "folderIds": ["f1"]}, []),
        (folders, {"organizationId": "o1", "folderIds": ["f1"], "accessType": "public", "inheritFromParent": True}, []),
    ):
        err = error(post(client, path, body, t.headers), "INVALID_ARGUMENT")
        if where:
            assert issue_paths(err)[0][:1] == where, err
    assert error(
        post(client, docs, {"organizationId": "nope", "documentIds": ["d1"], "accessType": "public"}, t.headers),
        "NOT_FOUND")
    # Another tenant naming this one's organization and documents finds nothing and changes nothing.
    other = new_tenant(client)
    assert error(
        post(client, docs, {"organizationId": "o1", "documentIds": ["d1"], "accessType": "public"}, other.headers),
        "NOT_FOUND")
    assert _roles(client, t, "cy")["cy"]["d1"] is None


def test_a_folder_added_with_its_access_type_applies_it_and_shows_it(client, sdk):
    t = new_tenant(client)
    _tree(client, t)
    api = sdk(t).api.folders
    api.addFolder(AddFolderRequest(organizationId="o1", folders=[{"folderId": "f3", "accessType": "restricted"}]))
    result(
        post(client, "/v2/organizations/documents/add",
             {"organizationId": "o1", "folderId": "f3", "documents": [{"documentId": "d3"}]}, t.headers))
    entry = result(
        post(client, PERMISSIONS, {"organizationId": "o1", "userIds": ["ana"], "documentIds": ["d3"]},
             t.headers))["ana"]["documents"]["d3"]
    assert entry["errorCode"] == "permission_denied"  # ana's organization role stays out of the restricted folder
    folders = {f["folderId"]: f for f in api.getFolders(GetFoldersRequest(organizationId="o1"))["result"]["data"]}
    assert (folders["f3"]["accessType"], folders["f3"]["inheritAccessFromParent"]) == ("restricted", False)
    # f1 sets none: it shows the type it has (the default) and that it inherits (issue #51 item 6).
    assert (folders["f1"]["accessType"], folders["f1"]["inheritAccessFromParent"]) == ("organizationPrivate", True)
    err = error(
        post(client, "/v2/organizations/folders/add",
             {"organizationId": "o1", "folders": [{"folderId": "f4", "accessType": "secret"}]}, t.headers),
        "INVALID_ARGUMENT")
    assert issue_paths(err)[0][-1] == "accessType"
