"""SQL of advanced webhooks: endpoints, messages, deliveries, attempts; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def lock_api_key(conn: Conn, *, api_key_id: str) -> None:
    """Serialise endpoint creation per API key (the endpoint cap) for the rest of the transaction."""
    await execute(conn, q.lock_api_key, {"api_key_id": api_key_id})


async def count_endpoints(conn: Conn, *, api_key_id: str) -> int:
    return (await fetch_row(conn, q.count_endpoints, {"api_key_id": api_key_id}))["n"]


async def insert_endpoint(conn: Conn, *, api_key_id: str, id: str, url: str, description: str,
                          filter_types: list[str] | None, channels: list[str] | None, disabled: bool,
                          rate_limit: int | None, uid: str | None, metadata: dict[str, Any] | None, secret_enc: bytes,
                          now: int) -> dict[str, Any]:
    row = {
        "api_key_id": api_key_id, "id": id, "url": url, "description": description, "filter_types": filter_types,
        "channels": channels, "disabled": disabled, "rate_limit": rate_limit, "uid": uid, "metadata": Jsonb(metadata),
        "secret_enc": secret_enc, "now": now
    }
    return await fetch_row(conn, q.insert_endpoint, row)


async def get_endpoint(conn: Conn, *, api_key_id: str, ref: str) -> dict[str, Any] | None:
    """An endpoint by id or uid."""
    return await fetch_one(conn, q.get_endpoint, {"api_key_id": api_key_id, "ref": ref})


async def list_endpoints(conn: Conn, *, api_key_id: str, after_ts: int | None, after_id: str | None,
                         before_ts: int | None, before_id: str | None, backward: bool,
                         limit: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "after_ts": after_ts, "after_id": after_id, "before_ts": before_ts,
        "before_id": before_id, "backward": backward, "limit": limit
    }
    return await fetch_all(conn, q.list_endpoints, filters)


_SETTABLE = ("url", "description", "filter_types", "channels", "disabled", "rate_limit", "uid", "metadata")


async def update_endpoint(conn: Conn, *, api_key_id: str, id: str, changes: dict[str, Any], now: int) -> dict[str, Any]:
    """Change only the columns named in `changes`."""
    params: dict[str, Any] = {"api_key_id": api_key_id, "id": id, "now": now}
    for column in _SETTABLE:
        params[f"set_{column}"] = column in changes
        value = changes.get(column)
        params[column] = Jsonb(value) if column == "metadata" and value is not None else value
    return await fetch_row(conn, q.update_endpoint, params)


async def delete_endpoint(conn: Conn, *, api_key_id: str, id: str) -> bool:
    return await fetch_one(conn, q.delete_endpoint, {"api_key_id": api_key_id, "id": id}) is not None


async def rotate_secret(conn: Conn, *, api_key_id: str, id: str, until: int, secret_enc: bytes, now: int) -> None:
    change = {"api_key_id": api_key_id, "until": until, "secret_enc": secret_enc, "id": id, "now": now}
    await execute(conn, q.rotate_secret, change)


async def event_targets(conn: Conn, *, api_key_id: str, event_type: str, channels: list[str]) -> dict[str, Any]:
    """{webhook_config, advanced: ids of the enabled endpoints that take the event, basic: the basic service's
    endpoint rows {id, url, disabled}} in one read."""
    params = {"api_key_id": api_key_id, "event_type": event_type, "channels": channels}
    found = await fetch_one(conn, q.event_targets, params)
    return found or {"webhook_config": None, "advanced": [], "basic": []}  # a key deleted since: nothing takes it


async def insert_message(conn: Conn, *, api_key_id: str, organization_id: str | None, id: str, event_type: str,
                         body: str | None, content_type: str, error: str | None, user_ids: list[str], now: int) -> bool:
    """Record a message; False when its id exists already (a repeated one-off event)."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "id": id, "event_type": event_type, "body": body,
        "content_type": content_type, "error": error, "user_ids": user_ids, "now": now
    }
    return await fetch_one(conn, q.insert_message, row) is not None


async def insert_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, status: str,
                          max_attempts: int, last_error: str | None, now: int) -> None:
    row = {
        "api_key_id": api_key_id, "message_id": message_id, "endpoint_id": endpoint_id, "status": status,
        "max_attempts": max_attempts, "last_error": last_error, "now": now
    }
    await execute(conn, q.insert_delivery, row)


async def due_deliveries(conn: Conn, *, limit: int, now: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.due_deliveries, {"now": now, "limit": limit})


async def queue_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, now: int) -> None:
    key = {"api_key_id": api_key_id, "message_id": message_id, "endpoint_id": endpoint_id, "now": now}
    await execute(conn, q.queue_delivery, key)


async def claim_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, lease_until: int,
                         attempt: int, now: int) -> dict[str, Any] | None:
    """Take one attempt of a queued delivery, with its endpoint and message; None when it is not this attempt's."""
    key = {
        "api_key_id": api_key_id, "lease_until": lease_until, "message_id": message_id, "endpoint_id": endpoint_id,
        "attempt": attempt, "now": now
    }
    return await fetch_one(conn, q.claim_delivery, key)


async def reschedule_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, due_at: int,
                              now: int) -> None:
    key = {"api_key_id": api_key_id, "due_at": due_at, "message_id": message_id, "endpoint_id": endpoint_id, "now": now}
    await execute(conn, q.reschedule_delivery, key)


async def record_attempt(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, attempt: int,
                         status_code: int | None, response: str | None, transport_error: str | None, duration_ms: int,
                         status: str, due_at: int | None, error: str | None, now: int) -> None:
    """Store the attempt (with the transport's error, if any) and move the delivery on (succeeded, failed, or
    pending until due_at, with the delivery's `error`)."""
    key = {
        "api_key_id": api_key_id, "message_id": message_id, "endpoint_id": endpoint_id, "attempt": attempt, "now": now
    }
    await execute(
        conn, q.insert_attempt,
        {**key, "status_code": status_code, "response": response, "error": transport_error, "duration_ms": duration_ms})
    await execute(conn, q.finish_attempt, {**key, "status": status, "due_at": due_at, "error": error})


async def fail_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, error: str,
                        now: int) -> None:
    key = {"api_key_id": api_key_id, "error": error, "message_id": message_id, "endpoint_id": endpoint_id, "now": now}
    await execute(conn, q.fail_delivery, key)


async def endpoint_succeeded(conn: Conn, *, api_key_id: str, id: str) -> None:
    await execute(conn, q.endpoint_succeeded, {"api_key_id": api_key_id, "id": id})


async def endpoint_failed(conn: Conn, *, api_key_id: str, id: str, gone: bool, disable_after_ms: int, now: int) -> None:
    params = {"api_key_id": api_key_id, "gone": gone, "disable_after_ms": disable_after_ms, "id": id, "now": now}
    await execute(conn, q.endpoint_failed, params)


async def list_messages(conn: Conn, *, api_key_id: str, endpoint_id: str | None, after_ts: int | None,
                        after_id: str | None, limit: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "endpoint_id": endpoint_id, "after_ts": after_ts, "after_id": after_id, "limit": limit
    }
    return await fetch_all(conn, q.list_messages, filters)


async def list_attempts(conn: Conn, *, api_key_id: str, endpoint_id: str | None,
                        message_ids: list[str]) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "message_ids": message_ids, "endpoint_id": endpoint_id}
    return await fetch_all(conn, q.list_attempts, params)


async def lock_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str) -> dict[str, Any] | None:
    key = {"api_key_id": api_key_id, "message_id": message_id, "endpoint_id": endpoint_id}
    return await fetch_one(conn, q.lock_delivery, key)


async def requeue_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, now: int) -> None:
    key = {"api_key_id": api_key_id, "message_id": message_id, "endpoint_id": endpoint_id, "now": now}
    await execute(conn, q.requeue_delivery, key)


async def touch_crdt(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
                     user_id: str | None, due_at: int, now: int) -> None:
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "user_id": user_id, "due_at": due_at, "now": now
    }
    await execute(conn, q.touch_crdt, row)


async def due_crdt(conn: Conn, *, limit: int, now: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.due_crdt, {"now": now, "limit": limit})


async def delete_crdt(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str) -> None:
    key = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "editor_id": editor_id
    }
    await execute(conn, q.delete_crdt, key)


async def fail_crdt(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
                    retry_at: int) -> int:
    """Count a failed try of a CRDT window and make it due again later; the tries so far."""
    key = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "retry_at": retry_at
    }
    row = await fetch_one(conn, q.fail_crdt, key)
    return row["attempts"] if row else 0


async def give_up_delivery(conn: Conn, *, api_key_id: str, message_id: str, endpoint_id: str, error: str,
                           now: int) -> None:
    """Fail a delivery with a reason, recorded as its last attempt."""
    key = {"api_key_id": api_key_id, "error": error, "message_id": message_id, "endpoint_id": endpoint_id, "now": now}
    await execute(conn, q.give_up_delivery, key)


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> None:
    """Delete the messages about these users (with deliveries and attempts) and their pending CRDT marks."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    await execute(conn, q.forget_user, params)
    await execute(conn, q.forget_crdt_user, params)


async def put_basic_endpoint(conn: Conn, *, api_key_id: str, id: str, url: str, now: int) -> None:
    """Create a basic-service endpoint or point it at a new URL (on again, its failure clock afresh)."""
    await execute(conn, q.put_basic_endpoint, {"api_key_id": api_key_id, "id": id, "url": url, "now": now})


async def enable_basic_endpoints(conn: Conn, *, api_key_id: str, now: int) -> None:
    await execute(conn, q.enable_basic_endpoints, {"api_key_id": api_key_id, "now": now})
