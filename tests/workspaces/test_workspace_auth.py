"""Workspace auth, get, token reset, API keys and auth tokens; API-key auth rules."""

import pytest

from support.helpers import error, new_tenant, post, result


def test_get_returns_the_created_workspace(client):
    tenant = new_tenant(client)
    ws = result(post(client, "/v2/workspace/get", {}, tenant.workspace_headers))
    assert ws == tenant.workspace


def test_get_accepts_workspace_token_in_auth_token_header(client):
    tenant = new_tenant(client)
    headers = {"x-service-workspace-id": tenant.workspace["id"], "x-service-auth-token": tenant.workspace["authToken"]}
    assert result(post(client, "/v2/workspace/get", {}, headers))["id"] == tenant.workspace["id"]
    # An empty workspace-token header is ignored in favour of the other one.
    headers["x-service-workspace-auth-token"] = ""
    assert result(post(client, "/v2/workspace/get", {}, headers))["id"] == tenant.workspace["id"]


def test_workspace_auth_errors(client):
    tenant = new_tenant(client)
    ws_id, token = tenant.workspace["id"], tenant.workspace["authToken"]
    error(post(client, "/v2/workspace/get", {}, {"x-service-workspace-auth-token": token}), "INVALID_ARGUMENT")
    error(post(client, "/v2/workspace/get", {}, {"x-service-workspace-id": ws_id}), "INVALID_ARGUMENT")
    error(
        post(client, "/v2/workspace/get", {}, {"x-service-workspace-id": ws_id, "x-service-workspace-auth-token": ""}),
        "INVALID_ARGUMENT")
    bad = {"x-service-workspace-id": ws_id, "x-service-workspace-auth-token": token + "x"}
    error(post(client, "/v2/workspace/get", {}, bad), "UNAUTHENTICATED")
    missing = {"x-service-workspace-id": "ws_doesnotexist", "x-service-workspace-auth-token": token}
    error(post(client, "/v2/workspace/get", {}, missing), "NOT_FOUND")


def test_another_workspaces_token_is_refused(client):
    a, b = new_tenant(client), new_tenant(client)
    headers = {"x-service-workspace-id": a.workspace["id"], "x-service-workspace-auth-token": b.workspace["authToken"]}
    error(post(client, "/v2/workspace/get", {}, headers), "UNAUTHENTICATED")


def test_get_rate_limit_per_workspace(client, clock):
    a, b = new_tenant(client), new_tenant(client)
    for _ in range(60):
        result(post(client, "/v2/workspace/get", {}, a.workspace_headers))
    err = error(post(client, "/v2/workspace/get", {}, a.workspace_headers), "RESOURCE_EXHAUSTED")
    assert err["details"]["retryAfterSeconds"] <= 60
    result(post(client, "/v2/workspace/get", {}, b.workspace_headers))
    clock["now"] += 60
    result(post(client, "/v2/workspace/get", {}, a.workspace_headers))


def test_api_key_auth_errors(client):
    tenant = new_tenant(client)
    path = "/v2/workspace/activityconfig/get"
    error(post(client, path, {}, {}), "UNAUTHENTICATED")
    error(post(client, path, {}, {"x-service-api-key": tenant.api_key}), "UNAUTHENTICATED")
    error(post(client, path, {}, {"x-service-api-key": tenant.api_key, "x-service-auth-token": ""}), "UNAUTHENTICATED")
    err = error(post(client, path, {}, {"x-service-api-key": tenant.api_key, "x-service-auth-token": "nope"}),
                "PERMISSION_DENIED")
    assert err["message"] == "Invalid API key."
    err = error(post(client, path, {}, {"x-service-api-key": "key_unknown", "x-service-auth-token": tenant.auth_token}),
                "PERMISSION_DENIED")
    assert err["message"] == "Invalid API key."
    result(post(client, path, {}, tenant.headers))


def test_one_keys_token_does_not_open_another_key(client):
    a, b = new_tenant(client), new_tenant(client)
    headers = {"x-service-api-key": a.api_key, "x-service-auth-token": b.auth_token}
    error(post(client, "/v2/workspace/activityconfig/get", {}, headers), "PERMISSION_DENIED")


def test_reset_auth_token_replaces_the_old_one_at_once(client):
    tenant = new_tenant(client)
    data = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": tenant.api_key}, tenant.workspace_headers))
    assert data["apiKey"] == tenant.api_key
    new = data["newAuthToken"]
    assert new["name"] == "Default Auth Token" and new["domains"] == [] and new["token"] != tenant.auth_token
    error(post(client, "/v2/workspace/activityconfig/get", {}, tenant.headers), "PERMISSION_DENIED")
    fresh = {"x-service-api-key": tenant.api_key, "x-service-auth-token": new["token"]}
    result(post(client, "/v2/workspace/activityconfig/get", {}, fresh))
    listed = result(post(client, "/v2/workspace/authtokens/get", {"apiKey": tenant.api_key}, tenant.workspace_headers))
    assert listed == {"apiKey": tenant.api_key, "authTokens": [new]}


def test_reset_unknown_or_foreign_key_is_not_found(client):
    a, b = new_tenant(client), new_tenant(client)
    error(post(client, "/v2/workspace/authtoken/reset", {"apiKey": "key_nope"}, a.workspace_headers), "NOT_FOUND")
    error(post(client, "/v2/workspace/authtoken/reset", {"apiKey": b.api_key}, a.workspace_headers), "NOT_FOUND")
    error(post(client, "/v2/workspace/authtokens/get", {"apiKey": b.api_key}, a.workspace_headers), "NOT_FOUND")
    # b's token still works: a's attempt changed nothing.
    result(post(client, "/v2/workspace/activityconfig/get", {}, b.headers))


@pytest.mark.parametrize("data", [{}, {"apiKey": ""}, {"apiKey": 7}])
def test_reset_validation(client, data):
    tenant = new_tenant(client)
    err = error(post(client, "/v2/workspace/authtoken/reset", data, tenant.workspace_headers), "INVALID_ARGUMENT")
    assert err["details"]["issues"][0]["path"] == ["apiKey"]


def test_create_and_list_api_keys(client):
    tenant = new_tenant(client)
    created = result(
        post(client, "/v2/workspace/apikey/create", {"ownerEmail": "carol@example.com", "type": "production"},
             tenant.workspace_headers))
    prod = created["apiKey"]
    keys = result(post(client, "/v2/workspace/apikeys/get", {}, tenant.workspace_headers))
    assert {"id": prod, "apiKeyName": "Carol Production API Key", "type": "production"} in keys
    assert len(keys) == 2
    ws = result(post(client, "/v2/workspace/get", {}, tenant.workspace_headers))
    assert ws["apiKeyList"][prod] == {"apiKeyName": "Carol Production API Key", "id": prod, "type": "production"}
    # The new key is a working tenant straight away.
    tokens = result(post(client, "/v2/workspace/authtokens/get", {"apiKey": prod}, tenant.workspace_headers))
    headers = {"x-service-api-key": prod, "x-service-auth-token": tokens["authTokens"][0]["token"]}
    result(post(client, "/v2/workspace/activityconfig/get", {}, headers))


def test_create_api_key_without_token_then_reset_gives_one(client):
    tenant = new_tenant(client)
    data = {"ownerEmail": "dan@example.com", "type": "testing", "apiKeyName": "CI key", "createAuthToken": False}
    key = result(post(client, "/v2/workspace/apikey/create", data, tenant.workspace_headers))["apiKey"]
    tokens = result(post(client, "/v2/workspace/authtokens/get", {"apiKey": key}, tenant.workspace_headers))
    assert tokens["authTokens"] == []
    reset = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": key}, tenant.workspace_headers))
    headers = {"x-service-api-key": key, "x-service-auth-token": reset["newAuthToken"]["token"]}
    result(post(client, "/v2/workspace/activityconfig/get", {}, headers))


def test_create_api_key_validation(client):
    tenant = new_tenant(client)
    err = error(
        post(client, "/v2/workspace/apikey/create", {"ownerEmail": "x", "type": "gold"}, tenant.workspace_headers),
        "INVALID_ARGUMENT")
    assert sorted(p[0] for p in (i["path"] for i in err["details"]["issues"])) == ["ownerEmail", "type"]
    assert {i["code"] for i in err["details"]["issues"]} >= {"invalid_enum_value"}


def test_workspace_endpoints_answer_under_v1_too(client):
    tenant = new_tenant(client)
    assert result(post(client, "/v1/workspace/get", {}, tenant.workspace_headers))["id"] == tenant.workspace["id"]


def test_secret_rotation_keeps_old_tokens_and_keys_working(client, live):
    from collab.kit.crypto import Keyring

    tenant = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-before-rotation-1234"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, tenant.headers))
    original = live.svc.keyring
    live.svc.keyring = Keyring("a-brand-new-secret-key-0987", previous=live.settings.secret_key)
    try:
        # Tokens and ciphertexts made under the previous secret still verify and open.
        result(post(client, "/v2/workspace/activityconfig/get", {}, tenant.headers))
        assert (result(post(client, "/v2/workspace/get", {},
                            tenant.workspace_headers))["authToken"] == tenant.workspace["authToken"])
        from collab.kit.auth import Tenant
        from collab.workspaces.model_servers import stored

        owner = Tenant(api_key_id=tenant.api_key, workspace_id=tenant.workspace["id"])
        assert live.run(stored(live.svc, tenant=owner, provider="openai")).key == "sk-before-rotation-1234"
        # A token reset now is made under the new secret, and works.
        new = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": tenant.api_key},
                          tenant.workspace_headers))
        headers = {"x-service-api-key": tenant.api_key, "x-service-auth-token": new["newAuthToken"]["token"]}
        result(post(client, "/v2/workspace/activityconfig/get", {}, headers))
    finally:
        live.svc.keyring = original
    # Without the new secret the rotated token is refused: it really was made under the new key.
    error(post(client, "/v2/workspace/activityconfig/get", {}, headers), "PERMISSION_DENIED")
