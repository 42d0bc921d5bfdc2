"""Notifications: add (idempotent by id), get (advanced queries, paged, visibility), update, delete; add honours
per-user preferences (notifications/preferences.py) and queues e-mail (notifications/email.py)."""

from typing import Any

from collab.documents import repository as documents_repo
from collab.kit import paging, usage
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db.pool import Conn
from collab.kit.errors import not_found, not_found_message
from collab.kit.fields import MAX_BATCH
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.notifications import email, preferences
from collab.notifications import repository as repo
from collab.notifications.mail import render
from collab.notifications.schemas import (
    AddNotification,
    DeleteNotifications,
    GetNotifications,
    Notification,
    UpdateNotifications,
)
from collab.notifications.visibility import visible_to
from collab.organizations.service import ensure as ensure_organization
from collab.webhooks import events as webhook_events
from collab.workspaces.config import require_advanced_queries


def event_payload(*, id: str, source: str, source_data: Any, headline: str, headline_data: Any, body: str,
                  notify_users: dict[str, bool], by_user_id: dict[str, bool], timestamp: int) -> dict[str, Any]:
    """A new notification as the payload of its `notification.add` webhook event."""
    return {
        "id": id, "notificationSource": source, "notificationSourceData": source_data or {},
        "displayHeadlineMessageTemplate": headline, "displayHeadlineMessageTemplateData": headline_data or {},
        "displayBodyMessage": body, "notifyUsers": notify_users, "notifyUsersByUserId": by_user_id,
        "timestamp": timestamp
    }


def user_key(user: dict[str, Any]) -> str:
    """The key of a user in `notifyUsers`: their e-mail when known, else their id."""
    return user.get("email") or user["userId"]


async def recipients_map(conn: Conn, *, api_key_id: str, users: list[dict[str, Any]], extra_ids: list[str],
                         allowed: list[str] | None) -> tuple[dict[str, bool], dict[str, bool]]:
    """`notifyUsers` and `notifyUsersByUserId` for the given users plus ids, limited to `allowed` when private."""
    by_id = {u["userId"]: u for u in users}
    missing = sorted(set(extra_ids) - set(by_id))
    for uid, profile in (await repo.profiles(conn, api_key_id=api_key_id, ids=missing)).items():
        by_id[uid] = {"userId": uid, **({"email": profile["email"]} if profile["email"] else {})}
    for uid in missing:
        by_id.setdefault(uid, {"userId": uid})
    if allowed is not None:
        by_id = {k: v for k, v in by_id.items() if k in allowed}
    return {user_key(u): True for u in by_id.values()}, dict.fromkeys(sorted(by_id), True)


async def add(svc: Services, *, tenant: Tenant, data: AddNotification) -> dict[str, Any]:
    """Add a notification for `notifyUsers` (and every organization user unless notifyAll is false), in the inbox
    of those who take it there, and queued for the e-mail of those who take e-mail."""
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    notification_id = data.notificationId or new_id("ntf_")
    headline = data.displayHeadlineMessageTemplate or ""  # absent only for a notification resolver (schemas)
    body = data.displayBodyMessage or ""
    location = (data.location or {}).get("id")
    location_id = data.locationId or (location if isinstance(location, str) and 0 < len(location) <= 200 else None)
    async with transaction(svc.pool, svc.redis) as tx:
        if not await ensure_organization(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                         create=data.createOrganization, now=now):
            raise not_found("organization")
        if data.createDocument:
            await documents_repo.insert(tx.conn, **key, id=data.documentId, name=None, folder_id=None, now=now)
        actor = data.actionUser.model_dump(exclude_none=True)
        everyone = await repo.audience(tx.conn, **key, document_id=None, now_ms=now) if data.notifyAll else []
        allowed = visible_to(data.notificationSourceData, actor["userId"])
        listed = [u.model_dump(exclude_none=True) for u in data.notifyUsers]
        extra = [u for u in everyone if u != actor["userId"]]  # the whole organization, not the actor
        if data.verifyUserPermissions:
            access = set(await repo.audience(tx.conn, **key, document_id=data.documentId, now_ms=now))
            listed, extra = [u for u in listed if u["userId"] in access], [u for u in extra if u in access]
        if allowed is not None:
            listed, extra = [u for u in listed if u["userId"] in allowed], [u for u in extra if u in allowed]
        involved = [u["userId"] for u in listed]
        inbox = set(await preferences.allowed(tx.conn, **key, document_id=data.documentId, user_ids=[*involved, *extra],
                                              involved=involved, channel="inbox"))
        notify_users, by_user_id = await recipients_map(tx.conn, api_key_id=tenant.api_key_id,
                                                        users=[u for u in listed if u["userId"] in inbox],
                                                        extra_ids=[u for u in extra if u in inbox], allowed=allowed)
        added = await repo.insert(tx.conn, **key, id=notification_id, document_id=data.documentId,
                                  location_id=location_id, notification_source=data.notificationSource,
                                  notification_source_data=data.notificationSourceData, action_user=actor,
                                  display_body_message=body, display_headline_message_template=headline,
                                  display_headline_message_template_data=data.displayHeadlineMessageTemplateData,
                                  notify_users=notify_users, notify_users_by_user_id=by_user_id, visible_to=allowed,
                                  timestamp=now)
        if added:
            await webhook_events.emit(
                tx, now=now, api_key_id=tenant.api_key_id, event_type="notification.add",
                organization_id=data.organizationId, document_id=data.documentId, action_user=actor,
                user_ids=[actor["userId"], *by_user_id],
                payload=event_payload(id=notification_id, source=data.notificationSource,
                                      source_data=data.notificationSourceData, headline=headline,
                                      headline_data=data.displayHeadlineMessageTemplateData, body=body,
                                      notify_users=notify_users, by_user_id=by_user_id, timestamp=now))
            emails = {**dict.fromkeys(extra), **{u["userId"]: u.get("email") for u in listed}}
            await email.enqueue(tx.conn, settings=svc.settings, now=now, **key, document_id=data.documentId,
                                notification_id=notification_id, action_types=None, emails=emails, involved=involved,
                                headline=render(headline, data.displayHeadlineMessageTemplateData, actor), body=body)
    usage.count(svc, "notifications_sent", workspace_id=tenant.workspace_id, n=int(bool(added)))
    message = "Notification added successfully." if added else "Notification already exists."
    return {"success": True, "message": message, "id": notification_id}


async def get(svc: Services, *, tenant: Tenant, data: GetNotifications) -> tuple[list[dict[str, Any]], str | None]:
    """A page of notifications of a document and/or for a user, newest first by default, at most `pageSize`
    records and about `max_response_bytes` of JSON (at least one record)."""
    await require_advanced_queries(svc, tenant=tenant)
    # The token is bound to the filters and order: used with others it would skip or repeat rows.
    filters = data.model_dump(exclude={"pageSize", "pageToken"})
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "notifications", filters)
    after_ts, after_id = pager.after(data.pageToken, 2)
    budget = svc.settings.max_response_bytes
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    document_id=data.documentId, location_id=data.locationId, user_id=data.userId,
                                    ids=data.notificationIds, after_ts=after_ts, after_id=after_id,
                                    desc=data.order == "desc", limit=data.pageSize + 1, budget=budget)
    return pager.cut(rows, data.pageSize, "timestamp", "id", budget=budget,
                     render=lambda row: Notification.wire(row, tenant.api_key_id))


async def update(svc: Services, *, tenant: Tenant, data: UpdateNotifications) -> dict[str, Any]:
    """Change notifications' texts, actor or source data, or mark them read by users; by id, or (a change without
    one) every notification the request's documentId/locationId/userId match; keyed by id."""
    now = svc.now_ms()
    results: dict[str, Any] = {}
    scope = {"document_id": data.documentId, "location_id": data.locationId, "user_id": data.userId}
    async with transaction(svc.pool, svc.redis) as tx:
        access = None
        if data.verifyUserPermissions:  # only users with access to the document are marked as readers
            access = set(await repo.audience(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                             document_id=data.documentId, now_ms=now))
        for change in data.notifications:
            readers = change.readByUserIds
            if readers is not None and access is not None:
                readers = [u for u in readers if u in access]
            changed = await repo.update(
                tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId, id=change.id, **scope,
                display_headline_message_template=change.displayHeadlineMessageTemplate,
                display_headline_message_template_data=change.displayHeadlineMessageTemplateData,
                display_body_message=change.displayBodyMessage, notification_source_data=change.notificationSourceData,
                action_user=change.actionUser.model_dump(exclude_none=True) if change.actionUser else None,
                visible_to=visible_to(change.notificationSourceData), read_by=readers, now=now, limit=MAX_BATCH)
            for i in changed if change.id is None else [change.id]:
                found = i in changed
                message = "Notification updated." if found else not_found_message("notification")
                results[i] = {"success": found, "id": i, "message": message}
    return results


async def delete(svc: Services, *, tenant: Tenant, data: DeleteNotifications) -> dict[str, Any]:
    """Delete notifications by id, document, location and/or user (a user leaves shared ones); keyed by id."""
    async with transaction(svc.pool, svc.redis) as tx:
        deleted = set(await repo.delete(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                        document_id=data.documentId, location_id=data.locationId, user_id=data.userId,
                                        ids=data.notificationIds, now=svc.now_ms()))
    ids = data.notificationIds or sorted(deleted)
    return {
        i: {
            "success": i in deleted, "id": i,
            "message": "Notification deleted." if i in deleted else not_found_message("notification")
        }
        for i in ids
    }
