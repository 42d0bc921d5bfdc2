"""Velt's basic webhook service config (`workspace/webhookconfig/*`), kept under `basic` in the key's webhook config
(its auth token sealed beside it) and delivered by the advanced engine (webhooks/basic.py, ADR 0049)."""

from typing import Any

from collab.events import COMMENT_EVENTS, HUDDLE_EVENTS
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.jobs import transaction
from collab.kit.merge import deep_merge
from collab.kit.services import Services
from collab.workspaces import repository as repo
from collab.workspaces.config import advanced_part
from collab.workspaces.schemas import BasicWebhookConfigUpdate

_OPT_IN = ("comment_annotation.suggestion_accept", "comment_annotation.suggestion_reject")
# Velt's defaults on the first enable: the standard comment triggers and every huddle trigger on, CRDT off.
DEFAULT_TRIGGERS = {
    **{e: e not in _OPT_IN
       for e in COMMENT_EVENTS}, **dict.fromkeys(HUDDLE_EVENTS, True), "crdt.update_data": False
}


def _token_aad(api_key_id: str) -> str:
    return f"basic-webhook-token:{api_key_id}"


def seal_token(svc: Services, token: str, *, api_key_id: str) -> bytes:
    """The basic service's auth token, sealed to its API key."""
    return svc.keyring.encrypt(token, _token_aad(api_key_id))


def unseal_token(svc: Services, blob: bytes, *, api_key_id: str) -> str:
    return svc.keyring.decrypt(blob, _token_aad(api_key_id))


def _view(svc: Services, *, tenant: Tenant, basic_config: dict[str, Any] | None, token_enc: bytes | None):
    config = basic_config or {}
    token = "" if token_enc is None else unseal_token(svc, token_enc, api_key_id=tenant.api_key_id)
    service = {"rawNotificationUrl": "", "processedNotificationUrl": "", **(config.get("webhookServiceConfig") or {})}
    return {
        "useWebhookService": bool(config.get("useWebhookService")),
        "webhookServiceConfig": {"authToken": token, **service}
    }


async def apply(svc: Services, conn: Conn, *, tenant: Tenant, data: BasicWebhookConfigUpdate) -> dict[str, Any]:
    """Merge an update into the stored basic config (seeding Velt's defaults on the first enable) and store it; the
    config after the write (webhooks/basic.py sends to what is stored)."""
    incoming = data.model_dump(exclude_unset=True)
    service = dict(incoming.pop("webhookServiceConfig", None) or {})
    token = service.pop("authToken", None)
    row = await repo.api_key_config(conn, api_key_id=tenant.api_key_id, for_update=True)
    advanced, stored = advanced_part(row["webhook_config"])
    stored = stored or {}
    if incoming.get("useWebhookService") is True and "triggers" not in (stored.get("webhookServiceConfig") or {}):
        stored = deep_merge(stored,
                            {"webhookServiceConfig": {"triggers": DEFAULT_TRIGGERS, "enableDataProtection": False}})
    merged = deep_merge(stored, {**incoming, "webhookServiceConfig": service})
    await repo.set_config(conn, api_key_id=tenant.api_key_id, column="webhook",
                          config={**(advanced or {}), "basic": merged})
    if token is not None:
        sealed = seal_token(svc, token, api_key_id=tenant.api_key_id) if token else None
        await repo.set_basic_webhook_token(conn, api_key_id=tenant.api_key_id, token_enc=sealed)
    token_enc = await repo.basic_webhook_token(conn, api_key_id=tenant.api_key_id)
    return _view(svc, tenant=tenant, basic_config=merged, token_enc=token_enc)


async def update(svc: Services, *, tenant: Tenant, data: BasicWebhookConfigUpdate) -> dict[str, Any]:
    """Change only the sent fields of the basic webhook service (URLs checked by the caller); the config after."""
    async with transaction(svc.pool, svc.redis) as tx:
        return await apply(svc, tx.conn, tenant=tenant, data=data)


async def get(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The basic webhook service config; off with empty URLs when never set."""
    async with svc.pool.connection() as conn:
        row = await repo.api_key_config(conn, api_key_id=tenant.api_key_id)
        token_enc = await repo.basic_webhook_token(conn, api_key_id=tenant.api_key_id)
    return _view(svc, tenant=tenant, basic_config=advanced_part(row["webhook_config"])[1], token_enc=token_enc)


async def copy(svc: Services, conn: Conn, *, source: str, target: str) -> None:
    """After a key's settings were copied onto another: the basic service's auth token too, sealed anew to the
    target."""
    blob = await repo.basic_webhook_token(conn, api_key_id=source)
    sealed = None if blob is None else seal_token(svc, unseal_token(svc, blob, api_key_id=source), api_key_id=target)
    await repo.set_basic_webhook_token(conn, api_key_id=target, token_enc=sealed)
