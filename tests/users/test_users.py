"""Users: add, update, get (advanced queries, paging, grouping), delete (v1 and v2), groups."""

from support.helpers import add_organization, enable_advanced_queries, error, issue_paths, new_tenant, post, result

GET = "/v2/users/get"


def add_users(client, t, *users, **scope):
    body = {"organizationId": "o1", "users": [u if isinstance(u, dict) else {"userId": u} for u in users], **scope}
    return result(post(client, "/v2/users/add", body, t.headers))


def users(client, t, **data):
    response = post(client, GET, {"organizationId": "o1", **data}, t.headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_users_get_needs_advanced_queries(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    err = error(post(client, GET, {"organizationId": "o1"}, t.headers), "FAILED_PRECONDITION")
    assert "enableAdvancedQueries" in err["message"]
    enable_advanced_queries(client, t)
    assert users(client, t)["data"] == []


def test_add_update_and_get_users_at_each_scope(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", folder="f1")
    enable_advanced_queries(client, t)
    added = add_users(client, t, {"userId": "u1", "name": "Ana", "email": "ana@example.com"},
                      {"userId": "u2", "accessRole": "viewer"})
    assert added["u1"] == {"success": True, "id": "u1", "message": "User added."}
    add_users(client, t, "u3", documentId="d1")
    add_users(client, t, {"userId": "u4", "accessRole": "viewer"}, folderId="f1")
    assert users(client,
                 t)["data"] == [{"userId": "u1", "accessRole": "editor", "name": "Ana", "email": "ana@example.com"},
                                {"userId": "u2", "accessRole": "viewer"}]
    assert users(client, t, documentId="d1")["data"] == [{"userId": "u3", "accessRole": "editor"}]
    assert users(client, t, folderId="f1")["data"] == [{"userId": "u4", "accessRole": "viewer"}]

    updated = result(
        post(
            client, "/v2/users/update", {
                "organizationId": "o1", "users": [{"userId": "u2", "name": "Bo", "accessRole": "editor"},
                                                  {"userId": "u3", "name": "Not here"}]
            }, t.headers))
    assert updated == {
        "u2": {"success": True, "id": "u2", "message": "User updated."},
        "u3": {"success": False, "id": "u3", "message": "User does not exist."}
    }
    assert users(client, t, userIds=["u2"])["data"] == [{"userId": "u2", "accessRole": "editor", "name": "Bo"}]


def test_add_users_to_missing_scopes(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    assert add_users(client, t, "u1", documentId="nope") == {
        "u1": {"success": False, "id": "u1", "message": "Document does not exist."}
    }
    body = {"organizationId": "ghost", "users": [{"userId": "u1"}]}
    assert result(post(client, "/v2/users/add", body,
                       t.headers)) == {"u1": {"success": False, "id": "u1", "message": "Organization does not exist"}}


def test_update_users_at_folder_and_document_scopes_and_missing_ones(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", folder="f1")
    enable_advanced_queries(client, t)
    add_users(client, t, "u1")  # the organization
    add_users(client, t, {"userId": "u2", "accessRole": "viewer"}, folderId="f1")
    add_users(client, t, "u3", documentId="d1")

    def update(*users, **scope):
        body = {"organizationId": "o1", "users": [{"userId": u, "accessRole": "editor"} for u in users], **scope}
        return result(post(client, "/v2/users/update", body, t.headers))

    # Only a grant on the scope itself counts: u1's organization role is not a role on f1 or d1.
    assert update("u2", "u1", folderId="f1") == {
        "u2": {"success": True, "id": "u2", "message": "User updated."},
        "u1": {"success": False, "id": "u1", "message": "User does not exist."}
    }
    assert update("u3", "u2", documentId="d1") == {
        "u3": {"success": True, "id": "u3", "message": "User updated."},
        "u2": {"success": False, "id": "u2", "message": "User does not exist."}
    }
    assert users(client, t, folderId="f1")["data"] == [{"userId": "u2", "accessRole": "editor"}]
    # Users/update answers every miss as a missing user, whatever is missing.
    assert update("u2", folderId="nope") == {"u2": {"success": False, "id": "u2", "message": "User does not exist."}}
    assert update("u3", documentId="nope") == {"u3": {"success": False, "id": "u3", "message": "User does not exist."}}
    body = {"organizationId": "ghost", "users": [{"userId": "u1", "name": "x"}]}
    assert result(post(client, "/v2/users/update", body,
                       t.headers)) == {"u1": {"success": False, "id": "u1", "message": "User does not exist."}}


def test_update_changes_only_the_fields_sent_and_only_for_users_it_updates(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    enable_advanced_queries(client, t)
    add_users(client, t, {"userId": "u1", "name": "Ana", "email": "ana@example.com", "accessRole": "viewer"},
              {"userId": "u2", "name": "Bo", "accessRole": "viewer"})
    add_users(client, t, {"userId": "u3", "name": "Cy"}, documentId="d1")
    body = {
        "organizationId": "o1", "users": [{"userId": "u1",
                                           "email": "ana@new.example.com"}, {"userId": "u2", "accessRole": "editor"},
                                          {"userId": "u3", "name": "Not here", "accessRole": "viewer"}]
    }
    assert {k: v["success"]
            for k, v in result(post(client, "/v2/users/update", body, t.headers)).items()
            } == {"u1": True, "u2": True, "u3": False}
    assert users(client,
                 t)["data"] == [{"userId": "u1", "accessRole": "viewer", "name": "Ana", "email": "ana@new.example.com"},
                                {"userId": "u2", "accessRole": "editor", "name": "Bo"}]
    # u3 has no grant of its own on the organization: neither its profile nor its document role changed.
    assert users(client, t, documentId="d1")["data"] == [{"userId": "u3", "accessRole": "editor", "name": "Cy"}]


def test_users_get_validation(client):
    t = new_tenant(client)
    enable_advanced_queries(client, t)
    ids = [f"u{i}" for i in range(31)]
    cases = [({}, [["organizationId"]]), ({"organizationId": "o1", "userIds": ids}, [["userIds"]]),
             ({"organizationId": "o1", "organizationUserGroupIds": ids}, [["organizationUserGroupIds"]]),
             ({"organizationId": "o1", "documentId": "d", "folderId": "f"}, [[]]),
             ({"organizationId": "o1", "groupByDocumentId": True}, [["groupByDocumentId"]]),
             ({"organizationId": "o1", "allDocuments": True, "documentId": "d"}, [["documentId"]]),
             ({"organizationId": "o1", "pageSize": 0}, [["pageSize"]]),
             ({"organizationId": "o1", "pageSize": "10"}, [["pageSize"]])]
    for data, paths in cases:
        err = error(post(client, GET, data, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err)[:1] == paths, (data, err)


def test_paging_across_pages_with_both_token_names(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    enable_advanced_queries(client, t)
    add_users(client, t, *[f"u{i:02}" for i in range(23)], documentId="d1")
    seen, token, pages = [], None, 0
    while True:
        page = users(client, t, documentId="d1", pageSize=5, **({"pageToken": token} if token else {}))
        assert page["nextPageToken"] == page["pageToken"]
        seen += [u["userId"] for u in page["data"]]
        token, pages = page["pageToken"], pages + 1
        if token is None:
            break
    assert seen == [f"u{i:02}" for i in range(23)] and pages == 5


def test_page_tokens_are_tamper_proof(client):
    t, other = new_tenant(client), new_tenant(client)
    add_organization(client, t, "o1")
    enable_advanced_queries(client, t)
    enable_advanced_queries(client, other)
    add_users(client, t, "u1", "u2", "u3")
    token = users(client, t, pageSize=1)["pageToken"]
    body, mac = token.split(".")
    import base64
    import json

    forged = base64.urlsafe_b64encode(json.dumps(["o1", "u0"]).encode()).decode().rstrip("=") + "." + mac
    for bad in (forged, token[:-2], "garbage", token + "x"):
        err = error(post(client, GET, {"organizationId": "o1", "pageToken": bad}, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["pageToken"]]
    # A token is bound to its tenant and its query.
    error(post(client, GET, {"organizationId": "o1", "pageToken": token}, other.headers), "INVALID_ARGUMENT")
    error(post(client, GET, {"organizationId": "o1", "documentId": "d1", "pageToken": token}, t.headers),
          "INVALID_ARGUMENT")
    assert [u["userId"] for u in users(client, t, pageToken=token)["data"]] == ["u2", "u3"]


def test_all_documents_grouped_by_document(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", "d2")
    enable_advanced_queries(client, t)
    add_users(client, t, "orgUser")
    add_users(client, t, "a", "b", documentId="d1")
    add_users(client, t, {"userId": "a", "accessRole": "viewer"}, documentId="d2")
    flat = users(client, t, allDocuments=True)["data"]
    assert [u["userId"] for u in flat] == ["a", "b", "a"]  # organization-level users are not returned
    grouped = users(client, t, allDocuments=True, groupByDocumentId=True)["data"]
    assert grouped == {
        "d1": [{"userId": "a", "accessRole": "editor"}, {"userId": "b", "accessRole": "editor"}],
        "d2": [{"userId": "a", "accessRole": "viewer"}]
    }


def test_expired_grants_leave_users_get(client, clock):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    enable_advanced_queries(client, t)
    expires = int(clock["now"]) + 10
    body = {
        "user": {"userId": "temp"},
        "permissions": {"resources": [{"type": "document", "id": "d1", "organizationId": "o1", "expiresAt": expires}]}
    }
    result(post(client, "/v2/auth/permissions/add", body, t.headers))
    clock["now"] = expires - 1
    assert [u["userId"] for u in users(client, t, documentId="d1")["data"]] == ["temp"]
    clock["now"] = expires + 1
    assert users(client, t, documentId="d1")["data"] == []


def test_group_filter_and_group_members(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    enable_advanced_queries(client, t)
    add_users(client, t, "u1", "u2", "u3")
    result(
        post(client, "/v2/organizations/usergroups/add",
             {"organizationId": "o1", "organizationUserGroups": [{"groupId": "g"}]}, t.headers))
    result(
        post(client, "/v2/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "g", "userIds": ["u2"]}, t.headers))
    assert [u["userId"] for u in users(client, t, organizationUserGroupIds=["g"])["data"]] == ["u2"]
    missing = result(
        post(client, "/v2/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "nope", "userIds": ["u1"]}, t.headers))
    assert missing == {
        "u1": {
            "success": False, "organizationUserGroupId": "nope", "message": "Organization user group does not exist."
        }
    }
    again = result(
        post(client, "/v2/organizations/usergroups/add",
             {"organizationId": "o1", "organizationUserGroups": [{"groupId": "g"}]}, t.headers))
    assert again == {"g": {"success": False, "id": "g", "message": "Group already exists."}}


def test_users_delete_v1_and_v2(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    enable_advanced_queries(client, t)
    add_users(client, t, "u1", "u2")
    add_users(client, t, "u1", "u2", documentId="d1")
    # With documentId: only that document.
    gone = result(
        post(client, "/v1/users/delete", {"organizationId": "o1", "documentId": "d1", "userIds": ["u1", "zz"]},
             t.headers))
    assert gone == {
        "u1": {"success": True, "message": "User removed."},
        "zz": {"success": False, "message": "User does not exist."}
    }
    assert [u["userId"] for u in users(client, t, documentId="d1")["data"]] == ["u2"]
    assert [u["userId"] for u in users(client, t)["data"]] == ["u1", "u2"]
    # Without: every access in the organization, through /v2 as well.
    gone = result(post(client, "/v2/users/delete", {"organizationId": "o1", "userIds": ["u2"]}, t.headers))
    assert gone == {"u2": {"success": True, "message": "User removed."}}
    assert users(client, t, documentId="d1")["data"] == []
    assert [u["userId"] for u in users(client, t)["data"]] == ["u1"]


def test_another_tenants_users_are_invisible(client):
    a, b = new_tenant(client), new_tenant(client)
    add_organization(client, a, "o1", "d1")
    add_users(client, a, "u1")
    enable_advanced_queries(client, b)
    assert users(client, b)["data"] == []
    upd = result(
        post(client, "/v2/users/update", {"organizationId": "o1", "users": [{"userId": "u1", "name": "x"}]}, b.headers))
    assert upd["u1"] == {"success": False, "id": "u1", "message": "User does not exist."}
    gone = result(post(client, "/v1/users/delete", {"organizationId": "o1", "userIds": ["u1"]}, b.headers))
    assert gone["u1"]["success"] is False
    grp = result(
        post(client, "/v1/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "g", "userIds": ["u1"]}, b.headers))
    assert grp["u1"]["success"] is False
    enable_advanced_queries(client, a)
    assert [u["userId"] for u in users(client, a)["data"]] == ["u1"]
