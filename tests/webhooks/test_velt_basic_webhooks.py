"""Velt's basic webhook service (`workspace/webhookconfig/*`): Velt's shapes through velt-py, and events that really
reach the configured URLs with Velt's `Authorization: Basic` token, on the advanced engine (ADR 0049)."""

import base64
import json

import pytest
from velt_py.models.workspace import CreateApiKeyRequest, GetWebhookConfigRequest, UpdateWebhookConfigRequest

from support.factories import create_endpoint, enable_webhooks, settle
from support.helpers import add_organization, enable_activities, error, new_tenant, post, result, velt

pytestmark = pytest.mark.usefixtures("embedding_model", "model_client")  # comment writes derive and embed
GET, UPDATE = "/v2/workspace/webhookconfig/get", "/v2/workspace/webhookconfig/update"


def _thread(client, t, annotation_id="ann1", text="Hello"):
    body = {
        "organizationId": "o1", "documentId": "d1", "commentAnnotations": [{
            "annotationId": annotation_id, "commentData": [{"commentText": text, "from": {"userId": "u1"}}]
        }]
    }
    result(post(client, "/v2/commentannotations/add", body, t.headers))


def _tenant(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    enable_activities(client, t)
    return t


def test_velt_py_reads_the_defaults_and_writes_the_config(client, sdk, receiver):
    t = new_tenant(client)
    api = sdk(t).api.workspace
    got = api.getWebhookConfig(GetWebhookConfigRequest())["result"]
    assert got["message"] == "Webhook configuration retrieved successfully."
    assert got["data"] == {
        "useWebhookService": False,
        "webhookServiceConfig": {"authToken": "", "rawNotificationUrl": "", "processedNotificationUrl": ""}
    }
    raw = receiver.url("/raw")
    updated = api.updateWebhookConfig(
        UpdateWebhookConfigRequest(useWebhookService=True,
                                   webhookServiceConfig={"authToken": "hook-secret",
                                                         "rawNotificationUrl": raw}))["result"]["data"]
    service = updated["webhookServiceConfig"]
    assert updated["useWebhookService"] is True
    assert (service["authToken"], service["rawNotificationUrl"], service["processedNotificationUrl"]) == ("hook-secret",
                                                                                                          raw, "")
    # Velt's defaults on the first enable: standard comment and huddle triggers on, opt-in and CRDT ones off.
    triggers = service["triggers"]
    assert triggers["comment_annotation.add"] and triggers["comment.add"] and triggers["huddle.create"]
    assert not triggers["comment_annotation.suggestion_accept"] and not triggers["crdt.update_data"]
    assert service["enableDataProtection"] is False
    # A later update changes only what it sends; the read echoes the stored state.
    api.updateWebhookConfig(UpdateWebhookConfigRequest(webhookServiceConfig={"triggers": {"comment.add": False}}))
    again = result(post(client, GET, {}, velt(t)))
    assert again["webhookServiceConfig"]["triggers"]["comment.add"] is False
    assert again["webhookServiceConfig"]["triggers"]["comment_annotation.add"] is True
    assert again["webhookServiceConfig"]["authToken"] == "hook-secret"


def test_events_reach_the_configured_url_with_the_basic_token(client, live, receiver):
    t = _tenant(client)
    result(
        post(
            client, UPDATE, {
                "useWebhookService": True,
                "webhookServiceConfig": {"authToken": "hook-secret", "rawNotificationUrl": receiver.url("/raw")}
            }, t.headers))
    _thread(client, t)
    settle(live, t)
    [hit] = receiver.to("/raw")
    assert hit.headers["authorization"] == "Basic hook-secret"
    body = json.loads(hit.body)
    assert body["actionType"] == "newlyAdded" and body["notificationSource"] == "comment"
    assert body["event"] == "comment_annotation.add"
    assert body["metadata"] == {"apiKey": t.api_key, "organizationId": "o1", "documentId": "d1"}
    assert body["commentAnnotation"]["annotationId"] == "ann1"
    assert body["webhookId"].startswith("msg_")
    # The advanced service stays off: its config is still unset, and it listed no endpoint of the basic one.
    assert error(post(client, "/v2/workspace/advancedwebhookconfig/get", {}, t.headers), "FAILED_PRECONDITION")
    enable_webhooks(client, t)
    assert result(post(client, "/v2/workspace/advancedwebhook/endpoints/get", {}, t.headers))["data"] == []


def test_switching_off_clearing_and_encoding(client, live, receiver):
    t = _tenant(client)
    config = {"rawNotificationUrl": receiver.url("/raw"), "processedNotificationUrl": receiver.url("/processed")}
    result(post(client, UPDATE, {"useWebhookService": True, "webhookServiceConfig": config}, t.headers))
    result(post(client, UPDATE, {"webhookServiceConfig": {"encodeData": True}}, t.headers))
    _thread(client, t, "ann1")
    settle(live, t)
    for path in ("/raw", "/processed"):
        [hit] = receiver.to(path)
        assert "authorization" not in hit.headers  # no auth token set: none sent
        decoded = json.loads(base64.b64decode(json.loads(hit.body)["encodedPayload"]))
        assert decoded["commentAnnotation"]["annotationId"] == "ann1"
    # Off: nothing more is sent. A trigger switched off: nothing for that event.
    result(post(client, UPDATE, {"useWebhookService": False}, t.headers))
    _thread(client, t, "ann2")
    result(
        post(
            client, UPDATE, {
                "useWebhookService": True,
                "webhookServiceConfig": {"processedNotificationUrl": "", "triggers": {"comment_annotation.add": False}}
            }, t.headers))
    _thread(client, t, "ann3")
    settle(live, t)
    assert len(receiver.to("/raw")) == 1 and len(receiver.to("/processed")) == 1


def test_basic_and_advanced_webhooks_each_get_their_own_shape(client, live, receiver):
    t = _tenant(client)
    enable_webhooks(client, t)
    create_endpoint(client, t, receiver.url("/advanced"))
    result(
        post(client, UPDATE,
             {"useWebhookService": True, "webhookServiceConfig": {"rawNotificationUrl": receiver.url("/raw")}},
             t.headers))
    _thread(client, t)
    settle(live, t)
    [advanced] = [json.loads(r.body) for r in receiver.to("/advanced")]
    [basic] = [json.loads(r.body) for r in receiver.to("/raw")]
    assert advanced["type"] == "comment_annotation.add" and "webhook-signature" in receiver.to("/advanced")[0].headers
    assert "webhook-signature" not in receiver.to("/raw")[0].headers  # basic: the Basic token authenticates it
    assert basic["actionType"] == "newlyAdded" and basic["webhookId"] != advanced["id"]


def test_apikey_create_takes_the_webhook_service(client, live, sdk, receiver):
    t = new_tenant(client)
    api = sdk(t, workspaceId=t.workspace["id"], workspaceAuthToken=t.workspace["authToken"]).api.workspace
    created = api.createApiKey(
        CreateApiKeyRequest(ownerEmail="owner@example.com", type="testing", useWebhookService=True,
                            webhookServiceConfig={"authToken": "k2", "rawNotificationUrl": receiver.url("/k2")}))
    key = created["result"]["data"]["apiKey"]
    token = result(post(client, "/v2/workspace/authtokens/get", {"apiKey": key}, t.workspace_headers))
    headers = {"x-velt-api-key": key, "x-velt-auth-token": token["authTokens"][0]["token"]}
    got = result(post(client, GET, {}, headers))
    assert got["useWebhookService"] is True and got["webhookServiceConfig"]["authToken"] == "k2"
    assert got["webhookServiceConfig"]["rawNotificationUrl"] == receiver.url("/k2")


def test_bad_webhook_configs_are_refused(client, tune):
    t = new_tenant(client)
    assert error(post(client, UPDATE, {}, t.headers), "INVALID_ARGUMENT")
    for bad in ({"useWebhookService": "yes"}, {"webhookServiceConfig": {"rawNotificationUrl": "ftp://x.example"}},
                {"webhookServiceConfig": {"rawNotificationUrl": "https://x.example/" + "a" * 2000}
                 }, {"webhookServiceConfig": {"authToken": 7}}, {"webhookServiceConfig": {"publicKey": "not a key"}},
                {"webhookServiceConfig": {"triggers": {"comment.add": "on"}}
                 }, {"webhookServiceConfig": {"triggers": {"x" * 101: True}}}, {"webhookServiceConfig": []}):
        assert error(post(client, UPDATE, bad, t.headers), "INVALID_ARGUMENT"), bad
    # The advanced endpoints' SSRF rules apply where private targets are not allowed.
    tune(webhooks_allow_private_targets=False)
    refused = error(
        post(client, UPDATE, {"webhookServiceConfig": {"rawNotificationUrl": "http://127.0.0.1:9/x"}}, t.headers),
        "INVALID_ARGUMENT")
    assert refused["details"]["issues"][0]["path"] == ["webhookServiceConfig", "rawNotificationUrl"]
    assert error(post(client, GET, {}, {"x-velt-api-key": t.api_key, "x-velt-auth-token": "wrong"}),
                 "PERMISSION_DENIED")


def test_activities_added_through_the_api_reach_the_basic_service(client, live, receiver):
    t = _tenant(client)
    result(
        post(
            client, UPDATE, {
                "useWebhookService": True,
                "webhookServiceConfig": {"authToken": "hook-secret", "rawNotificationUrl": receiver.url("/raw")}
            }, t.headers))
    body = {
        "organizationId": "o1", "documentId": "d1", "activities": [{
            "id": "act1", "featureType": "comment", "actionType": "comment_annotation.add",
            "actionUser": {"userId": "u1"}, "targetEntityId": "ann9"
        }]
    }
    result(post(client, "/v2/activities/add", body, t.headers))
    settle(live, t)
    [hit] = receiver.to("/raw")
    assert hit.headers["authorization"] == "Basic hook-secret"
    assert json.loads(hit.body)["event"] == "comment_annotation.add"


def test_a_new_url_takes_the_next_event_and_a_turned_off_endpoint_waits_for_the_next_configuration(
        client, live, receiver, db):
    t = _tenant(client)
    config = {"useWebhookService": True, "webhookServiceConfig": {"authToken": "s", "rawNotificationUrl": ""}}
    config["webhookServiceConfig"]["rawNotificationUrl"] = receiver.url("/one")
    result(post(client, UPDATE, config, t.headers))
    _thread(client, t, "ann1")
    config["webhookServiceConfig"]["rawNotificationUrl"] = receiver.url("/two")
    result(post(client, UPDATE, config, t.headers))
    _thread(client, t, "ann2")
    settle(live, t)
    assert len(receiver.to("/one")) == 1 and len(receiver.to("/two")) == 1
    # The engine turned the endpoint off for failing: events no longer revive it (nor reach it)...
    db.execute("update webhook_endpoints set disabled = true where api_key_id = %s and kind = 'basic'", (t.api_key, ))
    _thread(client, t, "ann3")
    settle(live, t)
    assert len(receiver.to("/two")) == 1
    assert db.execute("select disabled from webhook_endpoints where api_key_id = %s and kind = 'basic'",
                      (t.api_key, )).fetchone()["disabled"] is True
    # ...configuring the service again does.
    result(post(client, UPDATE, config, t.headers))
    _thread(client, t, "ann4")
    settle(live, t)
    assert [json.loads(h.body)["commentAnnotation"]["annotationId"] for h in receiver.to("/two")] == ["ann2", "ann4"]
