"""SQL of notifications and the notification service's batches; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)
JSON_COLUMNS = ("notification_source_data", "action_user", "display_headline_message_template_data",
                "notify_users", "notify_users_by_user_id", "entity_data")


def _json(row: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if k in JSON_COLUMNS and v is not None else v for k, v in row.items()}


async def insert(conn: Conn, **row: Any) -> bool:
    """Store a notification; False when its id exists already."""
    return await fetch_one(conn, q.insert_notification, _json(row)) is not None


async def audience(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None, now_ms: int) -> list[str]:
    """Users with live access to the document (or the organization's own users when None)."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "now_ms": now_ms}
    return sorted(r["user_id"] for r in await fetch_all(conn, q.audience, params))


async def profiles(conn: Conn, *, api_key_id: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in await fetch_all(conn, q.profiles, {"api_key_id": api_key_id, "ids": ids})}


async def list_page(conn: Conn, **filters: Any) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.list_notifications, filters)


async def update(conn: Conn, **change: Any) -> bool:
    return await fetch_one(conn, q.update_notification, _json(change)) is not None


async def delete(conn: Conn, **filters: Any) -> list[str]:
    return [r["id"] for r in await fetch_all(conn, q.delete_notifications, filters)]


async def open_batch(conn: Conn, **batch: Any) -> dict[str, Any]:
    """The open batch of a key, locked; opened first when there is none."""
    while True:
        await execute(conn, q.open_batch, batch)
        found = await fetch_one(conn, q.lock_open_batch, batch)
        if found is not None:
            return found
        # A concurrent event filled and closed the open batch while we waited for its lock: open the next one.


async def add_item(conn: Conn, *, closed_due_at: int, **item: Any) -> None:
    """Put an event into a batch (once per activity); the batch closes when full."""
    if await fetch_one(conn, q.add_item, _json(item)) is not None:
        await execute(conn, q.grow_batch, {"api_key_id": item["api_key_id"], "id": item["batch_id"],
                                           "closed_due_at": closed_due_at})


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
