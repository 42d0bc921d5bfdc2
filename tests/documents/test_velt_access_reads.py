"""Access in reads (issue #51 item 6): documents/get records carry `disabled` and their effective `accessType`,
folders/get records `accessType`, `inheritAccessFromParent`, `organizationId` and (for one folder) Velt's nested
`subFolders`, and auth/permissions/get entries, allowed and denied, their effective `accessType`; all read through
velt-py's own service classes and request models."""

from velt_py.models.access_control import GetPermissionsRequest
from velt_py.models.document import (
    AddDocumentsRequest,
    GetDocumentsRequest,
    UpdateDocumentAccessRequest,
    UpdateDocumentDisableStateRequest,
)
from velt_py.models.folder import AddFolderRequest, GetFoldersRequest
from velt_py.models.organization import AddOrganizationsRequest

from support.helpers import new_tenant, post, result


def _tree(sdk, t):
    """o1: f1 (restricted) > f2 (inherits) > f3 (public); d1 at the top, d2 in f2, d3 in f3 (own: restricted)."""
    api = sdk(t).api
    api.organizations.addOrganizations(AddOrganizationsRequest(organizations=[{"organizationId": "o1"}]))
    api.folders.addFolder(
        AddFolderRequest(
            organizationId="o1", folders=[{"folderId": "f1",
                                           "accessType": "restricted"}, {"folderId": "f2", "parentFolderId": "f1"},
                                          {"folderId": "f3", "parentFolderId": "f2", "accessType": "public"}]))
    for folder, doc in ((None, "d1"), ("f2", "d2"), ("f3", "d3")):
        api.documents.addDocuments(
            AddDocumentsRequest(organizationId="o1", documents=[{"documentId": doc}], folderId=folder))
    api.documents.updateDocumentAccess(
        UpdateDocumentAccessRequest(organizationId="o1", documentIds=["d3"], accessType="restricted"))
    return api


def test_documents_get_carries_disabled_and_the_effective_access_type(client, sdk):
    t = new_tenant(client)
    api = _tree(sdk, t)
    api.documents.updateDocumentDisableState(
        UpdateDocumentDisableStateRequest(organizationId="o1", documentIds=["d2"], disabled=True))
    answer = api.documents.getDocuments(GetDocumentsRequest(organizationId="o1"))["result"]
    got = {d["id"]: d for d in answer["data"]}
    assert {d: (r["documentId"], r["disabled"], r["accessType"])
            for d, r in got.items()} == {
                "d1": ("d1", False, "organizationPrivate"),  # nothing above it sets a type: the default
                "d2": ("d2", True, "restricted"),  # inherited from f1 through f2
                "d3": ("d3", False, "restricted"),  # its own wins over f3's public
            }
    assert answer["nextPageToken"] is None and answer["pageToken"] is None


def test_folders_get_carries_access_and_nested_subfolders(client, sdk):
    t = new_tenant(client)
    api = _tree(sdk, t)
    listed = {
        f["folderId"]: f
        for f in api.folders.getFolders(GetFoldersRequest(organizationId="o1"))["result"]["data"]
    }
    assert {f: (r["organizationId"], r["accessType"], r["inheritAccessFromParent"])
            for f, r in listed.items()
            } == {"f1": ("o1", "restricted", False), "f2": ("o1", "restricted", True), "f3": ("o1", "public", False)}
    assert all("subFolders" not in r for r in listed.values())
    one = api.folders.getFolders(GetFoldersRequest(organizationId="o1", folderId="f1"))["result"]["data"]
    assert [r["folderId"] for r in one] == ["f1", "f2", "f3"]  # collab's flat list stays
    (f2, ) = one[0]["subFolders"]
    (f3, ) = f2["subFolders"]
    assert (f2["folderId"], f2["ancestors"], f2["inheritAccessFromParent"]) == ("f2", ["f1"], True)
    assert (f3["folderId"], f3["accessType"], "subFolders" in f3) == ("f3", "public", False)
    shallow = api.folders.getFolders(GetFoldersRequest(organizationId="o1", folderId="f1", maxDepth=1))["result"]
    assert [s["folderId"] for s in shallow["data"][0]["subFolders"]] == ["f2"]
    assert "subFolders" not in shallow["data"][0]["subFolders"][0]


def test_permissions_get_entries_carry_the_effective_access_type(client, sdk):
    t = new_tenant(client)
    api = _tree(sdk, t)
    grant = {
        "user": {"userId": "ana"},
        "permissions": {"resources": [{"type": "folder", "id": "f2", "organizationId": "o1", "accessRole": "viewer"}]}
    }
    result(post(client, "/v2/auth/permissions/add", grant, t.headers))
    answer = api.accessControl.getPermissions(
        GetPermissionsRequest(organizationId="o1", userIds=["ana"], folderIds=["f1", "f2", "f3", "nope"],
                              documentIds=["d1", "d2", "d3", "gone"]))["result"]["data"]["ana"]
    assert answer["folders"]["f1"]["errorCode"] == "permission_denied"
    assert {f: e.get("accessType")
            for f, e in answer["folders"].items()
            } == {"f1": "restricted", "f2": "restricted", "f3": "public", "nope": None}
    assert answer["folders"]["f2"] == {"accessRole": "viewer", "accessType": "restricted"}  # inherited from f1
    assert answer["documents"]["d1"] == {
        "error": "User does not have access to this document.", "errorCode": "permission_denied",
        "accessType": "organizationPrivate"
    }
    assert answer["documents"]["d2"] == {"accessRole": "viewer", "accessType": "restricted"}
    assert answer["documents"]["d3"] == {"accessRole": "viewer", "accessType": "restricted"}
    assert answer["documents"]["gone"]["errorCode"] == "does_not_exist" and "accessType" not in answer["documents"][
        "gone"]
    assert "accessType" not in answer["organization"]["o1"]
