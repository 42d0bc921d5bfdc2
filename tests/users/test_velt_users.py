"""Velt's user and group operations (issue #37, ADR 0048): users/count/get, users/doc/get, users/data/get in Velt's
shape, users/add's create flags, usergroups/add's createOrganization, usergroups/users/delete's deleteAll and
reading groups, driven by velt-py's own service classes and request models."""

from velt_py.models.gdpr import GetAllUserDataRequest
from velt_py.models.user_api import AddUsersRequest, GetDocUsersRequest, GetUsersCountRequest
from velt_py.models.user_group import AddUserGroupsRequest, DeleteUsersFromGroupRequest

from support.helpers import (
    add_organization,
    enable_advanced_queries,
    error,
    issue_paths,
    new_tenant,
    post,
    result,
)

COUNT, DOC_USERS, EXPORT = "/v2/users/count/get", "/v2/users/doc/get", "/v2/users/data/get"
GROUPS, GROUP_USERS = "/v2/organizations/usergroups", "/v2/organizations/usergroups/users"


def add_users(client, t, users, **scope):
    result(post(client, "/v2/users/add", {"organizationId": "o1", "users": users, **scope}, t.headers))


def team(client, t):
    """o1 with documents d1, d2, d3: u1 on the organization; u2 editor on d1, viewer on d2; u3 (through group g)
    viewer on d2; u4 on d3 only."""
    add_organization(client, t, "o1", "d1", "d2", "d3")
    add_users(client, t, [{"userId": "u1", "name": "Ana", "email": "ana@example.com"}])
    add_users(client, t, [{"userId": "u2", "name": "Bo"}], documentId="d1")
    add_users(client, t, [{"userId": "u2", "accessRole": "viewer"}], documentId="d2")
    add_users(client, t, [{"userId": "u4"}], documentId="d3")
    result(
        post(client, f"{GROUPS}/add", {"organizationId": "o1", "organizationUserGroups": [{"groupId": "g"}]},
             t.headers))
    result(
        post(client, f"{GROUP_USERS}/add",
             {"organizationId": "o1", "organizationUserGroupId": "g", "userIds": ["u3", "u2"]}, t.headers))
    result(
        post(
            client, "/v2/auth/permissions/add", {
                "group": {"organizationId": "o1", "organizationUserGroupId": "g"}, "permissions": {
                    "resources": [{"type": "document", "id": "d2", "organizationId": "o1", "accessRole": "viewer"}]
                }
            }, t.headers))


def test_count_users_at_each_scope(client, sdk):
    t = new_tenant(client)
    team(client, t)
    api = sdk(t).api
    # Like users/get, counting needs advanced queries.
    refused = api.users.getUsersCount(GetUsersCountRequest(organizationId="o1"))
    assert refused["error"]["status"] == "FAILED_PRECONDITION"
    enable_advanced_queries(client, t)

    def count(**more):
        return api.users.getUsersCount(GetUsersCountRequest(organizationId="o1", **more))["result"]["data"]["count"]

    assert count() == 1  # u1, on the organization
    assert count(documentId="d2") == 2  # u2 directly, u3 through the group (u2 counted once)
    assert count(allDocuments=True) == 4 - 1  # u2, u3, u4 (u1's role is the organization's)
    assert count(documentId="d2", userId="u3") == 1 and count(documentId="d1", userId="u3") == 0
    assert count(documentId="ghost") == 0
    assert result(post(client, COUNT, {"organizationId": "o1", "folderId": "nope"}, t.headers)) == {"count": 0}
    bad = [
        ({"organizationId": "o1", "allDocuments": True, "documentId": "d1"}, ["documentId"]),
        ({"organizationId": "o1", "documentId": "d1", "folderId": "f"}, []),
        ({"organizationId": "o1", "userId": 5}, ["userId"]),
        ({"documentId": "d1"}, ["organizationId"]),
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, COUNT, body, t.headers), "INVALID_ARGUMENT")), body
    other = new_tenant(client)
    enable_advanced_queries(client, other)
    assert result(post(client, COUNT, {"organizationId": "o1", "allDocuments": True}, other.headers)) == {"count": 0}


def test_document_users_with_their_documents_paged(client, sdk):
    t = new_tenant(client)
    team(client, t)
    enable_advanced_queries(client, t)
    api = sdk(t).api
    everyone = api.users.getDocUsers(GetDocUsersRequest(organizationId="o1"))["result"]
    assert everyone["data"] == [{"userId": "u2", "name": "Bo", "documentsCount": 2},
                                {"userId": "u3", "documentsCount": 1}, {"userId": "u4", "documentsCount": 1}]
    assert everyone["pageToken"] is None
    involved = api.users.getDocUsers(
        GetDocUsersRequest(organizationId="o1", userIds=["u2", "u1"], includeInvolvedDocuments=True))["result"]
    # The higher role wins on d2 (u2's own viewer role and the group's viewer role: viewer).
    assert involved["data"] == [{
        "userId": "u2", "name": "Bo", "documentsCount": 2,
        "involvedDocuments": [{"documentId": "d1", "accessRole": "editor"},
                              {"documentId": "d2", "accessRole": "viewer"}]
    }]
    seen, token = [], None
    while True:
        page = api.users.getDocUsers(GetDocUsersRequest(organizationId="o1", pageSize=2, pageToken=token))["result"]
        seen += [u["userId"] for u in page["data"]]
        token = page["pageToken"]
        if token is None:
            break
    assert seen == ["u2", "u3", "u4"]
    first = post(client, DOC_USERS, {"organizationId": "o1", "pageSize": 1}, t.headers).json()["result"]["pageToken"]
    bad = [
        ({"organizationId": "o1", "includeInvolvedDocuments": True}, ["userIds"]),
        ({"organizationId": "o1", "includeInvolvedDocuments": True,
          "userIds": [f"u{n}" for n in range(6)]}, ["userIds"]),
        ({"organizationId": "o1", "userIds": [f"u{n}" for n in range(21)]}, ["userIds"]),
        ({"organizationId": "o1", "pageSize": 0}, ["pageSize"]),
        ({"organizationId": "o1", "userIds": ["u1"], "pageToken": first}, ["pageToken"]),  # another query's token
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, DOC_USERS, body, t.headers), "INVALID_ARGUMENT")), body
    other = new_tenant(client)
    enable_advanced_queries(client, other)
    assert result(post(client, DOC_USERS, {"organizationId": "o1"}, other.headers)) == []


def notify(client, t, org, notification_id, actor):
    result(
        post(
            client, "/v2/notifications/add", {
                "organizationId": org, "documentId": "d1", "notificationId": notification_id,
                "actionUser": {"userId": actor}, "displayHeadlineMessageTemplate": "x", "displayBodyMessage": "hi",
                "notifyUsers": [{"userId": "someone"}]
            }, t.headers))


def test_user_data_get_takes_velts_shape(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    add_organization(client, t, "o2", "d1")
    notify(client, t, "o1", "n1", "u1")
    notify(client, t, "o2", "n2", "u1")
    notify(client, t, "o1", "n3", "u2")
    api = sdk(t).api

    def ids(answer):
        return sorted(r["id"] for r in answer["result"]["data"]["notifications"])

    # Velt's documented body: one organization, one user (refused with 400 before).
    velt_shaped = api.gdpr.getAllUserData(GetAllUserDataRequest(organizationId="o1", userId="u1"))
    assert ids(velt_shaped) == ["n1"] and velt_shaped["result"]["nextPageToken"] is None
    assert ids(
        api.gdpr.getAllUserData(GetAllUserDataRequest(organizationId="o1", userId="u1",
                                                      veltAllOrganizations=True))) == ["n1", "n2"]
    # veltUserIds stands in for userId.
    assert ids(
        api.gdpr.getAllUserData(GetAllUserDataRequest(organizationId="o1", userId="u9",
                                                      veltUserIds=["u1", "u2"]))) == ["n1", "n3"]
    assert ids(api.gdpr.getAllUserData(GetAllUserDataRequest(organizationId="o1", veltUserIds=["u1",
                                                                                               "u2"]))) == ["n1", "n3"]
    # collab's own shape keeps working, and both token names carry the same token.
    page = post(client, EXPORT, {"userIds": ["u1"], "pageSize": 1}, t.headers).json()["result"]
    assert page["pageToken"] and page["pageToken"] == page["nextPageToken"]
    rest = post(client, EXPORT, {"userIds": ["u1"], "pageSize": 1, "pageToken": page["nextPageToken"]},
                t.headers).json()["result"]
    assert len(page["data"]) == len(rest["data"]) == 1 and rest["nextPageToken"] is None
    bad = [
        ({"organizationId": "o1"}, ["userIds"]),
        ({"organizationId": "o1", "userId": "u1", "userIds": ["u1"]}, ["userId"]),
        ({"organizationId": "o1", "organizationIds": ["o1"], "userId": "u1"}, ["organizationId"]),
        ({"organizationId": "o1", "userId": 7}, ["userId"]),
        ({"organizationId": "o1", "userId": "u" * 201}, ["userId"]),
        ({"organizationId": "o1", "veltUserIds": []}, ["veltUserIds"]),
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, EXPORT, body, t.headers), "INVALID_ARGUMENT")), body
    other = new_tenant(client)
    assert result(post(client, EXPORT, {"organizationId": "o1", "userId": "u1"}, other.headers)) == {
        "comments": [], "reactions": [], "recordings": [], "notifications": [], "activities": []
    }


def test_users_add_creates_what_its_flags_name(client, sdk):
    t = new_tenant(client)
    api = sdk(t).api
    added = api.users.addUsers(
        AddUsersRequest(organizationId="o1", createOrganization=True, folderId="f1", createFolder=True,
                        users=[{"userId": "u1"}]))
    assert added["result"]["data"] == {"u1": {"success": True, "id": "u1", "message": "User added."}}
    added = api.users.addUsers(
        AddUsersRequest(organizationId="o1", folderId="f2", createFolder=True, parentFolderId="f1",
                        users=[{"userId": "u2"}]))
    assert added["result"]["data"]["u2"]["success"]
    added = api.users.addUsers(
        AddUsersRequest(organizationId="o1", documentId="d1", createDocument=True, users=[{"userId": "u3"}]))
    assert added["result"]["data"]["u3"]["success"]
    folders = result(post(client, "/v2/organizations/folders/get", {"organizationId": "o1"}, t.headers))
    assert [(f["folderId"], f["ancestors"]) for f in folders] == [("f1", []), ("f2", ["f1"])]
    assert [
        d["documentId"]
        for d in result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
    ] == ["d1"]
    access = result(
        post(client, "/v2/auth/permissions/get",
             {"organizationId": "o1", "userIds": ["u1", "u3"], "folderIds": ["f2"], "documentIds": ["d1"]}, t.headers))
    assert access["u1"]["folders"]["f2"] == {"accessRole": "editor", "accessType": "organizationPrivate"
                                             }  # f1's role reaches the folder below it
    assert access["u3"]["documents"]["d1"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    # Without the flags nothing is created, and a missing parent creates nothing either.
    missing = result(post(client, "/v2/users/add", {"organizationId": "o2", "users": [{"userId": "u1"}]}, t.headers))
    assert missing["u1"] == {"success": False, "id": "u1", "message": "Organization does not exist"}
    no_parent = result(
        post(
            client, "/v2/users/add", {
                "organizationId": "o1", "folderId": "f3", "createFolder": True, "parentFolderId": "ghost",
                "users": [{"userId": "u1"}]
            }, t.headers))
    assert no_parent["u1"] == {"success": False, "id": "u1", "message": "Parent folder does not exist."}
    assert len(result(post(client, "/v2/organizations/folders/get", {"organizationId": "o1"}, t.headers))) == 2
    for body, path in (({"organizationId": "o1", "createDocument": True,
                         "users": [{"userId": "u1"}]}, ["createDocument"]),
                       ({"organizationId": "o1", "createFolder": "yes", "folderId": "f",
                         "users": [{"userId": "u1"}]}, ["createFolder"])):
        assert path in issue_paths(error(post(client, "/v2/users/add", body, t.headers), "INVALID_ARGUMENT"))
    assert result(post(client, "/v2/organizations/get", {"organizationIds": ["o2"]}, t.headers)) == []


def test_groups_create_organization_delete_all_and_read(client, sdk):
    t = new_tenant(client)
    api = sdk(t).api
    added = api.userGroups.addUserGroups(
        AddUserGroupsRequest(organizationId="o1", createOrganization=True,
                             organizationUserGroups=[{"groupId": "g1", "groupName": "Eng"}, {"groupId": "g2"}]))
    assert added["result"]["data"]["g1"] == {"success": True, "id": "g1", "message": "Group added."}
    without = result(
        post(client, f"{GROUPS}/add", {"organizationId": "o2", "organizationUserGroups": [{"groupId": "g"}]},
             t.headers))
    assert without["g"] == {"success": False, "id": "g", "message": "Organization does not exist"}
    result(
        post(client, f"{GROUP_USERS}/add",
             {"organizationId": "o1", "organizationUserGroupId": "g1", "userIds": ["u1", "u2", "u3"]}, t.headers))
    listed = post(client, f"{GROUPS}/get", {"organizationId": "o1"}, t.headers).json()["result"]
    assert [(g["groupId"], g.get("groupName"), g["membersCount"]) for g in listed["data"]] == [("g1", "Eng", 3),
                                                                                               ("g2", None, 0)]
    one = post(client, f"{GROUPS}/get", {"organizationId": "o1", "pageSize": 1}, t.headers).json()["result"]
    assert [g["groupId"] for g in one["data"]] == ["g1"]
    two = result(
        post(client, f"{GROUPS}/get", {"organizationId": "o1", "pageSize": 1, "pageToken": one["pageToken"]},
             t.headers))
    assert [g["groupId"] for g in two] == ["g2"]
    # deleteAll empties the group (Velt clients may send an empty userIds beside it).
    emptied = api.userGroups.deleteUsersFromGroup(
        DeleteUsersFromGroupRequest(organizationId="o1", organizationUserGroupId="g1", userIds=[], deleteAll=True))
    assert emptied["result"]["data"] == {
        u: {"success": True, "organizationUserGroupId": "g1", "message": "User removed from group."}
        for u in ("u1", "u2", "u3")
    }
    assert result(post(client, f"{GROUPS}/get", {"organizationId": "o1", "organizationUserGroupIds": ["g1"]},
                       t.headers))[0]["membersCount"] == 0
    ghost = api.userGroups.deleteUsersFromGroup(
        DeleteUsersFromGroupRequest(organizationId="o1", organizationUserGroupId="ghost", deleteAll=True))
    assert ghost["error"] == {"status": "NOT_FOUND", "message": "Organization user group does not exist."}
    # The plain form is unchanged.
    result(
        post(client, f"{GROUP_USERS}/add", {"organizationId": "o1", "organizationUserGroupId": "g1", "userIds": ["u1"]},
             t.headers))
    plain = result(
        post(client, f"{GROUP_USERS}/delete",
             {"organizationId": "o1", "organizationUserGroupId": "g1", "userIds": ["u1", "u9"]}, t.headers))
    assert plain["u1"]["success"] and plain["u9"]["success"] is False
    bad = [
        ({"organizationId": "o1", "organizationUserGroupId": "g1"}, ["userIds"]),
        ({"organizationId": "o1", "organizationUserGroupId": "g1", "userIds": []}, ["userIds"]),
        ({"organizationId": "o1", "organizationUserGroupId": "g1", "deleteAll": "true"}, ["deleteAll"]),
        ({"organizationId": "o1", "organizationUserGroupId": "g1", "userIds": ["a", "a"]}, ["userIds"]),
    ]
    for body, path in bad:
        assert path in issue_paths(error(post(client, f"{GROUP_USERS}/delete", body, t.headers),
                                         "INVALID_ARGUMENT")), body
    other = new_tenant(client)
    result(
        post(client, f"{GROUPS}/add",
             {"organizationId": "o1", "createOrganization": True, "organizationUserGroups": [{"groupId": "g1"}]},
             other.headers))
    result(
        post(client, f"{GROUP_USERS}/add", {"organizationId": "o1", "organizationUserGroupId": "g1", "userIds": ["u5"]},
             t.headers))
    assert result(
        post(client, f"{GROUP_USERS}/delete",
             {"organizationId": "o1", "organizationUserGroupId": "g1", "deleteAll": True}, other.headers)) == {}
    assert [g["membersCount"]
            for g in result(post(client, f"{GROUPS}/get", {"organizationId": "o1"}, t.headers))] == [1, 0]
    assert [g["membersCount"]
            for g in result(post(client, f"{GROUPS}/get", {"organizationId": "o1"}, other.headers))] == [0]
