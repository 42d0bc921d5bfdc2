"""Comment writes as activity records, sent down the one path activities/add takes (activity log and judgments,
webhook events, notifications), plus the notification of each new mention.

An event quotes only what its request carried in full (a new comment, an edit's new values) and otherwise a bounded
view: the thread as a snapshot of ids and small fields, other comments and the anchored text cut to PREVIEW
characters, users without their extra keys. So the bytes a request makes the service write stay a small multiple of
the request, however large the thread it acts on (issue #34)."""

import hashlib
from dataclasses import dataclass, field
from typing import Any, overload

from collab.activities.service import publish
from collab.comments.access import may_see
from collab.comments.schemas import AnnotationSnapshot, UserBrief
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db.pool import Conn
from collab.kit.jobs import Tx
from collab.kit.services import Services
from collab.notifications import repository as notifications_repo
from collab.notifications.service import event_payload, recipients_map
from collab.webhooks import events as webhook_events
from collab.workspaces import repository as workspaces_repo

MENTION_HEADLINE = "{actionUser} mentioned you in a comment"
PREVIEW = 500  # characters of a stored text an event quotes (the anchored text, a comment it did not carry)
_BRIEF_COMMENT = ("annotationId", "commentId", "from", "createdAt", "lastUpdated", "isEdited", "reaction")


@dataclass
class Config:
    """What the tenant has switched on, read once per request."""

    activities: bool
    triggers: dict[str, Any]
    notifications: bool
    notification_config: dict[str, Any] | None  # as stored: the notification engine reads its triggers
    webhooks: bool  # webhooks on for the key: only then are events looked for


async def config_of(conn: Conn, *, tenant: Tenant) -> Config:
    row = await workspaces_repo.api_key_config(conn, api_key_id=tenant.api_key_id)
    activity, notification = row["activity_config"] or {}, row["notification_config"] or {}
    return Config(activities=bool(activity.get("isEnabled")), triggers=(activity.get("triggers") or {}).get("comment")
                  or {}, notifications=bool(notification.get("useNotificationService")),
                  notification_config=row["notification_config"],
                  webhooks=webhook_events.enabled(row["webhook_config"]))


@dataclass
class Event:
    """One activity record of a write, and whether it is logged and may notify."""

    record: dict[str, Any]
    log: bool = True
    notify: bool = True
    mentioned: list[str] = field(default_factory=list)  # users newly tagged by this event's comment


@overload
def brief_user(user: dict[str, Any]) -> dict[str, Any]:
    ...


@overload
def brief_user(user: None) -> None:
    ...


def brief_user(user: dict[str, Any] | None) -> dict[str, Any] | None:
    """A user without the extra keys a client may attach (userId, name and email only)."""
    return None if user is None else UserBrief.wire(user)


def record(*, action_type: str, actor: dict[str, Any], thread: dict[str, Any], comment: dict[str, Any] | None = None,
           changes: dict[str, Any] | None = None, reaction: str | None = None, now: int,
           new_thread: bool = False) -> dict[str, Any]:
    """The activity row of a comment event: entityData is the comment acted on as the caller quotes it (whole when
    the request carried it) with the thread's snapshot under `commentAnnotation`; entityTargetData the text the
    thread is anchored to (whole on the event that made the thread, else its first PREVIEW characters)."""
    entity: dict[str, Any] = {"annotationId": thread["id"]}
    if comment is not None:
        entity |= {k: v for k, v in comment.items() if k not in ("reactions", )}
    if reaction is not None:
        entity["reaction"] = reaction
    entity["commentAnnotation"] = AnnotationSnapshot.wire(thread)
    target_text = (thread["target_element"] or {}).get("targetText")
    if isinstance(target_text, str) and not new_thread:
        target_text = target_text[:PREVIEW]
    return dict(id=new_id("act_"), organization_id=thread["organization_id"], document_id=thread["document_id"],
                feature_type="comment", action_type=action_type, action_user=actor, target_entity_id=thread["id"],
                target_sub_entity_id=str(comment["commentId"]) if comment else None, changes=changes,
                entity_data=entity, entity_target_data={"text": target_text} if isinstance(target_text, str) else None,
                display_message_template=None, display_message_template_data=None, action_icon=None,
                is_activity_resolver_used=False, timestamp=now)


async def send(tx: Tx, svc: Services, *, tenant: Tenant, config: Config, thread: dict[str, Any], participants: set[str],
               events: list[Event]) -> None:
    """Publish a thread's events: logged where the activity service and trigger allow, emitted, notified."""
    mentioned = {u for e in events if e.notify for u in e.mentioned}
    # The snapshot leaves a restricted thread's list out (it may be long): notifications take it from here.
    readers = (sorted({thread["from_id"], *(thread["visible_user_ids"] or [])})
               if thread["visibility"] == "restricted" else None)
    for log in (True, False):
        for notify in (True, False):
            batch = [
                e.record for e in events
                if (e.log and config.activities and config.triggers.get(e.record["action_type"]) is not False) == log
                and e.notify == notify
            ]
            if batch:
                await publish(tx, svc, api_key_id=tenant.api_key_id, organization_id=thread["organization_id"],
                              document_id=thread["document_id"], records=batch, store=log, notify=notify,
                              notification_config=config.notification_config, webhooks=config.webhooks,
                              participants=participants, exclude=mentioned, restricted_to=readers)
    if config.notifications:
        for event in events:
            if event.notify:
                for user_id in event.mentioned:
                    await _mention(tx, svc, tenant=tenant, thread=thread, event=event.record, user_id=user_id)


def _quoted(entity: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(body, entityData) of a mention: the comment quoted briefly, for each of up to 50 tagged users."""
    quoted = {k: entity[k] for k in _BRIEF_COMMENT if k in entity}
    if "from" in quoted:
        quoted["from"] = brief_user(quoted["from"])
    body = (entity.get("commentText") or "")[:PREVIEW]
    if body:
        quoted["commentText"] = body
    return body, quoted | {"commentAnnotation": entity["commentAnnotation"]}


async def _mention(tx: Tx, svc: Services, *, tenant: Tenant, thread: dict[str, Any], event: dict[str, Any],
                   user_id: str) -> None:
    """Notify one newly tagged user (never twice for one comment: the id is derived from it), if they may see it."""
    actor = event["action_user"]
    if user_id == actor["userId"] or not may_see(thread, user_id):
        return
    now = svc.now_ms()
    key = (
        f"{tenant.api_key_id}\n{thread['organization_id']}\n{thread['id']}\n{event['target_sub_entity_id']}\n{user_id}")
    notification_id = "ntf_" + hashlib.sha256(key.encode()).hexdigest()[:24]
    notify_users, by_user_id = await recipients_map(tx.conn, api_key_id=tenant.api_key_id, users=[],
                                                    extra_ids=[user_id], allowed=None)
    body, quoted = _quoted(event["entity_data"])
    source_data = {
        "activityIds": [event["id"]], "actionTypes": [event["action_type"]], "entityData": quoted, "mention": True
    }
    actor = brief_user(actor)
    template_data = {"actionUser": actor, "recipientUser": {"userId": user_id}}
    added = await notifications_repo.insert(
        tx.conn, api_key_id=tenant.api_key_id, id=notification_id, organization_id=thread["organization_id"],
        document_id=thread["document_id"], location_id=thread["location_id"], notification_source="comment",
        notification_source_data=source_data, action_user=actor, display_body_message=body,
        display_headline_message_template=MENTION_HEADLINE, display_headline_message_template_data=template_data,
        notify_users=notify_users, notify_users_by_user_id=by_user_id, visible_to=None, timestamp=now)
    if added:
        await webhook_events.emit(
            tx, now=now, api_key_id=tenant.api_key_id, event_type="notification.add",
            organization_id=thread["organization_id"], document_id=thread["document_id"], action_user=actor,
            user_ids=[actor["userId"],
                      user_id], payload=event_payload(id=notification_id, source="comment", source_data=source_data,
                                                      headline=MENTION_HEADLINE, headline_data=template_data, body=body,
                                                      notify_users=notify_users, by_user_id=by_user_id, timestamp=now))
