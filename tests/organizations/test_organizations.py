"""Organizations, documents and folders: add/get/update/delete, the disabled state, the partial-failure envelope."""

import json

from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

ADD_DOCS = "/v2/organizations/documents/add"


def docs(*ids):
    return [{"documentId": i, "documentName": f"Doc {i}"} for i in ids]


def test_organizations_add_get_update_delete(client, clock):
    t = new_tenant(client)
    added = result(
        post(client, "/v2/organizations/add",
             {"organizations": [{"organizationId": "o1", "organizationName": "Acme"}, {"organizationId": "o2"}]},
             t.headers))
    assert added == {
        "o1": {"success": True, "id": "o1", "message": "Organization added."},
        "o2": {"success": True, "id": "o2", "message": "Organization added."}
    }
    again = result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]}, t.headers))
    assert again["o1"] == {"success": False, "id": "o1", "message": "Organization already exists."}

    renamed = result(
        post(
            client, "/v2/organizations/update", {
                "organizations": [{"organizationId": "o2", "organizationName": "Beta"},
                                  {"organizationId": "nope", "organizationName": "X"}]
            }, t.headers))
    assert renamed["o2"]["success"] and renamed["nope"] == {
        "success": False, "id": "nope", "message": "Organization does not exist"
    }

    listed = post(client, "/v2/organizations/get", {}, t.headers).json()["result"]
    now = int(clock["now"] * 1000)
    assert listed["data"] == [{
        "organizationId": "o1", "id": "o1", "disabled": False, "organizationName": "Acme", "createdAt": now,
        "updatedAt": now
    }, {
        "organizationId": "o2", "id": "o2", "disabled": False, "organizationName": "Beta", "createdAt": now,
        "updatedAt": now
    }]
    assert listed["pageToken"] is None and listed["nextPageToken"] is None

    gone = result(post(client, "/v2/organizations/delete", {"organizationIds": ["o1", "zz"]}, t.headers))
    assert gone == {
        "o1": {"success": True, "id": "o1", "message": "Organization deleted."},
        "zz": {"success": False, "id": "zz", "message": "Organization does not exist"}
    }
    ids = [o["organizationId"] for o in result(post(client, "/v2/organizations/get", {}, t.headers))]
    assert ids == ["o2"]


def test_organization_delete_takes_documents_folders_and_access(client, db):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", folder="f1")
    grant = {
        "user": {"userId": "u1"},
        "permissions": {"resources": [{"type": "document", "id": "d1", "organizationId": "o1"}]}
    }
    result(post(client, "/v2/auth/permissions/add", grant, t.headers))
    result(post(client, "/v2/organizations/delete", {"organizationIds": ["o1"]}, t.headers))
    for table in ("documents", "folders", "grants"):
        assert db.execute(f"select count(*) as n from {table} where api_key_id = %s",
                          (t.api_key, )).fetchone()["n"] == 0
    # The organization can be created again from scratch.
    add_organization(client, t, "o1", "d1")


def test_disable_state(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    body = {"organizationIds": ["o1", "missing"], "disabled": True}
    assert result(post(client, "/v2/organizations/access/disablestate/update", body, t.headers)) == {
        "o1": {"success": True, "id": "o1", "message": "Updated disable state for organization Successfully"},
        "missing": {"success": False, "id": "missing", "message": "Organization does not exist"}
    }
    [org] = result(post(client, "/v2/organizations/get", {"organizationIds": ["o1"]}, t.headers))
    assert org["disabled"] is True
    # The missing organization was reported, not created.
    assert result(post(client, "/v2/organizations/get", {"organizationIds": ["missing"]}, t.headers)) == []
    # Both fields are required and typed.
    err = error(post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["o1"]}, t.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["disabled"]]
    err = error(post(client, "/v2/organizations/access/disablestate/update", {"disabled": "yes"}, t.headers),
                "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["disabled"], ["organizationIds"]]


def test_add_documents_all_succeed(client):
    t = new_tenant(client)
    body = {"organizationId": "o1", "createOrganization": True, "documents": docs("d1", "d2")}
    assert result(post(client, ADD_DOCS, body, t.headers)) == {
        "d1": {"success": True, "id": "d1", "message": "Document added successfully."},
        "d2": {"success": True, "id": "d2", "message": "Document added successfully."}
    }
    listed = result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
    assert [(d["documentId"], d["documentName"]) for d in listed] == [("d1", "Doc d1"), ("d2", "Doc d2")]


def test_add_documents_partial_failure_envelope_byte_for_byte(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    response = post(client, ADD_DOCS, {"organizationId": "o1", "documents": docs("d1", "d2")}, t.headers)
    assert response.status_code == 500
    expected = {
        "error": {
            "status": "INTERNAL", "message": "One or more documents could not be added.", "details": {
                "d1": {"success": False, "id": "d1", "message": "Document already exists.", "code": "already-exists"},
                "d2": {"success": True, "id": "d2", "message": "Document added successfully."}
            }
        }
    }
    assert response.content == json.dumps(expected, separators=(",", ":")).encode()
    # The good item was kept: a retry of only the failed one is still already-exists, and d2 exists.
    ids = [
        d["documentId"]
        for d in result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
    ]
    assert ids == ["d1", "d2"]


def test_add_documents_every_item_failing_gets_the_same_envelope(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    err = error(post(client, ADD_DOCS, {"organizationId": "o1", "documents": docs("d1")}, t.headers), "INTERNAL")
    assert err["details"] == {
        "d1": {"success": False, "id": "d1", "message": "Document already exists.", "code": "already-exists"}
    }


def test_add_documents_unknown_organization(client, db):
    t = new_tenant(client)
    err = error(post(client, ADD_DOCS, {"organizationId": "ghost", "documents": docs("d1", "d2")}, t.headers),
                "INTERNAL")
    assert err["details"] == {
        d: {"success": False, "id": d, "message": "Organization does not exist", "code": "internal"}
        for d in ("d1", "d2")
    }
    assert (db.execute("select count(*) as n from organizations where api_key_id = %s",
                       (t.api_key, )).fetchone()["n"] == 0)


def test_add_documents_into_folders(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    missing = post(client, ADD_DOCS, {"organizationId": "o1", "folderId": "f1", "documents": docs("d1")}, t.headers)
    assert error(missing, "INTERNAL")["details"]["d1"] == {
        "success": False, "id": "d1", "message": "Folder does not exist.", "code": "internal"
    }
    body = {"organizationId": "o1", "folderId": "f1", "createFolder": True, "documents": docs("d1")}
    result(post(client, ADD_DOCS, body, t.headers))
    [doc
     ] = result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1", "folderId": "f1"}, t.headers))
    assert doc["folderId"] == "f1"


def test_add_documents_validation(client):
    t = new_tenant(client)
    cases = [({"documents": docs("d1")}, [["organizationId"]]), ({"organizationId": "o1"}, [["documents"]]),
             ({"organizationId": "o1", "documents": []}, [["documents"]]),
             ({"organizationId": "o1", "documents": [{"documentName": "x"}]}, [["documents", "0", "documentId"]]),
             ({"organizationId": "o1", "documents": docs("d1", "d1")}, [["documents"]]),
             ({"organizationId": "o1", "documents": docs(*map(str, range(1001)))}, [["documents"]]),
             ({"organizationId": "x" * 201, "documents": docs("d1")}, [["organizationId"]]),
             ({"organizationId": "o1", "createOrganization": "true",
               "documents": docs("d1")}, [["createOrganization"]])]
    for data, paths in cases:
        err = error(post(client, ADD_DOCS, data, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err)[:1] == paths, (data, err)


def test_documents_update_and_delete(client, db):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", "d2")
    result(
        post(client, "/v2/organizations/folders/add", {"organizationId": "o1", "folders": [{"folderId": "f1"}]},
             t.headers))
    changed = result(
        post(
            client, "/v2/organizations/documents/update", {
                "organizationId": "o1", "documents": [{
                    "documentId": "d1", "documentName": "Renamed", "folderId": "f1"
                }, {"documentId": "d2", "folderId": "nofolder"}, {"documentId": "d9", "documentName": "x"}]
            }, t.headers))
    assert changed == {
        "d1": {"success": True, "id": "d1", "message": "Document updated."},
        "d2": {"success": False, "id": "d2", "message": "Folder does not exist."},
        "d9": {"success": False, "id": "d9", "message": "Document does not exist."}
    }
    [d1] = result(
        post(client, "/v2/organizations/documents/get", {"organizationId": "o1", "documentIds": ["d1"]}, t.headers))
    assert (d1["documentName"], d1["folderId"]) == ("Renamed", "f1")
    deleted = result(
        post(client, "/v2/organizations/documents/delete", {"organizationId": "o1", "documentIds": ["d1", "d9"]},
             t.headers))
    assert deleted["d1"]["success"] and deleted["d9"] == {
        "success": False, "id": "d9", "message": "Document does not exist."
    }
    ids = [
        d["documentId"]
        for d in result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
    ]
    assert ids == ["d2"]


def test_documents_paging_has_no_duplicates_or_gaps(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", *[f"d{i:02}" for i in range(25)])
    seen, token = [], None
    while True:
        body = {"organizationId": "o1", "pageSize": 7} | ({"pageToken": token} if token else {})
        page = post(client, "/v2/organizations/documents/get", body, t.headers).json()["result"]
        seen += [d["documentId"] for d in page["data"]]
        token = page["pageToken"]
        if token is None:
            break
    assert seen == [f"d{i:02}" for i in range(25)]


def test_nested_folders_with_ancestors(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    added = result(
        post(
            client, "/v2/organizations/folders/add", {
                "organizationId": "o1", "folders": [{"folderId": "root", "folderName": "Root"}, {
                    "folderId": "a", "parentFolderId": "root"
                }, {"folderId": "b", "parentFolderId": "a"}, {"folderId": "orphan", "parentFolderId": "nowhere"}]
            }, t.headers))
    assert added["b"] == {"success": True, "id": "b", "message": "Folder added."}
    assert added["orphan"] == {"success": False, "id": "orphan", "message": "Parent folder does not exist."}
    again = result(
        post(client, "/v2/organizations/folders/add", {"organizationId": "o1", "folders": [{"folderId": "root"}]},
             t.headers))
    assert again == {"root": {"success": False, "id": "root", "message": "Folder already exists."}}
    tree = result(post(client, "/v2/organizations/folders/get", {"organizationId": "o1"}, t.headers))
    assert [(f["folderId"], f["parentFolderId"], f["ancestors"]) for f in tree] == [("root", None, []),
                                                                                    ("a", "root", ["root"]),
                                                                                    ("b", "a", ["root", "a"])]
    sub = result(post(client, "/v2/organizations/folders/get", {"organizationId": "o1", "folderId": "a"}, t.headers))
    assert [f["folderId"] for f in sub] == ["a", "b"]
    shallow = result(
        post(client, "/v2/organizations/folders/get", {"organizationId": "o1", "folderId": "root", "maxDepth": 1},
             t.headers))
    assert [f["folderId"] for f in shallow] == ["root", "a"]
    unknown = post(client, "/v2/organizations/folders/add", {"organizationId": "ghost", "folders": [{"folderId": "x"}]},
                   t.headers)
    assert result(unknown) == {"x": {"success": False, "id": "x", "message": "Organization does not exist"}}


def test_another_tenants_ids_are_invisible(client):
    a, b = new_tenant(client), new_tenant(client)
    add_organization(client, a, "o1", "d1", folder="f1")
    assert result(post(client, "/v2/organizations/get", {"organizationIds": ["o1"]}, b.headers)) == []
    assert result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, b.headers)) == []
    assert result(post(client, "/v2/organizations/folders/get", {"organizationId": "o1"}, b.headers)) == []
    upd = result(
        post(client, "/v2/organizations/update", {"organizations": [{"organizationId": "o1", "organizationName": "x"}]},
             b.headers))
    assert upd["o1"]["success"] is False
    dis = result(
        post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["o1"], "disabled": True},
             b.headers))
    assert dis["o1"] == {"success": False, "id": "o1", "message": "Organization does not exist"}
    err = error(post(client, ADD_DOCS, {"organizationId": "o1", "documents": docs("d2")}, b.headers), "INTERNAL")
    assert err["details"]["d2"]["message"] == "Organization does not exist"
    deleted = result(
        post(client, "/v2/organizations/documents/delete", {"organizationId": "o1", "documentIds": ["d1"]}, b.headers))
    assert deleted["d1"]["success"] is False
    assert (result(post(client, "/v2/organizations/delete", {"organizationIds": ["o1"]}, b.headers))["o1"]["success"]
            is False)
    # Nothing of A's changed.
    [org] = result(post(client, "/v2/organizations/get", {}, a.headers))
    assert org["disabled"] is False and "organizationName" not in org
    assert [
        d["documentId"]
        for d in result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, a.headers))
    ] == ["d1"]
    # B may use the same ids for its own, separate data.
    add_organization(client, b, "o1", "d1")
