"""User invitations (velt-py's users/invite/*, issue #37, ADR 0048): invite an e-mail to an organization, a folder
or a document; accepting grants that access through the grants store, declining or withdrawing grants nothing;
listed per organization and per e-mail, counted, paged; driven by velt-py's own service and request models."""

from velt_py.models.user_api import (
    AddUserInviteRequest,
    GetInvitedPendingUsersCountRequest,
    GetInvitedUsersRequest,
    GetUserInvitationsRequest,
    RespondUserInviteRequest,
)

from support.helpers import add_organization, enable_advanced_queries, error, issue_paths, new_tenant, post, result

INVITE, RESPOND, INVITES, OF_EMAIL, PENDING = ("/v2/users/invite/add", "/v2/users/invite/respond",
                                               "/v2/users/invite/get", "/v2/users/invitations/get",
                                               "/v2/users/invite/pending/count")
ACCESS = "/v2/auth/permissions/get"


def setup(client, t):
    add_organization(client, t, "o1", "d1", folder="f1")  # d1 inside f1
    add_organization(client, t, "o2")


def access(client, t, user, **ids):
    return result(post(client, ACCESS, {"organizationId": "o1", "userIds": [user], **ids}, t.headers))[user]


def token_of(client, t, user):
    return result(post(client, "/v2/auth/generate_token", {"userId": user}, t.headers))["token"]


def test_invite_accept_grants_and_decline_does_not(client, sdk, clock):
    t = new_tenant(client)
    setup(client, t)
    api = sdk(t).api
    now = int(clock["now"] * 1000)
    invited = api.users.addUserInvite(
        AddUserInviteRequest(email="Ana@Example.com", organizationId="o1", type="org_user", organizationName="Acme",
                             invitedBy={"userId": "owner", "email": "owner@example.com"}))["result"]["data"]
    assert invited["invitationId"].startswith("inv_")
    assert {k: v
            for k, v in invited.items() if k != "invitationId"} == {
                "organizationId": "o1", "type": "org_user", "email": "ana@example.com", "status": "PENDING",
                "organizationName": "Acme", "invitedBy": {"userId": "owner", "email": "owner@example.com"},
                "createdAt": now, "lastUpdated": now
            }
    doc_invite = api.users.addUserInvite(
        AddUserInviteRequest(email="bo@example.com", organizationId="o1", type="doc_user", documentId="d1",
                             documentName="Plan"))["result"]["data"]
    assert (doc_invite["documentId"], doc_invite["documentName"]) == ("d1", "Plan")
    api.users.addUserInvite(
        AddUserInviteRequest(email="cy@example.com", organizationId="o1", type="folder_user", folderId="f1"))
    count = api.users.getInvitedPendingUsersCount(
        GetInvitedPendingUsersCountRequest(organizationId="o1", type="org_user"))
    assert count["result"]["data"] == {"count": 1}
    assert access(client, t, "u1")["organization"]["o1"]["errorCode"] == "permission_denied"

    # Accepting, with the invited user's own token, grants editor on the organization to the user who joins.
    clock["now"] += 10
    accepted = api.users.respondToInvite(
        RespondUserInviteRequest(email="ana@example.com", organizationId="o1", status="ACCEPTED", type="org_user",
                                 user={"userId": "u1", "name": "Ana"}, authToken=token_of(client, t, "u1")))
    data = accepted["result"]["data"]
    assert (data["status"], data["userId"], data["lastUpdated"]) == ("ACCEPTED", "u1", now + 10_000)
    assert access(client, t, "u1",
                  documentIds=["d1"
                               ])["documents"]["d1"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    # The profile carries the invited e-mail.
    enable_advanced_queries(client, t)
    listed = result(post(client, "/v2/users/get", {"organizationId": "o1"}, t.headers))
    assert listed == [{"userId": "u1", "accessRole": "editor", "name": "Ana", "email": "ana@example.com"}]

    # Declining grants nothing, and a declined invitation cannot be accepted afterwards.
    declined = api.users.respondToInvite(
        RespondUserInviteRequest(email="bo@example.com", organizationId="o1", status="REJECTED", type="doc_user",
                                 documentId="d1"))
    assert declined["result"]["data"]["status"] == "REJECTED" and "userId" not in declined["result"]["data"]
    late = post(
        client, RESPOND, {
            "email": "bo@example.com", "organizationId": "o1", "status": "ACCEPTED", "type": "doc_user",
            "documentId": "d1", "user": {"userId": "u2"}
        }, t.headers)
    assert error(late, "FAILED_PRECONDITION")["message"] == "The invitation is not pending: it was REJECTED."
    assert access(client, t, "u2", documentIds=["d1"])["documents"]["d1"]["errorCode"] == "permission_denied"
    withdrawn = api.users.respondToInvite(
        RespondUserInviteRequest(email="cy@example.com", organizationId="o1", status="WITHDRAWN", type="folder_user",
                                 folderId="f1"))
    assert withdrawn["result"]["data"]["status"] == "WITHDRAWN"

    # Inviting again revives a declined invitation; an accepted one stays as it is.
    again = result(
        post(client, INVITE,
             {"email": "bo@example.com", "organizationId": "o1", "type": "doc_user", "documentId": "d1"}, t.headers))
    assert (again["invitationId"], again["status"]) == (doc_invite["invitationId"], "PENDING")
    still = result(
        post(client, INVITE, {"email": "ana@example.com", "organizationId": "o1", "type": "org_user"}, t.headers))
    assert (still["invitationId"], still["status"], still["userId"]) == (invited["invitationId"], "ACCEPTED", "u1")
    accepted_doc = result(
        post(
            client, RESPOND, {
                "email": "bo@example.com", "organizationId": "o1", "status": "ACCEPTED", "type": "doc_user",
                "documentId": "d1", "user": {"userId": "u2"}
            }, t.headers))
    assert accepted_doc["status"] == "ACCEPTED"
    assert access(client, t, "u2",
                  documentIds=["d1"
                               ])["documents"]["d1"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    assert access(client, t, "u2")["organization"]["o1"]["errorCode"] == "permission_denied"  # the document only


def test_listing_and_counting_invitations(client, sdk):
    t = new_tenant(client)
    setup(client, t)
    api = sdk(t).api
    for email, kind, more in (("b@example.com", "org_user", {}), ("a@example.com", "doc_user", {"documentId": "d1"}),
                              ("a@example.com", "org_user", {}), ("c@example.com", "folder_user", {"folderId": "f1"})):
        result(post(client, INVITE, {"email": email, "organizationId": "o1", "type": kind, **more}, t.headers))
    result(post(client, INVITE, {"email": "a@example.com", "organizationId": "o2", "type": "org_user"}, t.headers))
    result(
        post(client, RESPOND,
             {"email": "b@example.com", "organizationId": "o1", "status": "REJECTED", "type": "org_user"}, t.headers))

    every = api.users.getInvitedUsers(GetInvitedUsersRequest(organizationId="o1"))["result"]
    # By e-mail (then by id): every type of invitation, pending or answered, of this organization only.
    assert [i["email"] for i in every["data"]] == ["a@example.com", "a@example.com", "b@example.com", "c@example.com"]
    assert {(i["email"], i["type"], i["status"])
            for i in every["data"]} == {("a@example.com", "doc_user", "PENDING"),
                                        ("a@example.com", "org_user", "PENDING"),
                                        ("b@example.com", "org_user", "REJECTED"),
                                        ("c@example.com", "folder_user", "PENDING")}
    assert every["pageToken"] is None and len(every["data"]) == 4
    pending = api.users.getInvitedUsers(GetInvitedUsersRequest(organizationId="o1", isPendingUsersOnly=True))
    assert sorted(i["email"] for i in pending["result"]["data"]) == ["a@example.com", "a@example.com", "c@example.com"]
    one = api.users.getInvitedUsers(GetInvitedUsersRequest(organizationId="o1", email="A@example.com"))
    assert {i["type"] for i in one["result"]["data"]} == {"doc_user", "org_user"}
    seen, token = [], None
    while True:
        page = api.users.getInvitedUsers(GetInvitedUsersRequest(organizationId="o1", pageSize=1, pageToken=token))
        seen += [i["invitationId"] for i in page["result"]["data"]]
        token = page["result"]["pageToken"]
        if token is None:
            break
    assert seen == [i["invitationId"] for i in every["data"]]

    mine = api.users.getUserInvitations(GetUserInvitationsRequest(organizationId="o1", email="a@example.com"))
    assert sorted(i["type"] for i in mine["result"]["data"]) == ["doc_user", "org_user"]
    by_type = api.users.getUserInvitations(
        GetUserInvitationsRequest(organizationId="o1", email="a@example.com", type="doc_user"))
    assert [i["documentId"] for i in by_type["result"]["data"]] == ["d1"]
    declined = api.users.getUserInvitations(
        GetUserInvitationsRequest(organizationId="o1", email="b@example.com", status="REJECTED"))
    assert [i["status"] for i in declined["result"]["data"]] == ["REJECTED"]
    assert result(
        post(client, OF_EMAIL, {"organizationId": "o1", "email": "b@example.com", "status": "PENDING"},
             t.headers)) == []

    def pending_count(kind, org="o1", tenant=t):
        return result(post(client, PENDING, {"organizationId": org, "type": kind}, tenant.headers))["count"]

    assert (pending_count("org_user"), pending_count("doc_user"), pending_count("folder_user")) == (1, 1, 1)
    assert pending_count("org_user", "o2") == 1 and pending_count("org_user", "nope") == 0
    # Deleting the invited document or folder takes its invitations along.
    result(
        post(client, "/v2/organizations/documents/delete", {"organizationId": "o1", "documentIds": ["d1"]}, t.headers))
    result(post(client, "/v2/organizations/folders/delete", {"organizationId": "o1", "folderId": "f1"}, t.headers))
    left = result(post(client, INVITES, {"organizationId": "o1"}, t.headers))
    assert [(i["email"], i["type"]) for i in left] == [("a@example.com", "org_user"), ("b@example.com", "org_user")]
    # Another tenant sees none of it.
    other = new_tenant(client)
    add_organization(client, other, "o1")
    assert result(post(client, INVITES, {"organizationId": "o1"}, other.headers)) == []
    assert result(post(client, OF_EMAIL, {"organizationId": "o1", "email": "a@example.com"}, other.headers)) == []
    assert pending_count("org_user", tenant=other) == 0


def test_invitations_refuse_bad_input_and_write_nothing(client, sdk):
    t = new_tenant(client)
    setup(client, t)
    api = sdk(t).api
    missing_org = api.users.addUserInvite(
        AddUserInviteRequest(email="a@example.com", organizationId="nope", type="org_user"))
    assert missing_org["error"] == {"status": "NOT_FOUND", "message": "Organization does not exist"}
    missing_doc = post(client, INVITE,
                       {"email": "a@example.com", "organizationId": "o1", "type": "doc_user", "documentId": "ghost"},
                       t.headers)
    assert error(missing_doc, "NOT_FOUND")["message"] == "Document does not exist."
    missing_folder = post(
        client, INVITE, {"email": "a@example.com", "organizationId": "o1", "type": "folder_user", "folderId": "ghost"},
        t.headers)
    assert error(missing_folder, "NOT_FOUND")["message"] == "Folder does not exist."
    bad_invites = [
        ({"email": "a@example.com", "organizationId": "o1", "type": "doc_user"}, ["documentId"]),
        ({"email": "a@example.com", "organizationId": "o1", "type": "folder_user"}, ["folderId"]),
        ({"email": "not-an-email", "organizationId": "o1", "type": "org_user"}, ["email"]),
        ({"email": "a@" + "e" * 320, "organizationId": "o1", "type": "org_user"}, ["email"]),
        ({"email": "a@example.com", "organizationId": "o1", "type": "admin"}, ["type"]),
        ({"email": "a@example.com", "organizationId": "o1"}, ["type"]),
        ({"email": ["a@example.com"], "organizationId": "o1", "type": "org_user"}, ["email"]),
        ({"email": "a@example.com", "organizationId": "o1", "type": "org_user",
          "organizationName": "x" * 501}, ["organizationName"]),
        ({"email": "a@example.com", "organizationId": "o1", "type": "org_user", "invitedBy": "me"}, ["invitedBy"]),
    ]
    for body, path in bad_invites:
        assert path in issue_paths(error(post(client, INVITE, body, t.headers), "INVALID_ARGUMENT")), body
    assert result(post(client, INVITES, {"organizationId": "o1"}, t.headers)) == []

    result(post(client, INVITE, {"email": "a@example.com", "organizationId": "o1", "type": "org_user"}, t.headers))
    answer = {"email": "a@example.com", "organizationId": "o1", "type": "org_user", "status": "ACCEPTED"}
    bad_answers = [
        ({**answer}, ["user"]),  # accepting names the user who joins
        ({**answer, "status": "PENDING", "user": {"userId": "u1"}}, ["status"]),
        ({**answer, "user": {"name": "no id"}}, ["user", "userId"]),
        ({**answer, "user": {"userId": "u1", "email": "someone@else.com"}}, ["user", "email"]),
        ({**answer, "type": "doc_user", "user": {"userId": "u1"}}, ["documentId"]),
    ]
    for body, path in bad_answers:
        assert path in issue_paths(error(post(client, RESPOND, body, t.headers), "INVALID_ARGUMENT")), body
    # The invited user's token must be a token of this API key, and that user's.
    forged = post(client, RESPOND, {**answer, "user": {"userId": "u1"}, "authToken": "not.a.token"}, t.headers)
    assert error(forged, "PERMISSION_DENIED")["message"] == "authToken is not a valid user token of this API key."
    someone_else = post(client, RESPOND, {**answer, "user": {"userId": "u1"}, "authToken": token_of(client, t, "u9")},
                        t.headers)
    assert error(someone_else, "PERMISSION_DENIED")["message"] == "authToken belongs to another user."
    other = new_tenant(client)
    foreign = post(client, RESPOND, {**answer, "user": {"userId": "u1"}, "authToken": token_of(client, other, "u1")},
                   t.headers)
    assert error(foreign, "PERMISSION_DENIED")
    unknown = post(client, RESPOND, {**answer, "email": "z@example.com", "user": {"userId": "u1"}}, t.headers)
    assert error(unknown, "NOT_FOUND")["message"] == "No invitation matches this e-mail and target."
    # Another tenant answering this one's invitation reaches nothing.
    add_organization(client, other, "o1")
    assert error(post(client, RESPOND, {**answer, "user": {"userId": "u1"}}, other.headers), "NOT_FOUND")
    # Nothing above was written: the invitation still waits and u1 has no access.
    assert [i["status"] for i in result(post(client, INVITES, {"organizationId": "o1"}, t.headers))] == ["PENDING"]
    assert access(client, t, "u1")["organization"]["o1"]["errorCode"] == "permission_denied"
    for body, path in (({"organizationId": "o1",
                         "pageSize": 0}, ["pageSize"]), ({"organizationId": "o1", "pageToken": "x.y"}, ["pageToken"])):
        assert path in issue_paths(error(post(client, INVITES, body, t.headers), "INVALID_ARGUMENT"))
    assert ["email"
            ] in issue_paths(error(post(client, OF_EMAIL, {"organizationId": "o1"}, t.headers), "INVALID_ARGUMENT"))
    assert ["type"] in issue_paths(error(post(client, PENDING, {"organizationId": "o1"}, t.headers),
                                         "INVALID_ARGUMENT"))


def test_accepting_a_folder_invitation_grants_the_folder_and_what_it_holds(client):
    t = new_tenant(client)
    setup(client, t)
    invite = {"email": "cy@example.com", "organizationId": "o1", "type": "folder_user", "folderId": "f1"}
    result(post(client, INVITE, invite, t.headers))
    result(post(client, RESPOND, {**invite, "status": "ACCEPTED", "user": {"userId": "u3"}}, t.headers))
    got = access(client, t, "u3", folderIds=["f1"], documentIds=["d1"])
    assert got["folders"]["f1"] == {
        "accessRole": "editor", "accessType": "organizationPrivate"
    } and got["documents"]["d1"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    assert got["organization"]["o1"]["errorCode"] == "permission_denied"
    # An invitation to a folder that does not exist is refused by the database's own check: nothing is stored.
    missing = post(client, INVITE, {**invite, "folderId": "nope"}, t.headers)
    assert error(missing, "NOT_FOUND")["message"] == "Folder does not exist."
    unknown = post(client, INVITE, {**invite, "organizationId": "o9"}, t.headers)
    assert error(unknown, "NOT_FOUND")
    assert error(
        post(client, RESPOND, {**invite, "email": "zz@example.com", "status": "ACCEPTED", "user": {"userId": "u3"}},
             t.headers), "NOT_FOUND")["message"] == "No invitation matches this e-mail and target."
