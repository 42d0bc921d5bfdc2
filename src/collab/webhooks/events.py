"""Emitting events: a message and its deliveries are written in the caller's transaction, with the change.

Nothing is recorded unless webhooks are enabled for the API key and some enabled endpoint takes the event
type (and, when it names channels, one of the event's). The body is rendered now, under the config of
this moment (data protection, encoding, encryption), and stays fixed for every attempt.
"""

import hashlib
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from collab.events import COMMENT_EVENTS
from collab.kit.crypto import new_id
from collab.kit.db.pool import Conn
from collab.kit.jobs import Tx
from collab.webhooks import basic, delivery
from collab.webhooks import payload as payloads
from collab.webhooks import repository as repo
from collab.workspaces.config import WEBHOOK_DEFAULTS

log = logging.getLogger("collab.webhooks")
CRDT_DEBOUNCE_MS = 5_000
# A CRDT window whose event cannot be recorded is tried this often, a minute apart, then dropped (logged).
CRDT_MAX_TRIES, CRDT_RETRY_MS = 3, 60_000


@asynccontextmanager
async def savepoint(tx: Tx) -> AsyncIterator[None]:
    """One unit of a shared loop: its writes and its jobs are undone alone when it raises."""
    mark = len(tx.pending)
    try:
        async with tx.conn.transaction():  # nested: a SAVEPOINT in the caller's transaction
            yield
    except BaseException:
        del tx.pending[mark:]
        raise


def _message_id(api_key_id: str, dedupe: str | None) -> str:
    if dedupe is None:
        return new_id("msg_")
    # One-off events (a migration's outcome, a deletion's end) get one message however often their job runs.
    return "msg_" + hashlib.sha256(f"{api_key_id}\n{dedupe}".encode()).hexdigest()[:24]


async def emit(db: Tx | Conn, *, now: int, api_key_id: str, event_type: str, payload: Any,
               organization_id: str | None = None, document_id: str | None = None,
               action_user: dict[str, Any] | None = None, channels: list[str] | None = None, dedupe: str | None = None,
               user_ids: list[str] | None = None) -> str | None:
    """Record an event for every endpoint that takes it; the message id, or None when none does."""
    conn = db.conn if isinstance(db, Tx) else db
    if channels is None:
        channels = [c for c in (organization_id, document_id) if c]
    message_id = _message_id(api_key_id, dedupe)
    if user_ids is None:  # whom the event is about: its actor, unless the caller names more
        user_ids = [action_user["userId"]] if action_user and action_user.get("userId") else []
    targets = await repo.event_targets(conn, api_key_id=api_key_id, event_type=event_type, channels=channels)
    # Velt's basic service takes the event on its own terms (its triggers, its payload shape), as its own message.
    await basic.emit(db, targets=targets, now=now, api_key_id=api_key_id, event_type=event_type, payload=payload,
                     organization_id=organization_id, document_id=document_id, action_user=action_user,
                     dedupe_id=message_id if dedupe is not None else None, user_ids=sorted(set(user_ids)))
    endpoints = targets["advanced"]
    if not endpoints:
        return None
    config = {**WEBHOOK_DEFAULTS, **(targets["webhook_config"] or {})}
    shaped = payloads.message(id=message_id, event_type=event_type, now=now, api_key_id=api_key_id,
                              organization_id=organization_id, document_id=document_id, action_user=action_user,
                              payload=payload)
    try:
        body, content_type, error = *payloads.render(shaped, config), None
    except payloads.RenderError as exc:
        body, content_type, error = None, "application/json", str(exc)
    except Exception:
        # Whatever one tenant's data or config does to rendering, it fails this message only, never the caller.
        log.exception("webhook body of %s (%s, key %s) could not be made", message_id, event_type, api_key_id)
        body, content_type, error = None, "application/json", payloads.RENDER_FAILED
    if not await repo.insert_message(conn, api_key_id=api_key_id, id=message_id, event_type=event_type, body=body,
                                     content_type=content_type, error=error, organization_id=organization_id,
                                     user_ids=sorted(set(user_ids)), now=now):
        return None
    # Inside a Tx the first attempts are queued at commit; a bare connection leaves them to the sweep.
    tx = db if isinstance(db, Tx) and error is None else None
    status = "failed" if error else "queued" if tx else "pending"
    for endpoint_id in endpoints:
        await repo.insert_delivery(conn, api_key_id=api_key_id, message_id=message_id, endpoint_id=endpoint_id,
                                   status=status, max_attempts=delivery.MAX_ATTEMPTS, last_error=error, now=now)
        if tx is not None:
            await tx.enqueue("deliver_webhook", api_key_id=api_key_id, message_id=message_id, endpoint_id=endpoint_id,
                             attempt=1)
    return message_id


def enabled(webhook_config: dict[str, Any] | None) -> bool:
    """Whether a key's stored webhook settings have webhooks on, advanced or basic (no endpoint takes an event
    while both are off)."""
    config = webhook_config or {}
    return bool(config.get("isEnabled") or (config.get("basic") or {}).get("useWebhookService"))


def emits(activity: dict[str, Any]) -> bool:
    """Whether an activity (as the spec names its fields) becomes a webhook event."""
    return activity.get("featureType") == "comment" and activity.get("actionType") in COMMENT_EVENTS


async def on_activities(tx: Tx, *, now: int, api_key_id: str, organization_id: str, document_id: str,
                        activities: list[dict[str, Any]]) -> None:
    """Comment activities become `comment_annotation.*` / `comment.*` events named by their actionType."""
    for activity in activities:
        if emits(activity):
            await emit(tx, now=now, api_key_id=api_key_id, event_type=activity["actionType"], payload=activity,
                       organization_id=organization_id, document_id=document_id, action_user=activity.get("actionUser"))


async def crdt_changed(conn: Conn, *, now: int, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
                       user_id: str | None) -> None:
    """Count a CRDT change towards its editor's next `crdt.update_data` (at most one per 5 s per editor)."""
    channels = [organization_id, document_id]
    targets = await repo.event_targets(conn, api_key_id=api_key_id, event_type="crdt.update_data", channels=channels)
    if not (targets["advanced"] or basic.takes(targets["webhook_config"], event_type="crdt.update_data")):
        return
    await repo.touch_crdt(conn, api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                          editor_id=editor_id, user_id=user_id, now=now, due_at=now + CRDT_DEBOUNCE_MS)


async def flush_crdt(tx: Tx, *, now: int, limit: int = 200) -> int:
    """Turn due CRDT change windows into events (in the caller's transaction, one savepoint each); how many."""
    rows = await repo.due_crdt(tx.conn, now=now, limit=limit)
    for row in rows:
        key = {k: row[k] for k in ("api_key_id", "organization_id", "document_id", "editor_id")}
        try:
            async with savepoint(tx):
                await _crdt_event(tx, row, now=now)
                await repo.delete_crdt(tx.conn, **key)
        except Exception:
            log.exception("crdt.update_data of %s/%s (key %s) failed", row["document_id"], row["editor_id"],
                          row["api_key_id"])
            tries = await repo.fail_crdt(tx.conn, **key, retry_at=now + CRDT_RETRY_MS)
            if tries >= CRDT_MAX_TRIES:
                await repo.delete_crdt(tx.conn, **key)
    return len(rows)


async def _crdt_event(tx: Tx, row: dict[str, Any], *, now: int) -> None:
    user = row["last_updated_by"]
    await emit(
        tx, now=now, api_key_id=row["api_key_id"], event_type="crdt.update_data",
        organization_id=row["organization_id"], document_id=row["document_id"],
        action_user={"userId": user} if user else None, payload={
            "organizationId": row["organization_id"], "documentId": row["document_id"], "editorId": row["editor_id"],
            "lastUpdatedBy": user, "updates": row["updates"], "firstUpdateAt": payloads.iso(row["first_at"]),
            "lastUpdateAt": payloads.iso(row["last_at"])
        })
