"""Per-API-key console settings: advanced webhooks, activity and notification services, AI keys."""

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from collab.events import COMMENT_EVENTS, HUDDLE_EVENTS
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.jobs import transaction
from collab.kit.merge import deep_merge
from collab.kit.services import Services
from collab.llm.routing import SELF_HOSTED
from collab.workspaces import model_servers
from collab.workspaces import repository as repo
from collab.workspaces.schemas import (
    ActivityConfigUpdate,
    ApiKeyConfigUpdate,
    NotificationConfigUpdate,
    WebhookConfigUpdate,
)


@dataclass(frozen=True)
class KeySetting:
    """A per-key setting a part above this one owns (the embedding model: judgments/reembed.py registers it when
    imported), shown and changed through apikeyconfig/get and /update: `check` refuses a value before anything is
    written, `apply` acts on it after, `view` adds its fields to the answer."""

    check: Callable[..., Awaitable[Any]]
    apply: Callable[..., Awaitable[Any]]
    view: Callable[..., Awaitable[dict[str, Any]]]


KEY_SETTINGS: list[KeySetting] = []

WEBHOOK_DEFAULTS = {
    "isEnabled": False, "encryptData": False, "encodeData": False, "publicKey": "", "enableDataProtection": False
}
_BATCH_DEFAULTS = {"isEnabled": False, "batchWindowSeconds": 10, "maxActivities": 2}
NOTIFICATION_DEFAULTS = {
    "useNotificationService": False, "notificationServiceConfig": {
        "triggers": {"comment": dict.fromkeys(COMMENT_EVENTS, False), "huddle": dict.fromkeys(HUDDLE_EVENTS, False)},
        "delayConfig": {"isEnabled": False, "delaySeconds": 10},
        "batchConfig": {"document": dict(_BATCH_DEFAULTS), "user": dict(_BATCH_DEFAULTS)}
    }
}


def advanced_part(stored: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The stored webhook config split into the advanced settings (None before their first enable) and Velt's basic
    service (under `basic`, None when never set): one column, so one read tells the event paths whether either is on."""
    rest = dict(stored or {})
    basic = rest.pop("basic", None)
    return (rest or None), basic


async def update_webhook_config(svc: Services, *, tenant: Tenant, data: WebhookConfigUpdate) -> dict[str, Any]:
    """Change only the sent fields; the very first configuration must enable webhooks."""
    incoming = data.model_dump(exclude_unset=True)
    async with transaction(svc.pool, svc.redis) as tx:
        row = await repo.api_key_config(tx.conn, api_key_id=tenant.api_key_id, for_update=True)
        stored, basic = advanced_part(row["webhook_config"])
        if stored is None and incoming.get("isEnabled") is not True:
            raise ApiError("FAILED_PRECONDITION",
                           "Advanced webhooks are not configured yet: the first update must set isEnabled: true.")
        merged = {**WEBHOOK_DEFAULTS, **(stored or {}), **incoming}
        await repo.set_config(tx.conn, api_key_id=tenant.api_key_id, column="webhook",
                              config={**merged, **({"basic": basic} if basic is not None else {})})
    return merged


async def get_webhook_config(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The stored advanced webhook config; FAILED_PRECONDITION before the first enable."""
    async with svc.pool.connection() as conn:
        stored, _ = advanced_part((await repo.api_key_config(conn, api_key_id=tenant.api_key_id))["webhook_config"])
    if stored is None:
        raise ApiError("FAILED_PRECONDITION", "Advanced webhooks have not been enabled for this API key.")
    return {**WEBHOOK_DEFAULTS, **stored}


def _activity_defaults(now_ms: int) -> dict[str, Any]:
    return {
        "isEnabled": True, "immutable": True, "enabledTime": now_ms,
        "triggers": {"comment": dict.fromkeys(COMMENT_EVENTS, True)}
    }


async def update_activity_config(svc: Services, *, tenant: Tenant, data: ActivityConfigUpdate) -> dict[str, Any]:
    """Deep-merge over the stored config; the first enable seeds the defaults under the request."""
    incoming = data.activityServiceConfig.model_dump(exclude_unset=True)
    async with transaction(svc.pool, svc.redis) as tx:
        stored = (await repo.api_key_config(tx.conn, api_key_id=tenant.api_key_id, for_update=True))["activity_config"]
        if stored is None:
            stored = _activity_defaults(svc.now_ms()) if incoming.get("isEnabled") is True else {}
        merged = deep_merge(stored, incoming)
        await repo.set_config(tx.conn, api_key_id=tenant.api_key_id, column="activity", config=merged)
    return {"activityServiceConfig": {"isEnabled": False, **merged}}


async def get_activity_config(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The activity config; `{isEnabled: false}` when never set."""
    async with svc.pool.connection() as conn:
        stored = (await repo.api_key_config(conn, api_key_id=tenant.api_key_id))["activity_config"]
    return {"activityServiceConfig": {"isEnabled": False, **(stored or {})}}


async def update_notification_config(svc: Services, *, tenant: Tenant,
                                     data: NotificationConfigUpdate) -> dict[str, Any]:
    """Deep-merge over the stored config; enabling without stored triggers seeds comment and huddle triggers."""
    incoming = data.model_dump(exclude_unset=True)
    async with transaction(svc.pool, svc.redis) as tx:
        row = await repo.api_key_config(tx.conn, api_key_id=tenant.api_key_id, for_update=True)
        stored = row["notification_config"] or {}
        has_triggers = "triggers" in stored.get("notificationServiceConfig", {})
        if incoming.get("useNotificationService") is True and not has_triggers:
            seed = {"comment": dict.fromkeys(COMMENT_EVENTS, True), "huddle": dict.fromkeys(HUDDLE_EVENTS, True)}
            stored = deep_merge(stored, {"notificationServiceConfig": {"triggers": seed}})
        merged = deep_merge(stored, incoming)
        await repo.set_config(tx.conn, api_key_id=tenant.api_key_id, column="notification", config=merged)
    return {
        "useNotificationService": merged.get("useNotificationService", False),
        "notificationServiceConfig": merged.get("notificationServiceConfig", {})
    }


async def get_notification_config(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The notification config with every unset field filled from the defaults."""
    async with svc.pool.connection() as conn:
        stored = (await repo.api_key_config(conn, api_key_id=tenant.api_key_id))["notification_config"]
    return deep_merge(NOTIFICATION_DEFAULTS, stored or {})


async def _api_key_config_view(svc: Services, conn, *, tenant: Tenant) -> dict[str, Any]:
    row = await repo.api_key_config_view(conn, api_key_id=tenant.api_key_id)
    entries = []
    for k in row["provider_keys"]:
        entry = {"provider": k["provider"], "isSet": True, "last4": k["last4"]}
        if k["base_url_host"] is not None:  # a server the team runs
            entry |= {"keySet": k["key_set"], "baseUrlHost": k["base_url_host"], "model": k["model"]}
        entries.append(entry)
    return {
        "enableAdvancedQueries": row["enable_advanced_queries"], "aiModelApiKey": entries,
        **{k: v
           for ext in KEY_SETTINGS
           for k, v in (await ext.view(conn, api_key_id=tenant.api_key_id)).items()}
    }


async def update_api_key_config(svc: Services, *, tenant: Tenant, data: ApiKeyConfigUpdate) -> dict[str, Any]:
    """Change the per-key console settings; provider keys and model servers' URLs are stored encrypted, never
    returned. A workspace's own model server is checked as webhook targets are (private addresses refused unless
    the operator allows them), before anything is written."""
    entries = data.aiModelApiKey or []
    if data.embeddingModel is not None:  # refused before anything is written
        for ext in KEY_SETTINGS:
            await ext.check(svc, data.embeddingModel)
    for i, entry in enumerate(entries):
        if entry.baseUrl is not None:
            await model_servers.check_base_url(svc.settings, entry.baseUrl, path=["aiModelApiKey", i, "baseUrl"])
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.api_key_config(tx.conn, api_key_id=tenant.api_key_id, for_update=True)
        if data.enableAdvancedQueries is not None:
            await repo.set_advanced_queries(tx.conn, api_key_id=tenant.api_key_id, enabled=data.enableAdvancedQueries)
        for entry in entries:
            if (entry.customerApiKey if entry.provider not in SELF_HOSTED else entry.baseUrl) is None:
                await repo.delete_provider_key(tx.conn, api_key_id=tenant.api_key_id, provider=entry.provider)
                continue
            sealed = model_servers.seal(svc, tenant=tenant, provider=entry.provider, key=entry.customerApiKey,
                                        base_url=entry.baseUrl, model=entry.model)
            await repo.upsert_provider_key(tx.conn, api_key_id=tenant.api_key_id, provider=entry.provider, **sealed)
    if data.embeddingModel is not None:
        for ext in KEY_SETTINGS:
            await ext.apply(svc, api_key_id=tenant.api_key_id, model=data.embeddingModel)
    async with svc.pool.connection() as conn:
        return await _api_key_config_view(svc, conn, tenant=tenant)


async def get_api_key_config(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The per-key console settings, provider keys shown only by their last 4 characters."""
    async with svc.pool.connection() as conn:
        return await _api_key_config_view(svc, conn, tenant=tenant)


async def require_advanced_queries(svc: Services, *, tenant: Tenant) -> None:
    """FAILED_PRECONDITION unless the API key has advanced queries on (console setting)."""
    async with svc.pool.connection() as conn:
        row = await repo.api_key_config(conn, api_key_id=tenant.api_key_id)
    if not row["enable_advanced_queries"]:
        raise ApiError(
            "FAILED_PRECONDITION",
            "Advanced queries are not enabled: turn on enableAdvancedQueries with workspace/apikeyconfig/update.")
