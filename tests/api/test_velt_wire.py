"""Velt's wire accepted as it is: its header names, `auth/token/get`, and velt-py with only its base URL changed."""

import jwt
import pytest
from velt_py.models.access_control import GenerateTokenRequest
from velt_py.models.organization import AddOrganizationsRequest, GetOrganizationsRequest
from velt_py.models.workspace import GetAuthTokensRequest

from support.helpers import error, new_tenant, post, result, velt

ORGS = "/v2/organizations/get"


def test_velt_header_names_authenticate_as_the_spec_names(client):
    t = new_tenant(client)
    assert post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]},
                velt(t)).status_code == 200
    assert [o["organizationId"] for o in result(post(client, ORGS, {}, velt(t)))] == ["o1"]
    # The spec's names win when both are sent; Velt's wrong credentials beside the right ones change nothing.
    wrong = {"x-velt-api-key": t.api_key, "x-velt-auth-token": "not-the-token"}
    assert post(client, ORGS, {}, {**t.headers, **wrong}).status_code == 200
    assert error(post(client, ORGS, {}, {**velt(t), "x-service-auth-token": "not-the-token"}), "PERMISSION_DENIED")
    # Empty headers are ignored under either name: the same 401 as none at all.
    for headers in ({"x-velt-api-key": "", "x-velt-auth-token": ""}, {**velt(t), "x-velt-auth-token": ""}):
        assert error(post(client, ORGS, {}, headers),
                     "UNAUTHENTICATED")["message"] == ("Missing x-service-api-key or x-service-auth-token header.")
    # Another tenant's key with this tenant's token: refused like the spec's names.
    other = new_tenant(client)
    assert error(post(client, ORGS, {}, {"x-velt-api-key": other.api_key, "x-velt-auth-token": t.auth_token}),
                 "PERMISSION_DENIED")


def test_velt_workspace_headers_authenticate_workspace_calls(client):
    t = new_tenant(client)
    tokens = "/v2/workspace/authtokens/get"
    both = {"x-velt-workspace-id": t.workspace["id"], "x-velt-workspace-auth-token": t.workspace["authToken"]}
    assert result(post(client, tokens, {"apiKey": t.api_key}, both))["authTokens"][0]["token"] == t.auth_token
    # velt-py sends the workspace's token as x-velt-auth-token.
    as_velt_py = {"x-velt-workspace-id": t.workspace["id"], "x-velt-auth-token": t.workspace["authToken"]}
    assert post(client, tokens, {"apiKey": t.api_key}, as_velt_py).status_code == 200
    assert error(post(client, tokens, {"apiKey": t.api_key}, {**both, "x-velt-workspace-auth-token": "wrong"}),
                 "UNAUTHENTICATED")
    assert error(post(client, tokens, {"apiKey": t.api_key}, {"x-velt-workspace-auth-token": "x"}),
                 "INVALID_ARGUMENT")["message"] == "Missing x-service-workspace-id header."


def _claims(client, t, token: str) -> dict:
    keys = jwt.PyJWKSet.from_dict(result(post(client, "/v2/auth/tokenkeys/get", {}, t.headers)))
    key = keys[jwt.get_unverified_header(token)["kid"]].key
    return jwt.decode(token, key, algorithms=["EdDSA"], audience=t.api_key, issuer="collab")


def test_token_get_mints_what_generate_token_mints(client):
    t = new_tenant(client)
    body = {"userId": "u1", "userProperties": {"organizationId": "o1", "name": "Ana", "isAdmin": True}}
    generated = _claims(client, t, result(post(client, "/v2/auth/generate_token", body, t.headers))["token"])
    # v2 (velt-py's TokenService): the credentials in the headers, under either name.
    for headers in (velt(t), t.headers):
        minted = _claims(client, t, result(post(client, "/v2/auth/token/get", body, headers))["token"])
        assert minted["user"] == generated["user"] == {"userId": "u1", "isAdmin": True, "name": "Ana"}
        assert minted.keys() == generated.keys()
    # v1: the credentials in the body.
    v1 = post(client, "/v1/auth/token/get", {**body, "apiKey": t.api_key, "authToken": t.auth_token})
    assert v1.json()["result"]["message"] == "Token generated successfully."
    assert _claims(client, t, v1.json()["result"]["data"]["token"])["user"] == generated["user"]


def test_token_get_refuses_what_generate_token_refuses(client):
    t = new_tenant(client)
    assert error(post(client, "/v1/auth/token/get", {"userId": "u1"}), "UNAUTHENTICATED")
    assert error(post(client, "/v1/auth/token/get", {"userId": "u1", "apiKey": t.api_key, "authToken": ""}),
                 "UNAUTHENTICATED")
    assert error(post(client, "/v1/auth/token/get", {"userId": "u1", "apiKey": t.api_key, "authToken": "wrong"}),
                 "PERMISSION_DENIED")
    assert error(post(client, "/v1/auth/token/get", {"userId": "u1", "apiKey": "k" * 201, "authToken": "x"}),
                 "INVALID_ARGUMENT")
    # The body is checked like generate_token's: a missing userId, wrong types.
    assert error(post(client, "/v2/auth/token/get", {}, velt(t)), "INVALID_ARGUMENT")
    assert error(post(client, "/v2/auth/token/get", {"userId": "u1", "apiKey": 7}, velt(t)), "INVALID_ARGUMENT")
    # A pair from one place: a header's key with the body's token is half a pair (401), not a mix.
    assert error(
        post(client, "/v2/auth/token/get", {"userId": "u1", "authToken": t.auth_token}, {"x-velt-api-key": t.api_key}),
        "UNAUTHENTICATED")
    # Credentials in the headers win over the body's: another tenant's key in the body mints nothing for it.
    other = new_tenant(client)
    token = result(post(client, "/v2/auth/token/get", {"userId": "u1", "apiKey": other.api_key}, velt(t)))["token"]
    assert jwt.decode(token, options={"verify_signature": False})["aud"] == t.api_key


def test_velt_py_drives_the_service_with_only_its_base_url_changed(client, sdk):
    t = new_tenant(client)
    api = sdk(t, workspaceId=t.workspace["id"], workspaceAuthToken=t.workspace["authToken"]).api
    added = api.organizations.addOrganizations(
        AddOrganizationsRequest(organizations=[{"organizationId": "o1", "organizationName": "One"}]))
    assert added["result"]["status"] == "success"
    got = api.organizations.getOrganizations(GetOrganizationsRequest(organizationIds=["o1"]))
    assert [(o["organizationId"], o["organizationName"]) for o in got["result"]["data"]] == [("o1", "One")]
    token = api.accessControl.generateToken(GenerateTokenRequest(userId="u1", userProperties={"name": "Ana"}))
    assert _claims(client, t, token["result"]["data"]["token"])["user"]["name"] == "Ana"
    listed = api.workspace.getAuthTokens(GetAuthTokensRequest(apiKey=t.api_key))
    assert listed["result"]["data"]["authTokens"][0]["token"] == t.auth_token
    with pytest.warns(DeprecationWarning):
        old = api.token.getToken(organizationId="o1", userId="u2", name="Bo")
    assert old["success"] is True
    assert _claims(client, t, old["data"]["token"])["user"] == {"userId": "u2", "isAdmin": False, "name": "Bo"}
