"""Velt's workspace operations collab lacked: `apikey/update`, `apikey/copy`, `authtoken/ensure`, driven by velt-py's
own service classes and request models (ADR 0049)."""

from velt_py.models.workspace import (
    CopyApiKeyRequest,
    EnsureWorkspaceAuthTokenRequest,
    GetApiKeysRequest,
    UpdateApiKeyRequest,
)

from support.helpers import error, new_tenant, post, result

UPDATE, COPY, ENSURE = "/v2/workspace/apikey/update", "/v2/workspace/apikey/copy", "/v2/workspace/authtoken/ensure"


def _workspace_api(sdk, t):
    return sdk(t, workspaceId=t.workspace["id"], workspaceAuthToken=t.workspace["authToken"]).api.workspace


def _second_key(client, t) -> tuple[str, dict]:
    """A second API key of the tenant's workspace and its Velt headers."""
    key = result(
        post(client, "/v2/workspace/apikey/create", {"ownerEmail": "o@example.com", "type": "testing"},
             t.workspace_headers))["apiKey"]
    token = result(post(client, "/v2/workspace/authtokens/get", {"apiKey": key}, t.workspace_headers))
    return key, {"x-velt-api-key": key, "x-velt-auth-token": token["authTokens"][0]["token"]}


def test_velt_py_renames_an_api_key(client, sdk):
    t = new_tenant(client)
    api = _workspace_api(sdk, t)
    answer = api.updateApiKey(UpdateApiKeyRequest(apiKey=t.api_key, apiKeyName="  Renamed key "))["result"]
    assert answer["status"] == "success" and answer["message"] == "API key updated successfully."
    listed = api.getApiKeys(GetApiKeysRequest())["result"]["data"]
    assert [k["apiKeyName"] for k in listed if k["id"] == t.api_key] == ["Renamed key"]
    assert result(post(client, "/v1/workspace/get", {}, t.workspace_headers))["apiKeyList"][t.api_key]["apiKeyName"] \
        == "Renamed key"


def test_rename_refuses_bad_input_and_other_workspaces_keys(client):
    t, other = new_tenant(client), new_tenant(client)
    for body in ({"apiKey": t.api_key}, {"apiKeyName": "x"}, {"apiKey": t.api_key, "apiKeyName": "   "},
                 {"apiKey": t.api_key,
                  "apiKeyName": 5}, {"apiKey": t.api_key,
                                     "apiKeyName": "x" * 201}, {"apiKey": "k" * 201, "apiKeyName": "x"}):
        assert error(post(client, UPDATE, body, t.workspace_headers), "INVALID_ARGUMENT"), body
    assert error(post(client, UPDATE, {"apiKey": other.api_key, "apiKeyName": "mine"}, t.workspace_headers),
                 "NOT_FOUND")
    assert error(post(client, UPDATE, {"apiKey": t.api_key, "apiKeyName": "x"}, t.headers), "INVALID_ARGUMENT")
    name = result(post(client, "/v2/workspace/get", {}, other.workspace_headers))["apiKeyList"][other.api_key]
    assert name["apiKeyName"] != "mine"


def test_velt_py_copies_an_api_keys_settings(client, sdk, receiver):
    t = new_tenant(client)
    target, target_headers = _second_key(client, t)
    result(post(client, "/v2/workspace/domains/add", {"domains": ["app.example.com"]}, t.headers))
    result(
        post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}}, t.headers))
    result(post(client, "/v2/workspace/apikeyconfig/update", {"enableAdvancedQueries": True}, t.headers))
    result(
        post(
            client, "/v2/workspace/webhookconfig/update", {
                "useWebhookService": True,
                "webhookServiceConfig": {"authToken": "hook-secret", "rawNotificationUrl": receiver.url("/raw")}
            }, t.headers))
    answer = _workspace_api(sdk, t).copyApiKey(CopyApiKeyRequest(sourceApiKey=t.api_key, targetApiKey=target))
    assert answer["result"]["message"] == "API key configuration copied successfully."
    assert answer["result"]["data"] == {}
    assert result(post(client, "/v2/workspace/domains/get", {},
                       target_headers)) == {"allowedDomains": ["app.example.com"]}
    assert result(post(client, "/v2/workspace/activityconfig/get", {},
                       target_headers))["activityServiceConfig"]["isEnabled"] is True
    assert result(post(client, "/v2/workspace/apikeyconfig/get", {}, target_headers))["enableAdvancedQueries"] is True
    hooks = result(post(client, "/v2/workspace/webhookconfig/get", {}, target_headers))
    assert hooks["useWebhookService"] is True and hooks["webhookServiceConfig"]["authToken"] == "hook-secret"
    # The keys stay apart: a later change to the source does not follow.
    result(post(client, "/v2/workspace/domains/add", {"domains": ["only-source.example.com"]}, t.headers))
    assert result(post(client, "/v2/workspace/domains/get", {},
                       target_headers)) == {"allowedDomains": ["app.example.com"]}


def test_copy_refuses_bad_input_and_other_workspaces_keys(client):
    t, other = new_tenant(client), new_tenant(client)
    target, _ = _second_key(client, t)
    for body in ({"sourceApiKey": t.api_key}, {"sourceApiKey": t.api_key, "targetApiKey": t.api_key},
                 {"sourceApiKey": 1, "targetApiKey": target}, {"sourceApiKey": "", "targetApiKey": target}):
        assert error(post(client, COPY, body, t.workspace_headers), "INVALID_ARGUMENT"), body
    # Another workspace's key, as source or target: NOT_FOUND, and nothing of it changes.
    result(post(client, "/v2/workspace/domains/add", {"domains": ["theirs.example.com"]}, other.headers))
    assert error(post(client, COPY, {"sourceApiKey": other.api_key, "targetApiKey": target}, t.workspace_headers),
                 "NOT_FOUND")
    assert error(post(client, COPY, {"sourceApiKey": t.api_key, "targetApiKey": other.api_key}, t.workspace_headers),
                 "NOT_FOUND")
    assert result(post(client, "/v2/workspace/domains/get", {},
                       other.headers)) == {"allowedDomains": ["theirs.example.com"]}


def test_velt_py_ensures_the_workspace_auth_token(client, sdk):
    t = new_tenant(client)
    answer = _workspace_api(sdk, t).ensureWorkspaceAuthToken(EnsureWorkspaceAuthTokenRequest())["result"]
    assert answer["message"] == "Workspace auth token ensured successfully."
    assert answer["data"] == {"authToken": t.workspace["authToken"]}
    # Ensuring changes nothing: the token still authenticates, and asking again answers the same one.
    assert result(post(client, ENSURE, {}, t.workspace_headers)) == {"authToken": t.workspace["authToken"]}
    wrong = {**t.workspace_headers, "x-service-workspace-auth-token": "wrong"}
    assert error(post(client, ENSURE, {}, wrong), "UNAUTHENTICATED")
    assert error(post(client, ENSURE, {}, t.headers), "INVALID_ARGUMENT")
