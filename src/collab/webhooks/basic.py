"""Velt's basic webhook service on the advanced engine: its URLs are endpoints of kind 'basic', its events are
messages in Velt's V1 payload shape, delivered (retried, logged) like any other (ADR 0049)."""

import base64
import logging
from typing import Any

import orjson

from collab.kit import safety
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db.pool import Conn
from collab.kit.errors import invalid, issue
from collab.kit.jobs import Tx
from collab.kit.services import Services
from collab.webhooks import delivery
from collab.webhooks import payload as payloads
from collab.webhooks import repository as repo
from collab.workspaces import basic_webhooks
from collab.workspaces.config import advanced_part
from collab.workspaces.schemas import BasicWebhookConfigUpdate

log = logging.getLogger("collab.webhooks")
# The basic service's two URLs, as endpoint ids (advanced ids are `ep_…`, so these never collide).
ENDPOINTS = {"rawNotificationUrl": "basic_raw", "processedNotificationUrl": "basic_processed"}
# Velt's V1 actionType of each event collab emits (webhooks/basic.mdx); other events keep their type as is.
ACTION_TYPES = {
    "comment_annotation.add": "newlyAdded", "comment.add": "added", "comment.update": "updated",
    "comment.delete": "deleted", "comment_annotation.approve": "approved", "comment_annotation.assign": "assigned",
    "comment_annotation.status_change": "statusChanged", "comment_annotation.priority_change": "priorityChanged",
    "comment_annotation.accept": "accepted", "comment_annotation.reject": "rejected",
    "comment.reaction_add": "reactionAdded", "comment.reaction_delete": "reactionDeleted",
    "comment_annotation.subscribe": "subscribed", "comment_annotation.unsubscribe": "unsubscribed",
    "comment_annotation.suggestion_accept": "suggestionAccepted",
    "comment_annotation.suggestion_reject": "suggestionRejected", "huddle.create": "created", "huddle.join": "joined",
    "crdt.update_data": "updateData"
}


async def update_config(svc: Services, *, tenant: Tenant, data: BasicWebhookConfigUpdate) -> dict[str, Any]:
    """`workspace/webhookconfig/update`: its URLs checked like an advanced endpoint's, then stored."""
    service = data.webhookServiceConfig
    for field in ENDPOINTS:
        url = getattr(service, field, None) if service is not None else None
        why = url and await safety.check_registration(url, allow_private=svc.settings.webhooks_allow_private_targets)
        if why:
            raise invalid(f"{field}: {why}", [issue(["webhookServiceConfig", field], why)])
    answer = await basic_webhooks.update(svc, tenant=tenant, data=data)
    async with svc.pool.connection() as conn:  # configured again: endpoints turned off for failing get another chance
        await repo.enable_basic_endpoints(conn, api_key_id=tenant.api_key_id, now=svc.now_ms())
    return answer


def takes(webhook_config: dict[str, Any] | None, *, event_type: str) -> dict[str, Any] | None:
    """The key's basic service settings (from its stored webhook config) when the service is on and its triggers
    take the event, else None."""
    config = advanced_part(webhook_config)[1] or {}
    service = config.get("webhookServiceConfig") or {}
    on = config.get("useWebhookService") and (service.get("triggers") or {}).get(event_type) is True
    return service if on else None


async def _targets(conn: Conn, *, api_key_id: str, service: dict[str, Any], rows: list[dict[str, Any]],
                   now: int) -> list[str]:
    """The ids of the endpoints serving the configured URLs (one per distinct URL): the rows as they stand, a row
    written only when missing or pointing elsewhere (a write per event would queue every event of the key on it),
    and none the engine turned off for failing (the next configuration turns them on)."""
    stored = {r["id"]: r for r in rows}
    ids, seen = [], set()
    for field, endpoint_id in ENDPOINTS.items():
        url = service.get(field) or ""
        if not url or url in seen:  # the same URL twice gets each event once
            continue
        seen.add(url)
        row = stored.get(endpoint_id)
        if row is None or row["url"] != url:
            await repo.put_basic_endpoint(conn, api_key_id=api_key_id, id=endpoint_id, url=url, now=now)
        elif row["disabled"]:
            continue
        ids.append(endpoint_id)
    return ids


def _source(event_type: str) -> str:
    prefix = event_type.split(".", 1)[0]
    return "comment" if prefix in ("comment", "comment_annotation") else prefix


def v1_payload(*, id: str, event_type: str, api_key_id: str, organization_id: str | None, document_id: str | None,
               action_user: dict[str, Any] | None, payload: Any) -> dict[str, Any]:
    """Velt's WebhookV1Payload: webhookId, actionType, notificationSource, actionUser, metadata, plus the thread
    for comment events and collab's own event (`event`, `data`) so nothing is lost."""
    body: dict[str, Any] = {
        "webhookId": id, "actionType": ACTION_TYPES.get(event_type,
                                                        event_type), "notificationSource": _source(event_type),
        "metadata": {"apiKey": api_key_id, "organizationId": organization_id,
                     "documentId": document_id}, "platform": "sdk", "event": event_type, "data": payload
    }
    if action_user is not None:
        body["actionUser"] = action_user
    entity = payload.get("entityData") if isinstance(payload, dict) else None
    if isinstance(entity, dict) and isinstance(entity.get("commentAnnotation"), dict):
        body["commentAnnotation"] = entity["commentAnnotation"]
        body["targetComment"] = {k: v for k, v in entity.items() if k != "commentAnnotation"}
    return body


def render(body: dict[str, Any], service: dict[str, Any]) -> str:
    """The bytes sent: JSON, `{encodedPayload}` when encodeData, the encrypted envelope when encryptData."""
    if service.get("enableDataProtection"):
        body = payloads.protect(body)
    try:
        text = orjson.dumps(body).decode()
    except orjson.JSONEncodeError as exc:
        raise payloads.RenderError(f"The payload cannot be written as JSON: {exc}.") from exc
    if service.get("encodeData"):
        text = orjson.dumps({"encodedPayload": base64.b64encode(text.encode()).decode()}).decode()
    if service.get("encryptData"):
        text = orjson.dumps(payloads.encrypt(text.encode(), service.get("publicKey") or "")).decode()
    return text


async def emit(db: Tx | Conn, *, targets: dict[str, Any], now: int, api_key_id: str, event_type: str, payload: Any,
               organization_id: str | None, document_id: str | None, action_user: dict[str, Any] | None,
               dedupe_id: str | None, user_ids: list[str]) -> None:
    """Record an event for the key's basic endpoints whose triggers take it (nothing while the service is off);
    `targets` is the event's `event_targets` row, read once for both services."""
    conn = db.conn if isinstance(db, Tx) else db
    service = takes(targets["webhook_config"], event_type=event_type)
    endpoints = [] if service is None else await _targets(conn, api_key_id=api_key_id, service=service,
                                                          rows=targets["basic"], now=now)
    if service is None or not endpoints:
        return
    message_id = f"{dedupe_id}_basic" if dedupe_id else new_id("msg_")
    shaped = v1_payload(id=message_id, event_type=event_type, api_key_id=api_key_id, organization_id=organization_id,
                        document_id=document_id, action_user=action_user, payload=payload)
    try:
        body, error = render(shaped, service), None
    except payloads.RenderError as exc:
        body, error = None, str(exc)
    except Exception:  # as events.emit: one tenant's data or config fails this message only, never the caller
        log.exception("basic webhook body of %s (%s, key %s) could not be made", message_id, event_type, api_key_id)
        body, error = None, payloads.RENDER_FAILED
    if not await repo.insert_message(conn, api_key_id=api_key_id, id=message_id, event_type=event_type, body=body,
                                     content_type="application/json", error=error, organization_id=organization_id,
                                     user_ids=user_ids, now=now):
        return
    tx = db if isinstance(db, Tx) and error is None else None
    status = "failed" if error else "queued" if tx else "pending"
    for endpoint_id in endpoints:
        await repo.insert_delivery(conn, api_key_id=api_key_id, message_id=message_id, endpoint_id=endpoint_id,
                                   status=status, max_attempts=delivery.MAX_ATTEMPTS, last_error=error, now=now)
        if tx is not None:
            await tx.enqueue("deliver_webhook", api_key_id=api_key_id, message_id=message_id, endpoint_id=endpoint_id,
                             attempt=1)
