"""Explaining access (the console's Data explorer): every grant that reaches a document, and the role that wins,
agreeing with auth/permissions/get."""

import pytest

from collab.kit.auth import Tenant as KitTenant
from collab.kit.errors import ApiError
from collab.permissions import explain
from support.helpers import add_organization, new_tenant, post, result

ADD = "/v2/auth/permissions/add"


def grant(client, t, user, resource, **extra):
    principal = {"user": {"userId": user}} if user else {"group": extra.pop("group")}
    result(post(client, ADD, {**principal, "permissions": {"resources": [{**resource, **extra}]}}, t.headers))


def explained(live, t, org, doc):
    tenant = KitTenant(api_key_id=t.api_key, workspace_id=t.workspace["id"])
    return live.run(explain.explain_document(live.svc, tenant=tenant, organization_id=org, document_id=doc))


def test_explain_names_direct_folder_organization_and_group_grants(live, client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", folder="f1")
    result(
        post(client, "/v2/organizations/usergroups/add",
             {"organizationId": "o1", "organizationUserGroups": [{"groupId": "eng"}]}, t.headers))
    result(
        post(client, "/v2/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "eng", "userIds": ["gina"]}, t.headers))
    grant(client, t, "dana", {"type": "document", "id": "d1", "organizationId": "o1", "accessRole": "editor"})
    grant(client, t, "fred", {"type": "folder", "id": "f1", "organizationId": "o1", "accessRole": "viewer"})
    grant(client, t, "olga", {"type": "organization", "id": "o1", "accessRole": "viewer"})
    grant(client, t, "olga", {"type": "document", "id": "d1", "organizationId": "o1", "accessRole": "editor"})
    grant(client, t, None, {"type": "organization", "id": "o1", "accessRole": "viewer"},
          group={"organizationId": "o1", "organizationUserGroupId": "eng"})

    got = explained(live, t, "o1", "d1")
    assert got["folderPath"] == ["f1"] and got["disabled"] is False
    users = {u["userId"]: u for u in got["users"]}
    assert set(users) == {"dana", "fred", "gina", "olga"}
    assert users["dana"]["accessRole"] == "editor" and [r["kind"] for r in users["dana"]["reasons"]] == ["direct"]
    assert users["fred"]["accessRole"] == "viewer" and users["fred"]["reasons"][0]["kind"] == "folder"
    assert users["fred"]["reasons"][0]["resourceId"] == "f1"
    gina = users["gina"]["reasons"]
    assert users["gina"]["accessRole"] == "viewer" and gina[0]["kind"] == "group" and gina[0]["groupId"] == "eng"
    # Two grants reach olga: the document's editor role decides over the organization's viewer role.
    olga = {r["kind"]: r for r in users["olga"]["reasons"]}
    assert users["olga"]["accessRole"] == "editor"
    assert olga["direct"]["decides"] is True and olga["organization"]["decides"] is False

    # The same answer as the API's effective access for every user listed.
    effective = result(
        post(client, "/v2/auth/permissions/get",
             {"organizationId": "o1", "userIds": sorted(users), "documentIds": ["d1"]}, t.headers))
    for user, entry in users.items():
        assert effective[user]["documents"]["d1"]["accessRole"] == entry["accessRole"]


def test_explain_a_disabled_organization_denies_everyone(live, client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    grant(client, t, "dana", {"type": "document", "id": "d1", "organizationId": "o1"})
    result(
        post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["o1"], "disabled": True},
             t.headers))
    got = explained(live, t, "o1", "d1")
    assert got["disabled"] is True
    assert got["users"][0]["errorCode"] == "permission_denied" and "accessRole" not in got["users"][0]


def test_explain_another_tenants_document_is_not_found(live, client):
    mine, theirs = new_tenant(client), new_tenant(client)
    add_organization(client, theirs, "o1", "d1")
    with pytest.raises(ApiError) as caught:
        explained(live, mine, "o1", "d1")
    assert caught.value.code == "NOT_FOUND"


def test_explain_follows_the_access_type_and_names_the_provider(live, client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1", folder="f1")
    grant(client, t, "olga", {"type": "organization", "id": "o1", "accessRole": "editor"})
    grant(client, t, "fred", {"type": "folder", "id": "f1", "organizationId": "o1", "accessRole": "viewer"})
    result(
        post(client, "/v2/organizations/folders/access/update",
             {"organizationId": "o1", "folderIds": ["f1"], "accessType": "restricted"}, t.headers))
    got = explained(live, t, "o1", "d1")
    assert got["accessType"] == "restricted" and got["permissionProvider"] is False
    users = {u["userId"]: u for u in got["users"]}
    # The organization role is listed, decides nothing, and leaves olga without access; fred's folder grant decides.
    assert users["olga"]["errorCode"] == "permission_denied" and users["olga"]["reasons"][0]["decides"] is False
    assert users["fred"]["accessRole"] == "viewer" and users["fred"]["reasons"][0]["decides"] is True
    effective = result(
        post(client, "/v2/auth/permissions/get",
             {"organizationId": "o1", "userIds": ["fred", "olga"], "documentIds": ["d1"]}, t.headers))
    assert effective["olga"]["documents"]["d1"]["errorCode"] == "permission_denied"
    assert effective["fred"]["documents"]["d1"]["accessRole"] == "viewer"
    # The document's own type wins over its folder's.
    result(
        post(client, "/v2/organizations/documents/access/update",
             {"organizationId": "o1", "documentIds": ["d1"], "accessType": "public"}, t.headers))
    assert {u["userId"]: u["accessRole"]
            for u in explained(live, t, "o1", "d1")["users"]} == {"fred": "viewer", "olga": "editor"}
    result(
        post(client, "/v2/workspace/permissionproviderconfig/update", {
            "usePermissionProvider": True,
            "permissionProviderConfig": {"permissionProviderUrl": "http://127.0.0.1:9/p"}
        }, t.headers))
    assert explained(live, t, "o1", "d1")["permissionProvider"] is True
