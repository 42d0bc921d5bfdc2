"""The notification service: comment (and huddle) activities become in-app notifications.

Each event joins a batch, a row with a due time: its own batch when batching is off, else the open
batch of its document and/or recipient. A batch falls due when its window ends or it holds
`maxActivities` events, plus `delaySeconds` when a delay is set. Due batches are flushed into
notifications in the same transaction as the event (when due at once) or by the worker's cron;
batch rows are locked while they grow or flush, so concurrent events never lose or double a batch.
Each batch flushes in its own savepoint: one that raises is retried a few times, then marked `failed`,
and never holds back another batch (the cron serves every tenant).
"""

import logging
from typing import Any, Iterable

from collab.config import Settings
from collab.events import COMMENT_EVENTS, HUDDLE_EVENTS
from collab.kit import usage
from collab.kit.crypto import new_id
from collab.kit.db.pool import Conn
from collab.kit.merge import deep_merge
from collab.kit.services import Services
from collab.notifications import email, preferences
from collab.notifications import repository as repo
from collab.notifications.mail import render
from collab.notifications.service import event_payload, recipients_map
from collab.notifications.visibility import visible_to
from collab.webhooks import events as webhook_events
from collab.workspaces.config import NOTIFICATION_DEFAULTS

log = logging.getLogger("collab.notifications")
_VERBS = {
    "comment_annotation.add": "added a comment", "comment.add": "replied to a comment",
    "comment.update": "edited a comment", "comment_annotation.assign": "assigned a comment",
    "comment_annotation.status_change": "changed a comment's status", "comment.reaction_add": "reacted to a comment",
    "huddle.create": "started a huddle", "huddle.join": "joined a huddle"
}
_TEXT_KEYS = ("commentText", "text", "comment", "reasoning")
FLUSH_LIMIT = 200  # batches per transaction of the cron
# A batch whose flush raises is tried again after these waits, then marked failed (never retried forever).
FLUSH_RETRY_MS = (60_000, 300_000)
FLUSH_FAILED = "The notification could not be made (internal error; the details are in the service log)."


def _group(action_type: str) -> str | None:
    return "comment" if action_type in COMMENT_EVENTS else "huddle" if action_type in HUDDLE_EVENTS else None


async def on_activities(conn: Conn, *, svc: Services, api_key_id: str, organization_id: str, document_id: str,
                        stored: dict[str, Any] | None, activities: list[dict[str,
                                                                             Any]], participants: Iterable[str] = (),
                        exclude: Iterable[str] = (), restricted_to: Iterable[str] | None = None) -> None:
    """Turn logged activities into pending notifications when the service and their trigger are on; `stored` is the
    API key's notification config as its caller read it; `participants` (a comment thread's) join the document's
    audience, `exclude` (users notified otherwise) leave it; `restricted_to` (a private thread's readers) limits
    who they reach, in place of a visibility the records carry."""
    if not stored or not stored.get("useNotificationService"):
        return
    config = deep_merge(NOTIFICATION_DEFAULTS, stored)["notificationServiceConfig"]
    now = svc.now_ms()
    audience = None
    for activity in activities:
        group = _group(activity["action_type"])
        if group is None or (config["triggers"].get(group) or {}).get(activity["action_type"]) is not True:
            continue
        if audience is None:
            audience = await repo.audience(conn, api_key_id=api_key_id, organization_id=organization_id,
                                           document_id=document_id, now_ms=now)
            audience = sorted((set(audience) | set(participants)) - set(exclude))
        actor = activity["action_user"].get("userId")
        allowed = (visible_to(activity["entity_data"], actor)
                   if restricted_to is None else sorted({*restricted_to, *([actor] if actor else [])}))
        recipients = [u for u in audience if u != actor and (allowed is None or u in allowed)]
        if recipients:
            await _enqueue_event(conn, now=now, config=config, api_key_id=api_key_id, organization_id=organization_id,
                                 document_id=document_id, activity=activity, recipients=recipients, allowed=allowed)
    if audience is not None:
        await flush(conn, svc=svc, api_key_id=api_key_id)


def _batches(config: dict[str, Any], document_id: str, activity_id: str, recipients: list[str], private: bool):
    """(batch key, recipient or None, recipients, window s, max size) for each batch an event joins."""
    by_doc, by_user = (config["batchConfig"][k] for k in ("document", "user"))
    doc_key = f"doc:{document_id}" + (f":private:{activity_id}" if private else "")  # never merge a private comment
    if by_user.get("isEnabled"):
        prefix = doc_key + ":" if by_doc.get("isEnabled") else ""
        return [(f"{prefix}user:{r}", r, [r], by_user["batchWindowSeconds"], by_user["maxActivities"])
                for r in recipients]
    if by_doc.get("isEnabled") and not private:
        return [(doc_key, None, recipients, by_doc["batchWindowSeconds"], by_doc["maxActivities"])]
    return [(f"event:{activity_id}", None, recipients, 0, 1)]


async def _enqueue_event(conn: Conn, *, now: int, config: dict[str, Any], api_key_id: str, organization_id: str,
                         document_id: str, activity: dict[str, Any], recipients: list[str], allowed) -> None:
    delay = config["delayConfig"]
    delay_ms = delay["delaySeconds"] * 1000 if delay.get("isEnabled") else 0
    for batch_key, recipient, targets, window_s, max_size in _batches(config, document_id, activity["id"], recipients,
                                                                      allowed is not None):
        batch = await repo.open_batch(conn, api_key_id=api_key_id, id=new_id("nb_"), organization_id=organization_id,
                                      document_id=document_id, batch_key=batch_key, recipient=recipient,
                                      max_size=max_size, now=now, due_at=now + window_s * 1000 + delay_ms)
        await repo.add_item(conn, closed_due_at=now + delay_ms, api_key_id=api_key_id, batch_id=batch["id"],
                            activity_id=activity["id"], organization_id=organization_id, document_id=document_id,
                            action_type=activity["action_type"], action_user=activity["action_user"],
                            entity_data=activity["entity_data"], recipients=targets, visible_to=allowed, now=now)


async def flush(conn: Conn, *, svc: Services, api_key_id: str | None = None, limit: int = FLUSH_LIMIT) -> int:
    """Turn due batches into notifications (in the caller's transaction, a savepoint each); the number handled."""
    now = svc.now_ms()
    handled = 0
    for batch in await repo.due_batches(conn, api_key_id=api_key_id, now=now, limit=limit):
        try:
            async with conn.transaction():  # nested: a SAVEPOINT, so a failure undoes this batch's work only
                items = await repo.batch_items(conn, api_key_id=batch["api_key_id"], batch_id=batch["id"])
                notification_id = await _notify(conn, settings=svc.settings, batch=batch, items=items,
                                                now=now) if items else None
                await repo.mark_flushed(conn, api_key_id=batch["api_key_id"], id=batch["id"],
                                        notification_id=notification_id)
            usage.count(svc, "notifications_sent", api_key_id=batch["api_key_id"], n=int(notification_id is not None))
        except Exception:
            log.exception("notification batch %s (key %s) failed to flush (try %s)", batch["id"], batch["api_key_id"],
                          batch["attempts"] + 1)
            tries = batch["attempts"]
            await repo.fail_batch(conn, api_key_id=batch["api_key_id"], id=batch["id"], error=FLUSH_FAILED,
                                  retry_at=now + FLUSH_RETRY_MS[min(tries,
                                                                    len(FLUSH_RETRY_MS) - 1)],
                                  max_attempts=len(FLUSH_RETRY_MS) + 1)
        handled += 1
    return handled


def _comment_text(entity: Any) -> str:
    if isinstance(entity, dict):
        for key in _TEXT_KEYS:
            if isinstance(entity.get(key), str):
                return entity[key]
    return ""


def _named(entity: Any, depth: int = 0) -> set[str]:
    """The userIds a comment's data names anywhere (a few levels deep)."""
    if depth > 6:
        return set()
    if isinstance(entity, dict):
        own = {entity["userId"]} if isinstance(entity.get("userId"), str) else set()
        return own.union(*(_named(v, depth + 1) for v in entity.values()))
    if isinstance(entity, list):
        return set().union(*(_named(v, depth + 1) for v in entity[:200]))
    return set()


async def _notify(conn: Conn, *, settings: Settings, batch: dict[str, Any], items: list[dict[str, Any]],
                  now: int) -> str | None:
    """One notification for a batch's events, to the union of their recipients."""
    candidates = sorted({r for item in items for r in item["recipients"]})
    if not candidates:
        return None  # every recipient left (user-data deletion) before the batch fell due
    # MINE: a recipient a comment names (mentioned, assigned, its author) counts as involved (ADR 0050).
    involved = sorted({u for item in items for u in _named(item["entity_data"])} & set(candidates))
    scope = {"api_key_id": batch["api_key_id"], "organization_id": batch["organization_id"]}
    recipients = await preferences.allowed(conn, **scope, document_id=batch["document_id"], user_ids=candidates,
                                           involved=involved, channel="inbox")
    last = items[-1]
    allowed = last["visible_to"] if all(i["visible_to"] is not None for i in items) else None
    notify_users, by_user_id = await recipients_map(conn, api_key_id=batch["api_key_id"], users=[],
                                                    extra_ids=recipients, allowed=None)
    template_data: dict[str, Any] = {"actionUser": last["action_user"], "activityCount": str(len(items))}
    if batch["recipient"] is not None:
        template_data["recipientUser"] = {"userId": batch["recipient"]}
    if len(items) == 1:
        headline = "{actionUser} " + _VERBS.get(last["action_type"], "updated a comment")
    else:
        headline = "{actionUser} and others made {activityCount} updates"
    source_data: dict[str, Any] = {
        "activityIds": [i["activity_id"] for i in items], "actionTypes": [i["action_type"] for i in items],
        "entityData": last["entity_data"]
    }
    if allowed is not None:
        source_data |= {"visibility": "private", "visibleToUserIds": allowed}
    notification_id = "ntf_" + batch["id"].removeprefix("nb_")  # one per batch, however often it flushes
    source = "huddle" if _group(last["action_type"]) == "huddle" else "comment"
    body = _comment_text(last["entity_data"])
    await email.enqueue(conn, settings=settings, now=now, **scope, document_id=batch["document_id"],
                        notification_id=notification_id, action_types=[i["action_type"] for i in items],
                        emails=dict.fromkeys(candidates), involved=involved,
                        headline=render(headline, template_data, last["action_user"]), body=body)
    if not recipients:
        return None  # nobody takes it in their inbox
    added = await repo.insert(conn, api_key_id=batch["api_key_id"], id=notification_id,
                              organization_id=batch["organization_id"], document_id=batch["document_id"],
                              location_id=None, notification_source=source, notification_source_data=source_data,
                              action_user=last["action_user"], display_body_message=body,
                              display_headline_message_template=headline,
                              display_headline_message_template_data=template_data, notify_users=notify_users,
                              notify_users_by_user_id=by_user_id, visible_to=allowed, timestamp=now)
    if added:
        await webhook_events.emit(
            conn, now=now, api_key_id=batch["api_key_id"], event_type="notification.add",
            organization_id=batch["organization_id"], document_id=batch["document_id"], action_user=last["action_user"],
            user_ids=[*by_user_id, *(i["action_user"]["userId"] for i in items)],
            payload=event_payload(id=notification_id, source=source, source_data=source_data, headline=headline,
                                  headline_data=template_data, body=body, notify_users=notify_users,
                                  by_user_id=by_user_id, timestamp=now))
    return notification_id
