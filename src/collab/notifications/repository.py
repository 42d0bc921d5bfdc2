"""SQL of notifications and the notification service's batches; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)
JSON_COLUMNS = ("notification_source_data", "action_user", "display_headline_message_template_data", "notify_users",
                "notify_users_by_user_id", "entity_data")


def _json(row: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if k in JSON_COLUMNS and v is not None else v for k, v in row.items()}


async def insert(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None, id: str,
                 location_id: str | None, notification_source: str, notification_source_data: Any,
                 action_user: dict[str, Any], display_body_message: str | None,
                 display_headline_message_template: str | None, display_headline_message_template_data: Any,
                 notify_users: Any, notify_users_by_user_id: Any, visible_to: list[str] | None, timestamp: int) -> bool:
    """Store a notification; False when its id exists already."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "id": id,
        "location_id": location_id, "notification_source": notification_source,
        "notification_source_data": notification_source_data, "action_user": action_user,
        "display_body_message": display_body_message,
        "display_headline_message_template": display_headline_message_template,
        "display_headline_message_template_data": display_headline_message_template_data, "notify_users": notify_users,
        "notify_users_by_user_id": notify_users_by_user_id, "visible_to": visible_to, "timestamp": timestamp
    }
    return await fetch_one(conn, q.insert_notification, _json(row)) is not None


async def audience(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                   now_ms: int) -> list[str]:
    """Users with live access to the document (or the organization's own users when None)."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "now_ms": now_ms
    }
    return sorted(r["user_id"] for r in await fetch_all(conn, q.audience, params))


async def profiles(conn: Conn, *, api_key_id: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in await fetch_all(conn, q.profiles, {"api_key_id": api_key_id, "ids": ids})}


async def list_page(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                    location_id: str | None, user_id: str | None, ids: list[str] | None, after_ts: int | None,
                    desc: bool, after_id: str | None, limit: int, budget: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "location_id": location_id, "user_id": user_id, "ids": ids, "after_ts": after_ts, "desc": desc,
        "after_id": after_id, "limit": limit, "budget": budget
    }
    return await fetch_all(conn, q.list_notifications, filters)


async def update(conn: Conn, *, api_key_id: str, organization_id: str, display_headline_message_template: str | None,
                 display_headline_message_template_data: Any, display_body_message: str | None,
                 notification_source_data: Any, visible_to: list[str] | None, read_by: list[str] | None, id: str,
                 now: int) -> bool:
    change = {
        "api_key_id": api_key_id, "organization_id": organization_id,
        "display_headline_message_template": display_headline_message_template,
        "display_headline_message_template_data": display_headline_message_template_data,
        "display_body_message": display_body_message, "notification_source_data": notification_source_data,
        "visible_to": visible_to, "read_by": read_by, "id": id, "now": now
    }
    return await fetch_one(conn, q.update_notification, _json(change)) is not None


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                 ids: list[str] | None) -> list[str]:
    filters = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "ids": ids}
    return [r["id"] for r in await fetch_all(conn, q.delete_notifications, filters)]


async def open_batch(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None, id: str,
                     batch_key: str, recipient: str, max_size: int, due_at: int, now: int) -> dict[str, Any]:
    """The open batch of a key, locked; opened first when there is none."""
    batch = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "id": id,
        "batch_key": batch_key, "recipient": recipient, "max_size": max_size, "due_at": due_at, "now": now
    }
    while True:
        await execute(conn, q.open_batch, batch)
        found = await fetch_one(conn, q.lock_open_batch, batch)
        if found is not None:
            return found
        # A concurrent event filled and closed the open batch while we waited for its lock: open the next one.


async def add_item(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None, batch_id: str,
                   activity_id: str, action_type: str, action_user: dict[str, Any], entity_data: Any,
                   recipients: list[str], visible_to: list[str] | None, now: int, closed_due_at: int) -> None:
    """Put an event into a batch (once per activity); the batch closes when full."""
    item = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "batch_id": batch_id,
        "activity_id": activity_id, "action_type": action_type, "action_user": action_user, "entity_data": entity_data,
        "recipients": recipients, "visible_to": visible_to, "now": now
    }
    if await fetch_one(conn, q.add_item, _json(item)) is not None:
        await execute(conn, q.grow_batch, {"api_key_id": api_key_id, "id": batch_id, "closed_due_at": closed_due_at})


async def due_batches(conn: Conn, *, api_key_id: str | None, now: int, limit: int) -> list[dict[str, Any]]:
    """Batches whose time has come, locked (others flushing at once skip them)."""
    return await fetch_all(conn, q.due_batches, {"api_key_id": api_key_id, "now": now, "limit": limit})


async def batch_items(conn: Conn, *, api_key_id: str, batch_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.batch_items, {"api_key_id": api_key_id, "batch_id": batch_id})


async def mark_flushed(conn: Conn, *, api_key_id: str, id: str, notification_id: str | None) -> None:
    await execute(conn, q.mark_flushed, {"api_key_id": api_key_id, "id": id, "notification_id": notification_id})


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> None:
    """Delete the users' notifications and pending events; untag them (@mentions, recipients) elsewhere."""
    found = await profiles(conn, api_key_id=api_key_id, ids=user_ids)
    keys = sorted(set(user_ids) | {p["email"] for p in found.values() if p["email"]})
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids, "user_keys": keys}
    for sql in (q.forget_created, q.forget_pending, q.untag_pending, q.untag_notifications):
        await execute(conn, sql, params)


async def fail_batch(conn: Conn, *, api_key_id: str, id: str, error: str, retry_at: int, max_attempts: int) -> None:
    """Count a failed flush of a batch: due again at retry_at, or `failed` after max_attempts."""
    params = {"api_key_id": api_key_id, "id": id, "error": error, "retry_at": retry_at, "max_attempts": max_attempts}
    await execute(conn, q.fail_batch, params)
