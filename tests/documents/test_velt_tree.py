"""Velt's tree operations on folders and documents (issue #37, ADR 0048): folders/update (rename, move, no loops),
folders/delete (with everything in it), folders/get paging and rootFoldersOnly, documents/move and
documents/count/get, driven by velt-py's own service classes and request models."""

from concurrent.futures import ThreadPoolExecutor

from velt_py.models.document import AddDocumentsRequest, GetDocumentsCountRequest, MoveDocumentsRequest
from velt_py.models.folder import AddFolderRequest, DeleteFolderRequest, GetFoldersRequest, UpdateFolderRequest
from velt_py.models.organization import AddOrganizationsRequest

from support.helpers import error, issue_paths, new_tenant, post, result

FOLDERS, UPDATE, DELETE = ("/v2/organizations/folders/get", "/v2/organizations/folders/update",
                           "/v2/organizations/folders/delete")
DOCS, MOVE, COUNT = ("/v2/organizations/documents/get", "/v2/organizations/documents/move",
                     "/v2/organizations/documents/count/get")
CYCLE = "A folder cannot be moved into itself or one of its subfolders."


def tree(client, sdk, t, org="o1"):
    """a > a1 > a11, and b; documents da (in a), da1 (in a1), da11 (in a11), db (in b), loose (in none)."""
    api = sdk(t).api
    api.organizations.addOrganizations(AddOrganizationsRequest(organizations=[{"organizationId": org}]))
    added = api.folders.addFolder(
        AddFolderRequest(
            organizationId=org, folders=[{"folderId": "a",
                                          "folderName": "A"}, {"folderId": "a1", "parentFolderId": "a"},
                                         {"folderId": "a11", "parentFolderId": "a1"}, {"folderId": "b"}]))
    assert all(v["success"] for v in added["result"]["data"].values()), added
    for folder, doc in (("a", "da"), ("a1", "da1"), ("a11", "da11"), ("b", "db"), (None, "loose")):
        body = AddDocumentsRequest(organizationId=org, documents=[{"documentId": doc}], folderId=folder)
        assert api.documents.addDocuments(body)["result"]["status"] == "success"
    return api


def folders(client, t, org="o1", **more):
    return {f["folderId"]: f for f in result(post(client, FOLDERS, {"organizationId": org, **more}, t.headers))}


def docs_in(client, t, folder, org="o1"):
    return sorted(d["documentId"]
                  for d in result(post(client, DOCS, {"organizationId": org, "folderId": folder}, t.headers)))


def test_update_renames_and_moves_a_folder_with_everything_in_it(client, sdk, clock):
    t = new_tenant(client)
    api = tree(client, sdk, t)
    clock["now"] += 60
    answer = api.folders.updateFolder(
        UpdateFolderRequest(
            organizationId="o1", folders=[{"folderId": "a1", "parentFolderId": "b"},
                                          {"folderId": "a", "folderName": "Renamed"}]))
    assert answer["result"]["data"] == {
        "a1": {"success": True, "id": "a1", "message": "Folder Updated."},
        "a": {"success": True, "id": "a", "message": "Folder Updated."}
    }
    got = folders(client, t)
    assert (got["a1"]["parentFolderId"], got["a1"]["ancestors"]) == ("b", ["b"])
    assert got["a11"]["ancestors"] == ["b", "a1"]  # the subfolder came along
    assert got["a"]["folderName"] == "Renamed" and got["a"]["lastUpdated"] == int(clock["now"] * 1000)
    assert got["b"]["lastUpdated"] == got["b"]["createdAt"] == int((clock["now"] - 60) * 1000)
    assert docs_in(client, t, "a11") == ["da11"] and docs_in(client, t, "a") == ["da"]
    # Access follows the tree: a role on b now reaches the moved folder's documents, a role on a no longer does.
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "folderId": "b", "users": [{"userId": "u1"}]},
             t.headers))
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "folderId": "a", "users": [{"userId": "u2"}]},
             t.headers))
    access = result(
        post(client, "/v2/auth/permissions/get",
             {"organizationId": "o1", "userIds": ["u1", "u2"], "documentIds": ["da11", "da"]}, t.headers))
    assert access["u1"]["documents"]["da11"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    assert access["u2"]["documents"]["da11"]["errorCode"] == "permission_denied"
    assert access["u2"]["documents"]["da"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    # "root" (Velt's name for the top) moves a folder to the top level.
    result(
        post(client, UPDATE, {"organizationId": "o1", "folders": [{"folderId": "a11", "parentFolderId": "root"}]},
             t.headers))
    assert (folders(client, t)["a11"]["parentFolderId"], folders(client, t)["a11"]["ancestors"]) == (None, [])


def test_update_refuses_loops_and_missing_folders_and_keeps_the_tree(client, sdk):
    t = new_tenant(client)
    api = tree(client, sdk, t)
    before = folders(client, t)
    answer = api.folders.updateFolder(
        UpdateFolderRequest(
            organizationId="o1",
            folders=[{"folderId": "a", "parentFolderId": "a11"}, {"folderId": "a1", "parentFolderId": "a1"},
                     {"folderId": "ghost", "folderName": "x"}, {"folderId": "b", "parentFolderId": "nowhere"}]))
    assert answer["result"]["data"] == {
        "a": {"success": False, "id": "a", "message": CYCLE}, "a1": {"success": False, "id": "a1", "message": CYCLE},
        "ghost": {"success": False, "id": "ghost", "message": "Folder does not exist."},
        "b": {"success": False, "id": "b", "message": "Parent folder does not exist."}
    }
    assert folders(client, t) == before
    # A move earlier in the batch counts for the checks of later ones: b under a, then a under b is a loop.
    both = result(
        post(
            client, UPDATE, {
                "organizationId": "o1", "folders": [{"folderId": "b", "parentFolderId": "a"},
                                                    {"folderId": "a", "parentFolderId": "b"}]
            }, t.headers))
    assert both["b"]["success"] and both["a"] == {"success": False, "id": "a", "message": CYCLE}
    assert folders(client, t)["b"]["ancestors"] == ["a"]


def test_crossing_moves_at_once_never_make_a_loop(client, sdk):
    t = new_tenant(client)
    tree(client, sdk, t)

    def move(pair):
        folder, parent = pair
        body = {"organizationId": "o1", "folders": [{"folderId": folder, "parentFolderId": parent}]}
        return result(post(client, UPDATE, body, t.headers))[folder]["success"]

    for round_ in range(4):
        first, second = ("a", "b") if round_ % 2 == 0 else ("b", "a")
        with ThreadPoolExecutor(2) as pool:
            outcomes = list(pool.map(move, [(first, second), (second, first)]))
        assert outcomes.count(True) == 1, outcomes
        # Every folder is still reachable from the top: a loop would cut it (and its subtree) off.
        assert set(folders(client, t)) == {"a", "a1", "a11", "b"}
        result(
            post(
                client, UPDATE, {
                    "organizationId": "o1", "folders": [{"folderId": "a", "parentFolderId": "root"},
                                                        {"folderId": "b", "parentFolderId": "root"}]
                }, t.headers))


def test_update_refuses_bad_input_whole(client, sdk):
    t = new_tenant(client)
    tree(client, sdk, t)
    before = folders(client, t)
    bad = [
        ({"organizationId": "o1", "folders": [{"folderId": "a"}]}, ["folders", "0"]),  # neither name nor parent
        ({"organizationId": "o1", "folders": "a"}, ["folders"]),
        ({"organizationId": "o1"}, ["folders"]),
        ({"organizationId": "o1", "folders": []}, ["folders"]),
        ({"organizationId": "o1", "folders": [{"folderId": "a", "folderName": 7}]}, ["folders", "0", "folderName"]),
        ({"organizationId": "o1", "folders": [{"folderId": "a",
                                               "folderName": "x" * 501}]}, ["folders", "0", "folderName"]),
        ({"organizationId": "o1", "folders": [{"folderId": "a",
                                               "parentFolderId": "p" * 201}]}, ["folders", "0", "parentFolderId"]),
        ({
            "organizationId": "o1", "folders": [{"folderId": "a", "folderName": "x"},
                                                {"folderId": "a", "folderName": "y"}]
        }, ["folders"]),
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, UPDATE, body, t.headers), "INVALID_ARGUMENT")), body
    assert folders(client, t) == before
    # Another tenant naming these ids reaches nothing of this one.
    other = new_tenant(client)
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]}, other.headers))
    answer = result(
        post(client, UPDATE, {"organizationId": "o1", "folders": [{"folderId": "a", "folderName": "x"}]},
             other.headers))
    assert answer["a"] == {"success": False, "id": "a", "message": "Folder does not exist."}
    assert folders(client, t) == before


def test_delete_takes_subfolders_documents_and_grants_along(client, sdk):
    t = new_tenant(client)
    api = tree(client, sdk, t)
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "folderId": "a1", "users": [{"userId": "u1"}]},
             t.headers))
    answer = api.folders.deleteFolder(DeleteFolderRequest(organizationId="o1", folderId="a"))
    assert answer == {"result": {"status": "success", "message": "Folder deleted successfully."}}
    assert set(folders(client, t)) == {"b"}
    listed = result(post(client, DOCS, {"organizationId": "o1"}, t.headers))
    assert sorted(d["documentId"] for d in listed) == ["db", "loose"]
    # The ids are free again, and nothing of the old grants comes back with them.
    result(
        post(client, "/v2/organizations/folders/add", {"organizationId": "o1", "folders": [{"folderId": "a1"}]},
             t.headers))
    access = result(
        post(client, "/v2/auth/permissions/get", {"organizationId": "o1", "userIds": ["u1"], "folderIds": ["a1"]},
             t.headers))
    assert access["u1"]["folders"]["a1"]["errorCode"] == "permission_denied"
    # Deleting again, or another tenant deleting this one's folder: not found, and b stays.
    gone = api.folders.deleteFolder(DeleteFolderRequest(organizationId="o1", folderId="a"))
    assert gone["error"] == {"status": "NOT_FOUND", "message": "Folder does not exist."}
    other = new_tenant(client)
    assert error(post(client, DELETE, {"organizationId": "o1", "folderId": "b"}, other.headers), "NOT_FOUND")
    assert set(folders(client, t)) == {"a1", "b"} and docs_in(client, t, "b") == ["db"]
    for body, path in (({"organizationId": "o1"}, ["folderId"]), ({"organizationId": "o1",
                                                                   "folderId": 5}, ["folderId"]), ({"folderId": "b"},
                                                                                                   ["organizationId"])):
        assert path in issue_paths(error(post(client, DELETE, body, t.headers), "INVALID_ARGUMENT"))
    assert set(folders(client, t)) == {"a1", "b"}


def test_get_pages_the_tree_and_lists_top_level_folders(client, sdk):
    t = new_tenant(client)
    api = tree(client, sdk, t)
    roots = api.folders.getFolders(GetFoldersRequest(organizationId="o1", rootFoldersOnly=True))["result"]
    assert [f["folderId"] for f in roots["data"]] == ["a", "b"] and roots["pageToken"] is None
    seen, token = [], None
    while True:
        page = api.folders.getFolders(GetFoldersRequest(organizationId="o1", pageSize=2, pageToken=token))["result"]
        assert len(page["data"]) <= 2
        seen += [f["folderId"] for f in page["data"]]
        token = page["pageToken"]
        if token is None:
            break
    assert seen == ["a", "b", "a1", "a11"]  # parents before children, then by id
    first = result(post(client, FOLDERS, {"organizationId": "o1", "pageSize": 1}, t.headers))
    assert [f["folderId"] for f in first] == ["a"]
    # maxDepth still bounds the whole tree; a subtree is answered whole (no paging, no top-level filter).
    assert list(folders(client, t, maxDepth=1)) == ["a", "b", "a1"]
    assert list(folders(client, t, folderId="a1")) == ["a1", "a11"]
    token = post(client, FOLDERS, {"organizationId": "o1", "pageSize": 1}, t.headers).json()["result"]["pageToken"]
    refused = [
        ({"organizationId": "o1", "folderId": "a", "rootFoldersOnly": True}, ["rootFoldersOnly"]),
        ({"organizationId": "o1", "folderId": "a", "pageSize": 2}, ["pageSize"]),
        ({"organizationId": "o1", "folderId": "a", "pageToken": token}, ["pageToken"]),
        ({"organizationId": "o1", "pageSize": 0}, ["pageSize"]),
        ({"organizationId": "o1", "pageSize": 1001}, ["pageSize"]),
        ({"organizationId": "o1", "rootFoldersOnly": "yes"}, ["rootFoldersOnly"]),
        ({"organizationId": "o1", "pageToken": token[:-2] + "xx"}, ["pageToken"]),
        # A token belongs to its query: the top-level list does not take the whole tree's.
        ({"organizationId": "o1", "rootFoldersOnly": True, "pageToken": token}, ["pageToken"]),
    ]
    for body, path in refused:
        assert path in issue_paths(error(post(client, FOLDERS, body, t.headers), "INVALID_ARGUMENT")), body
    other = new_tenant(client)
    assert error(post(client, FOLDERS, {"organizationId": "o1", "pageToken": token}, other.headers), "INVALID_ARGUMENT")
    assert result(post(client, FOLDERS, {"organizationId": "o1"}, other.headers)) == []


def test_move_documents_all_or_nothing(client, sdk):
    t = new_tenant(client)
    api = tree(client, sdk, t)
    moved = api.documents.moveDocuments(
        MoveDocumentsRequest(organizationId="o1", documentIds=["da", "loose"], folderId="b"))
    assert moved["result"]["status"] == "success"
    assert moved["result"]["message"] == "Documents moved successfully."
    assert docs_in(client, t, "b") == ["da", "db", "loose"] and docs_in(client, t, "a") == []
    # One unknown document: nothing moves, and the answer names it.
    refused = error(
        post(client, MOVE, {"organizationId": "o1", "documentIds": ["da", "ghost"], "folderId": "a1"}, t.headers),
        "NOT_FOUND")
    assert refused["details"] == {"ghost": {"success": False, "id": "ghost", "message": "Document does not exist."}}
    assert docs_in(client, t, "b") == ["da", "db", "loose"]
    missing = api.documents.moveDocuments(
        MoveDocumentsRequest(organizationId="o1", documentIds=["da"], folderId="ghost"))
    assert missing["error"] == {"status": "NOT_FOUND", "message": "Folder does not exist."}
    # "root" takes documents out of every folder.
    result(post(client, MOVE, {"organizationId": "o1", "documentIds": ["loose"], "folderId": "root"}, t.headers))
    assert docs_in(client, t, "b") == ["da", "db"]
    bad = [
        ({"organizationId": "o1", "documentIds": [f"d{n}" for n in range(31)], "folderId": "b"}, ["documentIds"]),
        ({"organizationId": "o1", "documentIds": ["da", "da"], "folderId": "b"}, ["documentIds"]),
        ({"organizationId": "o1", "documentIds": [], "folderId": "b"}, ["documentIds"]),
        ({"organizationId": "o1", "documentIds": ["da"]}, ["folderId"]),
        ({"organizationId": "o1", "documentIds": "da", "folderId": "b"}, ["documentIds"]),
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, MOVE, body, t.headers), "INVALID_ARGUMENT")), body
    other = new_tenant(client)
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]}, other.headers))
    assert error(post(client, MOVE, {"organizationId": "o1", "documentIds": ["da"], "folderId": "root"}, other.headers),
                 "NOT_FOUND")
    assert docs_in(client, t, "b") == ["da", "db"]


def test_count_documents(client, sdk):
    t = new_tenant(client)
    api = tree(client, sdk, t)

    def count(**more):
        answer = api.documents.getDocumentsCount(GetDocumentsCountRequest(organizationId="o1", **more))
        return answer["result"]["data"]

    assert count() == {"count": 5}
    assert count(folderId="a1") == {"count": 1}
    assert count(excludeFolderDocs=True) == {"count": 1}
    # Documents carry no metadata here: Velt's answer for a filter it could not apply, the unfiltered count.
    assert count(filters=[{"key": "team", "operator": "==", "value": "x"}]) == {"count": 5, "filtersApplied": False}
    assert result(post(client, COUNT, {"organizationId": "nope"}, t.headers)) == {"count": 0}
    bad = [
        ({"organizationId": "o1", "excludeFolderDocs": True, "filters": []}, ["excludeFolderDocs"]),
        ({"organizationId": "o1", "excludeFolderDocs": True, "folderId": "a"}, ["excludeFolderDocs"]),
        ({"organizationId": "o1", "filters": [{"key": "k", "operator": "~", "value": 1}]}, ["filters", "0",
                                                                                            "operator"]),
        ({"organizationId": "o1", "filters": [{"key": "k", "operator": "==", "value": 1}] * 11}, ["filters"]),
        ({"organizationId": "o1", "folderId": 3}, ["folderId"]),
        ({}, ["organizationId"]),
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, COUNT, body, t.headers), "INVALID_ARGUMENT")), body
    assert result(post(client, COUNT, {"organizationId": "o1"}, new_tenant(client).headers)) == {"count": 0}
