"""Advanced webhook, activity, notification and API-key console config: merge, seeding, defaults."""

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from collab.events import COMMENT_EVENTS, HUDDLE_EVENTS
from support.helpers import error, issue_paths, new_tenant, post, result

WEBHOOK = "/v2/workspace/advancedwebhookconfig"
RSA_PUBLIC_KEY = base64.b64encode(
    rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
ACTIVITY = "/v2/workspace/activityconfig"
NOTIFY = "/v2/workspace/notificationconfig"
KEYCFG = "/v2/workspace/apikeyconfig"

# --- advanced webhooks -------------------------------------------------------------------------


def test_webhook_first_config_must_enable(client):
    t = new_tenant(client)
    error(post(client, f"{WEBHOOK}/get", {}, t.headers), "FAILED_PRECONDITION")
    error(post(client, f"{WEBHOOK}/update", {"encodeData": True}, t.headers), "FAILED_PRECONDITION")
    error(post(client, f"{WEBHOOK}/update", {"isEnabled": False}, t.headers), "FAILED_PRECONDITION")
    # Still never configured after the refusals.
    error(post(client, f"{WEBHOOK}/get", {}, t.headers), "FAILED_PRECONDITION")
    data = result(post(client, f"{WEBHOOK}/update", {"isEnabled": True}, t.headers))
    assert data == {
        "isEnabled": True, "encryptData": False, "encodeData": False, "publicKey": "", "enableDataProtection": False
    }


def test_webhook_only_sent_fields_change(client):
    t = new_tenant(client)
    key = RSA_PUBLIC_KEY
    result(post(client, f"{WEBHOOK}/update", {"isEnabled": True, "publicKey": key}, t.headers))
    data = result(post(client, f"{WEBHOOK}/update", {"encodeData": True}, t.headers))
    assert data["isEnabled"] is True and data["publicKey"] == key and data["encodeData"] is True
    data = result(post(client, f"{WEBHOOK}/update", {"isEnabled": False}, t.headers))
    assert data == {**data, "isEnabled": False, "encodeData": True, "publicKey": key}
    assert result(post(client, f"{WEBHOOK}/get", {}, t.headers)) == data


def test_webhook_validation(client):
    t = new_tenant(client)
    err = error(post(client, f"{WEBHOOK}/update", {}, t.headers), "INVALID_ARGUMENT")
    assert "At least one" in err["details"]["issues"][0]["message"]
    err = error(post(client, f"{WEBHOOK}/update", {"isEnabled": "yes", "publicKey": 3}, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["isEnabled"], ["publicKey"]]
    err = error(post(client, f"{WEBHOOK}/update", {"isEnabled": None}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["isEnabled"]]


def test_webhook_config_is_per_tenant(client):
    a, b = new_tenant(client), new_tenant(client)
    result(post(client, f"{WEBHOOK}/update", {"isEnabled": True}, a.headers))
    error(post(client, f"{WEBHOOK}/get", {}, b.headers), "FAILED_PRECONDITION")


# --- activity config ---------------------------------------------------------------------------


def test_activity_default_when_never_set(client):
    t = new_tenant(client)
    assert result(post(client, f"{ACTIVITY}/get", {}, t.headers)) == {"activityServiceConfig": {"isEnabled": False}}


def test_activity_first_enable_seeds_defaults(client, clock):
    t = new_tenant(client)
    data = result(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {"isEnabled": True}}, t.headers))
    cfg = data["activityServiceConfig"]
    assert cfg["isEnabled"] is True
    assert cfg["immutable"] is True
    assert cfg["enabledTime"] == int(clock["now"] * 1000)
    assert cfg["triggers"] == {"comment": dict.fromkeys(COMMENT_EVENTS, True)}
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_accept"] is True
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_reject"] is True
    assert result(post(client, f"{ACTIVITY}/get", {}, t.headers)) == data


def test_activity_request_values_merge_over_seeded_defaults(client):
    t = new_tenant(client)
    body = {
        "activityServiceConfig": {
            "isEnabled": True, "enabledTime": 1234, "immutable": False,
            "triggers": {"comment": {"comment_annotation.suggestion_accept": False}}
        }
    }
    cfg = result(post(client, f"{ACTIVITY}/update", body, t.headers))["activityServiceConfig"]
    assert cfg["enabledTime"] == 1234 and cfg["immutable"] is False
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_accept"] is False
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_reject"] is True
    assert cfg["triggers"]["comment"]["comment.add"] is True


def test_activity_deep_merge_preserves_omitted_fields(client, clock):
    t = new_tenant(client)
    result(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {"isEnabled": True}}, t.headers))
    enabled_at = int(clock["now"] * 1000)
    clock["now"] += 500
    body = {"activityServiceConfig": {"triggers": {"comment": {"comment_annotation.suggestion_reject": False}}}}
    cfg = result(post(client, f"{ACTIVITY}/update", body, t.headers))["activityServiceConfig"]
    assert cfg["enabledTime"] == enabled_at
    assert cfg["isEnabled"] is True and cfg["immutable"] is True
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_reject"] is False
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_accept"] is True
    # Disabling keeps everything else; re-enabling does not re-seed.
    cfg = result(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {"isEnabled": False}},
                      t.headers))["activityServiceConfig"]
    assert cfg["isEnabled"] is False and cfg["enabledTime"] == enabled_at
    cfg = result(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {"isEnabled": True}},
                      t.headers))["activityServiceConfig"]
    assert cfg["triggers"]["comment"]["comment_annotation.suggestion_reject"] is False


def test_activity_update_without_enable_does_not_seed(client):
    t = new_tenant(client)
    data = result(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {"immutable": False}}, t.headers))
    assert data == {"activityServiceConfig": {"isEnabled": False, "immutable": False}}


@pytest.mark.parametrize("body, path",
                         [({"activityServiceConfig": {}}, ["activityServiceConfig"]), ({}, ["activityServiceConfig"]),
                          ({"activityServiceConfig": {"isEnabled": 1}}, ["activityServiceConfig", "isEnabled"]),
                          ({"activityServiceConfig": {"enabledTime": "now"}}, ["activityServiceConfig", "enabledTime"]),
                          ({"activityServiceConfig": {"triggers": {"comment": {"comment.bogus": True}}}
                            }, ["activityServiceConfig", "triggers", "comment", "comment.bogus"]),
                          ({"activityServiceConfig": {"triggers": {"comment": {"comment.add": "on"}}}
                            }, ["activityServiceConfig", "triggers", "comment", "comment.add"])])
def test_activity_validation(client, body, path):
    t = new_tenant(client)
    err = error(post(client, f"{ACTIVITY}/update", body, t.headers), "INVALID_ARGUMENT")
    assert path in issue_paths(err)


def test_empty_activity_config_message(client):
    t = new_tenant(client)
    err = error(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {}}, t.headers), "INVALID_ARGUMENT")
    assert "at least one field must be provided" in err["message"].lower()


# --- notification config -----------------------------------------------------------------------


def test_notification_defaults_when_never_set(client):
    t = new_tenant(client)
    data = result(post(client, f"{NOTIFY}/get", {}, t.headers))
    assert data["useNotificationService"] is False
    cfg = data["notificationServiceConfig"]
    assert cfg["delayConfig"] == {"isEnabled": False, "delaySeconds": 10}
    for scope in ("document", "user"):
        assert cfg["batchConfig"][scope] == {"isEnabled": False, "batchWindowSeconds": 10, "maxActivities": 2}
    assert not any(cfg["triggers"]["comment"].values()) and not any(cfg["triggers"]["huddle"].values())


def test_notification_enable_seeds_triggers_only(client):
    t = new_tenant(client)
    data = result(post(client, f"{NOTIFY}/update", {"useNotificationService": True}, t.headers))
    assert data == {
        "useNotificationService": True, "notificationServiceConfig": {
            "triggers": {"comment": dict.fromkeys(COMMENT_EVENTS, True), "huddle": dict.fromkeys(HUDDLE_EVENTS, True)}
        }
    }


def test_notification_seed_keeps_stored_fields_and_merges_request(client):
    t = new_tenant(client)
    body = {"notificationServiceConfig": {"delayConfig": {"isEnabled": True, "delaySeconds": 60}}}
    result(post(client, f"{NOTIFY}/update", body, t.headers))
    body = {
        "useNotificationService": True, "notificationServiceConfig": {"triggers": {"huddle": {"huddle.join": False}}}
    }
    data = result(post(client, f"{NOTIFY}/update", body, t.headers))
    cfg = data["notificationServiceConfig"]
    assert cfg["delayConfig"] == {"isEnabled": True, "delaySeconds": 60}
    assert cfg["triggers"]["huddle"] == {"huddle.create": True, "huddle.join": False}
    assert all(cfg["triggers"]["comment"].values())
    assert "batchConfig" not in cfg


def test_notification_no_reseed_when_triggers_stored(client):
    t = new_tenant(client)
    body = {"notificationServiceConfig": {"triggers": {"comment": {"comment.add": True}}}}
    result(post(client, f"{NOTIFY}/update", body, t.headers))
    data = result(post(client, f"{NOTIFY}/update", {"useNotificationService": True}, t.headers))
    assert data["notificationServiceConfig"]["triggers"] == {"comment": {"comment.add": True}}
    # /get fills what is unset with the defaults.
    full = result(post(client, f"{NOTIFY}/get", {}, t.headers))
    assert full["notificationServiceConfig"]["triggers"]["comment"]["comment.add"] is True
    assert full["notificationServiceConfig"]["triggers"]["comment"]["comment.update"] is False
    assert full["notificationServiceConfig"]["delayConfig"]["delaySeconds"] == 10


def test_notification_batch_merge(client):
    t = new_tenant(client)
    body = {"notificationServiceConfig": {"batchConfig": {"document": {"isEnabled": True, "maxActivities": 50}}}}
    result(post(client, f"{NOTIFY}/update", body, t.headers))
    body = {"notificationServiceConfig": {"batchConfig": {"document": {"batchWindowSeconds": 604800}}}}
    data = result(post(client, f"{NOTIFY}/update", body, t.headers))
    assert data["notificationServiceConfig"]["batchConfig"]["document"] == {
        "isEnabled": True, "maxActivities": 50, "batchWindowSeconds": 604800
    }


@pytest.mark.parametrize(
    "cfg, path",
    [({"delayConfig": {"delaySeconds": 9}}, ["delayConfig", "delaySeconds"]),
     ({"delayConfig": {"delaySeconds": 15552001}}, ["delayConfig", "delaySeconds"]),
     ({"delayConfig": {"delaySeconds": 10.5}}, ["delayConfig", "delaySeconds"]),
     ({"batchConfig": {"document": {"batchWindowSeconds": 9}}}, ["batchConfig", "document", "batchWindowSeconds"]),
     ({"batchConfig": {"user": {"batchWindowSeconds": 604801}}}, ["batchConfig", "user", "batchWindowSeconds"]),
     ({"batchConfig": {"user": {"maxActivities": 1}}}, ["batchConfig", "user", "maxActivities"]),
     ({"batchConfig": {"document": {"maxActivities": 51}}}, ["batchConfig", "document", "maxActivities"]),
     ({"triggers": {"huddle": {"huddle.leave": True}}}, ["triggers", "huddle", "huddle.leave"])])
def test_notification_out_of_range(client, cfg, path):
    t = new_tenant(client)
    err = error(post(client, f"{NOTIFY}/update", {"notificationServiceConfig": cfg}, t.headers), "INVALID_ARGUMENT")
    assert ["notificationServiceConfig", *path] in issue_paths(err)
    # Nothing was written.
    assert result(
        post(client, f"{NOTIFY}/get", {},
             t.headers))["notificationServiceConfig"]["delayConfig"] == {"isEnabled": False, "delaySeconds": 10}


def test_notification_bounds_inclusive(client):
    t = new_tenant(client)
    cfg = {
        "delayConfig": {"delaySeconds": 15552000},
        "batchConfig": {"user": {"batchWindowSeconds": 10, "maxActivities": 2}}
    }
    result(post(client, f"{NOTIFY}/update", {"notificationServiceConfig": cfg}, t.headers))


def test_notification_requires_one_field(client):
    t = new_tenant(client)
    error(post(client, f"{NOTIFY}/update", {}, t.headers), "INVALID_ARGUMENT")


# --- API key console settings ------------------------------------------------------------------


def keys_part(config: dict) -> dict:
    """The settings beside the embedding model's (tests/judgments/test_models.py covers those)."""
    return {k: config[k] for k in ("enableAdvancedQueries", "aiModelApiKey")}


def test_api_key_config_stores_provider_keys_encrypted(client, db):
    t = new_tenant(client)
    assert keys_part(result(post(client, f"{KEYCFG}/get", {},
                                 t.headers))) == {"enableAdvancedQueries": False, "aiModelApiKey": []}
    secret = "sk-test-SECRET-value-9876"
    body = {"enableAdvancedQueries": True, "aiModelApiKey": [{"provider": "openai", "customerApiKey": secret}]}
    data = result(post(client, f"{KEYCFG}/update", body, t.headers))
    assert keys_part(data) == {
        "enableAdvancedQueries": True, "aiModelApiKey": [{"provider": "openai", "isSet": True, "last4": "9876"}]
    }
    assert secret not in str(data)
    rows = db.execute("select * from ai_provider_keys where api_key_id = %s", (t.api_key, )).fetchall()
    assert len(rows) == 1 and secret.encode() not in bytes(rows[0]["key_enc"])
    assert result(post(client, f"{KEYCFG}/get", {}, t.headers)) == data
    # null removes a key; other settings are untouched.
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": None}]}
    assert keys_part(result(post(client, f"{KEYCFG}/update", body,
                                 t.headers))) == {"enableAdvancedQueries": True, "aiModelApiKey": []}


def test_provider_key_ciphertext_is_bound_to_its_tenant(client, db, live):
    from collab.kit.auth import Tenant
    from collab.kit.errors import ApiError
    from collab.workspaces.model_servers import stored

    a, b = new_tenant(client), new_tenant(client)
    for tenant, key in ((a, "sk-aaaaaaaaaaaa1111"), (b, "sk-bbbbbbbbbbbb2222")):
        body = {"aiModelApiKey": [{"provider": "anthropic", "customerApiKey": key}]}
        result(post(client, f"{KEYCFG}/update", body, tenant.headers))
    ta = Tenant(api_key_id=a.api_key, workspace_id=a.workspace["id"])
    assert live.run(stored(live.svc, tenant=ta, provider="anthropic")).key == "sk-aaaaaaaaaaaa1111"
    # Copy b's ciphertext into a's row: it must not open as a's key.
    db.execute(
        "update ai_provider_keys set key_enc = (select key_enc from ai_provider_keys where api_key_id = %s)"
        " where api_key_id = %s", (b.api_key, a.api_key))
    with pytest.raises(ApiError) as caught:
        live.run(stored(live.svc, tenant=ta, provider="anthropic")).key
    assert caught.value.code == "FAILED_PRECONDITION"


@pytest.mark.parametrize("body", [{}, {"aiModelApiKey": [{"provider": "mistral", "customerApiKey": "sk-12345678"}]}, {
    "aiModelApiKey": [{"provider": "openai"}]
}, {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-1"}]}, {"enableAdvancedQueries": "true"}, {
    "aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-12345678"},
                      {"provider": "openai", "customerApiKey": "sk-87654321"}]
}])
def test_api_key_config_validation(client, body):
    t = new_tenant(client)
    error(post(client, f"{KEYCFG}/update", body, t.headers), "INVALID_ARGUMENT")
    assert keys_part(result(post(client, f"{KEYCFG}/get", {},
                                 t.headers))) == {"enableAdvancedQueries": False, "aiModelApiKey": []}


def test_configs_are_per_api_key(client):
    a, b = new_tenant(client), new_tenant(client)
    result(post(client, f"{ACTIVITY}/update", {"activityServiceConfig": {"isEnabled": True}}, a.headers))
    result(post(client, f"{NOTIFY}/update", {"useNotificationService": True}, a.headers))
    result(post(client, f"{KEYCFG}/update", {"enableAdvancedQueries": True}, a.headers))
    assert result(post(client, f"{ACTIVITY}/get", {}, b.headers)) == {"activityServiceConfig": {"isEnabled": False}}
    assert result(post(client, f"{NOTIFY}/get", {}, b.headers))["useNotificationService"] is False
    assert result(post(client, f"{KEYCFG}/get", {}, b.headers))["enableAdvancedQueries"] is False
