"""Permissions: grants for users and groups, effective access (inheritance, expiry, disabled state), tokens."""

import jwt
import pytest

from collab.kit.crypto import Keyring
from collab.permissions import tokens
from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

ADD, GET, REMOVE = "/v2/auth/permissions/add", "/v2/auth/permissions/get", "/v2/auth/permissions/remove"


def claims_of(client, t, token):
    """A token's claims, verified as a relying party would: with the API key's published public key."""
    keys = jwt.PyJWKSet.from_dict(result(post(client, "/v2/auth/tokenkeys/get", {}, t.headers)))
    key = keys[jwt.get_unverified_header(token)["kid"]].key
    return jwt.decode(token, key, algorithms=["EdDSA"], audience=t.api_key, issuer="collab",
                      options={"verify_exp": False, "verify_iat": False})


def grant(client, t, user, *resources, group=None):
    who = {"group": group} if group else {"user": {"userId": user}}
    return result(post(client, ADD, {**who, "permissions": {"resources": list(resources)}}, t.headers))


def doc(id, org="o1", **kw):
    return {"type": "document", "id": id, "organizationId": org, **kw}


def folder(id, org="o1", **kw):
    return {"type": "folder", "id": id, "organizationId": org, **kw}


def org(id="o1", **kw):
    return {"type": "organization", "id": id, **kw}


def access(client, t, *users, org_id="o1", **ids):
    """The users' entries, without the effective access type (tests/documents/test_velt_access_reads.py reads it)."""
    answer = result(post(client, GET, {"organizationId": org_id, "userIds": list(users), **ids}, t.headers))
    for entry in (e for a in answer.values() for section in ("folders", "documents") for e in a[section].values()):
        entry.pop("accessType", None)
    return answer


def test_grant_several_resources_default_editor(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", "d2")
    response = post(
        client, ADD,
        {"user": {"userId": "u1"}, "permissions": {"resources": [doc("d1"), doc("d2", accessRole="viewer")]}},
        t.headers)
    assert response.json() == {"result": {"status": "success", "message": "Permissions added successfully."}}
    got = access(client, t, "u1", documentIds=["d1", "d2"])["u1"]
    # No accessRole given: editor. No organization grant: the organization itself is denied.
    assert got["documents"] == {"d1": {"accessRole": "editor"}, "d2": {"accessRole": "viewer"}}
    assert got["organization"]["o1"]["errorCode"] == "permission_denied"
    # An organization role flows down; the higher role wins over the document's own viewer grant.
    grant(client, t, "u1", org())
    got = access(client, t, "u1", documentIds=["d2"])["u1"]
    assert got["organization"] == {"o1": {"accessRole": "editor"}}
    assert got["documents"] == {"d2": {"accessRole": "editor"}}
    # Naming the same resource twice in one call: the last entry wins.
    grant(client, t, "u2", doc("d1", accessRole="editor"), doc("d1", accessRole="viewer"))
    assert access(client, t, "u2", documentIds=["d1"])["u2"]["documents"]["d1"] == {"accessRole": "viewer"}


def test_grant_validation(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    cases = [
        ({"permissions": {"resources": [doc("d1")]}}, [[]]),
        ({"user": {"userId": "u1"}}, [["permissions"]]),
        ({"user": {"userId": "u1"}, "permissions": {"resources": []}}, [["permissions", "resources"]]),
        ({"user": {"userId": "u1"},
          "permissions": {"resources": [{"type": "document",
                                         "id": "d1"}]}}, [["permissions", "resources", "0", "organizationId"]]),
        ({"user": {"userId": "u1"},
          "permissions": {"resources": [doc("d1",
                                            accessRole="owner")]}}, [["permissions", "resources", "0", "accessRole"]]),
        ({"user": {"userId": "u1"},
          "permissions": {"resources": [{"type": "space", "id": "x"}]}}, [["permissions", "resources", "0", "type"]]),
        # Milliseconds where seconds are expected.
        ({"user": {"userId": "u1"}, "permissions": {"resources": [doc("d1", expiresAt=1_800_000_000_000)]}},
         [["permissions", "resources", "0", "expiresAt"]]),
        ({"user": {"userId": "u1"},
          "permissions": {"resources": [doc("d1", expiresAt="soon")]}}, [["permissions", "resources", "0",
                                                                          "expiresAt"]])
    ]
    for data, paths in cases:
        err = error(post(client, ADD, data, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err)[:1] == paths, (data, err)


def test_grants_on_missing_resources_are_refused_whole(client, db):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    err = error(
        post(
            client, ADD, {
                "user": {"userId": "u1"}, "permissions": {
                    "resources": [doc("d1"), doc("nope"), folder("nofolder"),
                                  org("ghost")]
                }
            }, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["permissions", "resources", str(i), "id"] for i in (1, 2, 3)]
    assert [i["message"] for i in err["details"]["issues"]
            ] == ["Document does not exist.", "Folder does not exist.", "Organization does not exist."]
    # All or nothing: the valid entry was not granted either.
    assert db.execute("select count(*) as n from grants where api_key_id = %s", (t.api_key, )).fetchone()["n"] == 0


def test_folder_inheritance_nested(client):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    result(
        post(
            client, "/v2/organizations/folders/add", {
                "organizationId": "o1", "folders": [{"folderId": "top"}, {"folderId": "mid", "parentFolderId": "top"},
                                                    {"folderId": "side"}]
            }, t.headers))
    result(
        post(client, "/v2/organizations/documents/add",
             {"organizationId": "o1", "folderId": "mid", "documents": [{"documentId": "inner"}]}, t.headers))
    result(
        post(client, "/v2/organizations/documents/add",
             {"organizationId": "o1", "documents": [{"documentId": "loose"}]}, t.headers))
    grant(client, t, "u1", folder("top", accessRole="viewer"))
    got = access(client, t, "u1", folderIds=["top", "mid", "side"], documentIds=["inner", "loose", "ghost"])["u1"]
    assert got["organization"]["o1"]["errorCode"] == "permission_denied"
    assert got["folders"] == {
        "top": {"accessRole": "viewer"}, "mid": {"accessRole": "viewer"},
        "side": {"error": "User does not have access to this folder.", "errorCode": "permission_denied"}
    }
    assert got["documents"] == {
        "inner": {"accessRole": "viewer"},
        "loose": {"error": "User does not have access to this document.", "errorCode": "permission_denied"},
        "ghost": {"error": "Document does not exist.", "errorCode": "does_not_exist"}
    }
    # A direct editor grant on the inner document beats the inherited viewer role.
    grant(client, t, "u1", doc("inner"))
    assert access(client, t, "u1", documentIds=["inner"])["u1"]["documents"]["inner"] == {"accessRole": "editor"}


def test_group_grants_reach_every_member(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    result(
        post(client, "/v2/organizations/usergroups/add",
             {"organizationId": "o1", "organizationUserGroups": [{"groupId": "eng", "groupName": "Engineering"}]},
             t.headers))
    added = result(
        post(client, "/v1/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "eng", "userIds": ["u1", "u2"]}, t.headers))
    assert added["u1"] == {"success": True, "organizationUserGroupId": "eng", "message": "User added to group."}
    grant(client, t, None, doc("d1"), group={"organizationId": "o1", "organizationUserGroupId": "eng"})
    grant(client, t, "u2", doc("d1", accessRole="viewer"))
    got = access(client, t, "u1", "u2", "u3", documentIds=["d1"])
    assert got["u1"]["documents"]["d1"] == {"accessRole": "editor"}
    assert got["u2"]["documents"]["d1"] == {"accessRole": "editor"}  # the group's higher role wins
    assert got["u3"]["documents"]["d1"]["errorCode"] == "permission_denied"
    # Leaving the group takes the group's access away.
    result(
        post(client, "/v2/organizations/usergroups/users/delete",
             {"organizationId": "o1", "organizationUserGroupId": "eng", "userIds": ["u2"]}, t.headers))
    assert access(client, t, "u2", documentIds=["d1"])["u2"]["documents"]["d1"] == {"accessRole": "viewer"}
    # A group grant must name an existing group, and stay inside its organization.
    bad = post(client, ADD, {
        "group": {"organizationId": "o1", "organizationUserGroupId": "nope"}, "permissions": {"resources": [doc("d1")]}
    }, t.headers)
    assert issue_paths(error(bad, "INVALID_ARGUMENT")) == [["group", "organizationUserGroupId"]]
    add_organization(client, t, "o2", "x")
    bad = post(
        client, ADD, {
            "group": {"organizationId": "o1", "organizationUserGroupId": "eng"},
            "permissions": {"resources": [doc("x", org="o2")]}
        }, t.headers)
    assert issue_paths(error(bad, "INVALID_ARGUMENT")) == [["permissions", "resources", "0", "organizationId"]]


def test_expiry_at_t_minus_1_and_t_plus_1(client, clock):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    expires = int(clock["now"]) + 3600
    grant(client, t, "u1", doc("d1", expiresAt=expires))
    clock["now"] = expires - 1
    assert access(client, t, "u1",
                  documentIds=["d1"])["u1"]["documents"]["d1"] == {"accessRole": "editor", "expiresAt": expires}
    clock["now"] = expires + 1
    assert access(client, t, "u1", documentIds=["d1"])["u1"]["documents"]["d1"]["errorCode"] == "permission_denied"
    # Without ids, an expired grant is not listed at all.
    assert access(client, t, "u1")["u1"]["documents"] == {}


def test_disabled_organization_denies_everything_until_enabled(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", folder="f1")
    grant(client, t, "u1", org(), doc("d1"))
    state = "/v2/organizations/access/disablestate/update"
    result(post(client, state, {"organizationIds": ["o1"], "disabled": True}, t.headers))
    denied = {"error": "Organization access is disabled.", "errorCode": "permission_denied"}
    got = access(client, t, "u1", folderIds=["f1"], documentIds=["d1"])["u1"]
    assert got == {"organization": {"o1": denied}, "folders": {"f1": denied}, "documents": {"d1": denied}}
    result(post(client, state, {"organizationIds": ["o1"], "disabled": False}, t.headers))
    got = access(client, t, "u1", folderIds=["f1"], documentIds=["d1"])["u1"]
    assert got["documents"]["d1"] == {"accessRole": "editor"} and got["folders"]["f1"] == {"accessRole": "editor"}


def test_unknown_organization_and_other_tenant(client):
    a, b = new_tenant(client), new_tenant(client)
    add_organization(client, a, "o1", "d1")
    grant(client, a, "u1", doc("d1"))
    got = access(client, b, "u1", documentIds=["d1"])["u1"]
    assert got == {
        "organization": {"o1": {"error": "Organization does not exist.", "errorCode": "does_not_exist"}}, "folders": {},
        "documents": {"d1": {"error": "Document does not exist.", "errorCode": "does_not_exist"}}
    }
    # B cannot grant on A's resources, nor remove A's grants.
    err = error(post(client, ADD, {"user": {"userId": "u1"}, "permissions": {"resources": [doc("d1")]}}, b.headers),
                "INVALID_ARGUMENT")
    assert err["details"]["issues"][0]["message"] == "Document does not exist."
    removed = result(post(client, REMOVE, {"userId": "u1", "permissions": {"resources": [doc("d1")]}}, b.headers))
    assert removed == {"removed": 0}
    assert access(client, a, "u1", documentIds=["d1"])["u1"]["documents"]["d1"] == {"accessRole": "editor"}


def test_remove(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", "d2")
    grant(client, t, "u1", doc("d1"), doc("d2"))
    assert result(post(client, REMOVE, {"userId": "u1", "permissions": {"resources": [doc("d1")]}},
                       t.headers)) == {"removed": 1}
    assert list(access(client, t, "u1")["u1"]["documents"]) == ["d2"]


def test_generate_token(client, clock, live):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", "d2")
    expires = int(clock["now"]) + 60
    body = {
        "userId": "u1", "userProperties": {"name": "Ana", "email": "ana@example.com", "isAdmin": True},
        "permissions": {"resources": [doc("d1", accessRole="viewer", expiresAt=expires),
                                      doc("d2")]}
    }
    token = result(post(client, "/v2/auth/generate_token", body, t.headers))["token"]
    now = int(clock["now"])
    claims = claims_of(client, t, token)
    assert claims["exp"] - claims["iat"] == 48 * 3600 and claims["iat"] == now
    assert claims["user"] == {"userId": "u1", "isAdmin": True, "name": "Ana", "email": "ana@example.com"}
    assert claims["permissions"]["resources"] == [{
        "type": "document", "id": "d1", "organizationId": "o1", "accessRole": "viewer", "expiresAt": expires
    }, {"type": "document", "id": "d2", "organizationId": "o1", "accessRole": "editor"}]
    # The grants were stored: permissions/get sees them.
    assert access(client, t, "u1", documentIds=["d2"])["u1"]["documents"]["d2"] == {"accessRole": "editor"}

    # Decoding: the d1 grant stops applying at its expiry; the token itself after 48 hours.
    def decode(now_s, keyring=live.svc.keyring):
        return tokens.verify(keyring, token, api_key_id=t.api_key, version=1, now_s=now_s)

    assert len(decode(expires - 1)["permissions"]["resources"]) == 2
    assert [r["id"] for r in decode(expires + 1)["permissions"]["resources"]] == ["d2"]
    with pytest.raises(jwt.ExpiredSignatureError):
        decode(now + 48 * 3600)
    with pytest.raises(jwt.InvalidSignatureError):
        decode(now, Keyring("another-secret-of-at-least-32-bytes"))


def test_token_decoding_refuses_other_algorithms_and_missing_exp(live):
    keys = live.svc.keyring.token_keys("key_x", 1)
    claims, kid = {"sub": "u1", "iss": "collab", "aud": "key_x", "iat": 1, "exp": 10**10}, {"kid": keys[0].kid}
    unsigned = jwt.encode(claims, key=None, algorithm="none", headers=kid)
    with pytest.raises(jwt.InvalidAlgorithmError):
        tokens.decode(keys, unsigned, audience="key_x", now_s=2)
    no_exp = jwt.encode({k: v
                         for k, v in claims.items() if k != "exp"}, keys[0].private, algorithm="EdDSA", headers=kid)
    with pytest.raises(jwt.MissingRequiredClaimError):
        tokens.decode(keys, no_exp, audience="key_x", now_s=2)
    hs512 = jwt.encode(claims, "a-shared-secret-of-at-least-64-bytes" * 2, algorithm="HS512", headers=kid)
    with pytest.raises(jwt.InvalidAlgorithmError):
        tokens.decode(keys, hs512, audience="key_x", now_s=2)


def test_token_leaves_out_a_disabled_organizations_resources(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    add_organization(client, t, "o2", "d2")
    result(
        post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["o1"], "disabled": True},
             t.headers))
    body = {"userId": "u1", "permissions": {"resources": [doc("d1"), doc("d2", org="o2")]}}
    token = result(post(client, "/v2/auth/generate_token", body, t.headers))["token"]
    assert [r["id"] for r in claims_of(client, t, token)["permissions"]["resources"]] == ["d2"]
    err = error(
        post(client, "/v2/auth/generate_token", {"userId": "u1", "permissions": {"resources": [doc("zz")]}}, t.headers),
        "INVALID_ARGUMENT")
    assert issue_paths(err) == [["permissions", "resources", "0", "id"]]
