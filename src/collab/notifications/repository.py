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


async def update(conn: Conn, *, api_key_id: str, organization_id: str, id: str | None, document_id: str | None,
                 location_id: str | None, user_id: str | None, display_headline_message_template: str | None,
                 display_headline_message_template_data: Any, display_body_message: str | None,
                 notification_source_data: Any, action_user: Any, visible_to: list[str] | None,
                 read_by: list[str] | None, now: int, limit: int) -> list[str]:
    """Change the notification `id` (or, with None, every one the filters match, at most `limit`); the ids changed."""
    change = {
        "api_key_id": api_key_id, "organization_id": organization_id, "id": id, "document_id": document_id,
        "location_id": location_id, "user_id": user_id,
        "display_headline_message_template": display_headline_message_template,
        "display_headline_message_template_data": display_headline_message_template_data,
        "display_body_message": display_body_message, "notification_source_data": notification_source_data,
        "action_user": action_user, "visible_to": visible_to, "read_by": read_by, "now": now, "limit": limit
    }
    return sorted(r["id"] for r in await fetch_all(conn, q.update_matching, _json(change)))


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None, location_id: str | None,
                 user_id: str | None, ids: list[str] | None, now: int) -> list[str]:
    """Delete the matching notifications; with a user, the user leaves those that others also have. The ids gone."""
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "location_id": location_id, "user_id": user_id, "ids": ids, "now": now
    }
    gone = [r["id"] for r in await fetch_all(conn, q.delete_matching, filters)]
    if user_id is not None:
        found = await profiles(conn, api_key_id=api_key_id, ids=[user_id])
        keys = [user_id, *([found[user_id]["email"]] if user_id in found and found[user_id]["email"] else [])]
        gone += [r["id"] for r in await fetch_all(conn, q.untag_matching, {**filters, "user_keys": keys})]
    return sorted(gone)


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
    for sql in (q.forget_created, q.forget_pending, q.untag_pending, q.untag_notifications, q.forget_preferences):
        await execute(conn, sql, params)


async def fail_batch(conn: Conn, *, api_key_id: str, id: str, error: str, retry_at: int, max_attempts: int) -> None:
    """Count a failed flush of a batch: due again at retry_at, or `failed` after max_attempts."""
    params = {"api_key_id": api_key_id, "id": id, "error": error, "retry_at": retry_at, "max_attempts": max_attempts}
    await execute(conn, q.fail_batch, params)


# Preferences (notifications/config) and e-mail.


async def preferences(conn: Conn, *, api_key_id: str, organization_id: str, user_ids: list[str],
                      document_ids: list[str]) -> list[dict[str, Any]]:
    """Stored preference rows of the users at the organization level ('') and the given documents."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_ids": user_ids,
        "document_ids": ["", *document_ids]
    }
    return await fetch_all(conn, q.preferences, params)


async def set_preferences(conn: Conn, *, api_key_id: str, organization_id: str, user_ids: list[str],
                          document_ids: list[str], inbox: str | None, email: str | None, slack: str | None,
                          now: int) -> None:
    """Set channels of every user at every level (document id, or "" for the organization)."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_ids": user_ids,
        "document_ids": document_ids, "inbox": inbox, "email": email, "slack": slack, "now": now
    }
    await execute(conn, q.set_preferences, row)


async def email_off(conn: Conn, *, api_key_id: str, organization_id: str, user_id: str, now: int) -> None:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "user_id": user_id, "now": now}
    await execute(conn, q.email_off, params)


async def cancel_emails(conn: Conn, *, api_key_id: str, organization_id: str, user_ids: list[str], reason: str,
                        now: int) -> None:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_ids": user_ids, "reason": reason, "now": now
    }
    await execute(conn, q.cancel_emails, params)


async def email_config(conn: Conn, *, api_key_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.email_config, {"api_key_id": api_key_id})


async def save_email_config(conn: Conn, *, api_key_id: str, use_email_service: bool, config: dict[str, Any],
                            api_key_enc: bytes | None, api_key_last4: str | None, smtp_password_enc: bytes | None,
                            clear_api_key: bool, clear_smtp_password: bool, now: int) -> dict[str, Any]:
    row = {
        "api_key_id": api_key_id, "use_email_service": use_email_service, "config": Jsonb(config),
        "api_key_enc": api_key_enc, "api_key_last4": api_key_last4, "smtp_password_enc": smtp_password_enc,
        "clear_api_key": clear_api_key, "clear_smtp_password": clear_smtp_password, "now": now
    }
    saved = await fetch_one(conn, q.save_email_config, row)
    assert saved is not None
    return saved


async def open_email(conn: Conn, *, api_key_id: str, id: str, organization_id: str, user_id: str, email: str,
                     status: str, due_at: int, now: int) -> dict[str, Any]:
    """The open e-mail of a user in an organization, locked; opened first when there is none."""
    row = {
        "api_key_id": api_key_id, "id": id, "organization_id": organization_id, "user_id": user_id, "email": email,
        "status": status, "due_at": due_at, "now": now
    }
    if status != "open":  # a skipped e-mail is recorded, never joined
        await execute(conn, q.open_email, row)
        return {"id": id}
    while True:
        await execute(conn, q.open_email, row)
        found = await fetch_one(conn, q.lock_open_email, row)
        if found is not None:
            return found


async def add_email_item(conn: Conn, *, api_key_id: str, email_id: str, email: str, notification_id: str,
                         document_id: str | None, headline: str, body: str, max_size: int, now: int) -> None:
    item = {
        "api_key_id": api_key_id, "email_id": email_id, "email": email, "notification_id": notification_id,
        "document_id": document_id, "headline": headline, "body": body, "max_size": max_size, "now": now
    }
    await execute(conn, q.add_email_item, item)


async def emails_today(conn: Conn, *, api_key_id: str, since: int) -> int:
    row = await fetch_one(conn, q.emails_today, {"api_key_id": api_key_id, "since": since})
    return row["n"] if row else 0


async def workspace_emails_today(conn: Conn, *, api_key_id: str, since: int) -> int:
    row = await fetch_one(conn, q.workspace_emails_today, {"api_key_id": api_key_id, "since": since})
    return row["n"] if row else 0


async def due_emails(conn: Conn, *, now: int, limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.due_emails, {"now": now, "limit": limit})


async def mark_email_sending(conn: Conn, *, api_key_id: str, id: str, lease_until: int, now: int) -> None:
    await execute(conn, q.mark_email_sending,
                  {"api_key_id": api_key_id, "id": id, "lease_until": lease_until, "now": now})


async def claim_email(conn: Conn, *, api_key_id: str, id: str, attempts: int) -> dict[str, Any] | None:
    return await fetch_one(conn, q.claim_email, {"api_key_id": api_key_id, "id": id, "attempts": attempts})


async def email_items(conn: Conn, *, api_key_id: str, email_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.email_items, {"api_key_id": api_key_id, "email_id": email_id})


async def finish_email(conn: Conn, *, api_key_id: str, id: str, attempts: int, status: str, provider: str | None,
                       subject: str | None, error: str | None, due_at: int | None, now: int) -> None:
    row = {
        "api_key_id": api_key_id, "id": id, "attempts": attempts, "status": status, "provider": provider,
        "subject": subject, "error": error, "due_at": due_at, "now": now
    }
    await execute(conn, q.finish_email, row)


async def email_counts(conn: Conn, *, api_key_id: str) -> dict[str, int]:
    return {r["status"]: r["n"] for r in await fetch_all(conn, q.email_counts, {"api_key_id": api_key_id})}


async def recent_emails(conn: Conn, *, api_key_id: str, user_id: str | None, status: str | None,
                        limit: int) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "user_id": user_id, "status": status, "limit": limit}
    return await fetch_all(conn, q.recent_emails, params)


async def workspace_owner(conn: Conn, *, workspace_id: str) -> str | None:
    row = await fetch_one(conn, q.workspace_owner, {"workspace_id": workspace_id})
    return row["owner_email"] if row else None


async def owned_workspaces(conn: Conn, *, email: str, limit: int) -> list[dict[str, Any]]:
    """The workspaces `email` owns (by id), at most `limit`."""
    return await fetch_all(conn, q.owned_workspaces, {"email": email, "limit": limit})


# Slack (notifications/slack.py)


async def save_slack_webhook(conn: Conn, *, api_key_id: str, webhook_enc: bytes | None, webhook_hint: str | None,
                             now: int) -> dict[str, Any]:
    row = {"api_key_id": api_key_id, "webhook_enc": webhook_enc, "webhook_hint": webhook_hint, "now": now}
    saved = await fetch_one(conn, q.save_slack_webhook, row)
    assert saved is not None
    return saved


async def open_slack(conn: Conn, *, api_key_id: str, id: str, organization_id: str, user_id: str, status: str,
                     due_at: int, now: int) -> dict[str, Any]:
    """The open Slack message of a user in an organization, locked; opened first when there is none."""
    row = {
        "api_key_id": api_key_id, "id": id, "organization_id": organization_id, "user_id": user_id, "status": status,
        "due_at": due_at, "now": now
    }
    if status != "open":  # a skipped message is recorded, never joined
        await execute(conn, q.open_slack, row)
        return {"id": id}
    while True:
        await execute(conn, q.open_slack, row)
        found = await fetch_one(conn, q.lock_open_slack, row)
        if found is not None:
            return found


async def add_slack_item(conn: Conn, *, api_key_id: str, message_id: str, notification_id: str, document_id: str | None,
                         headline: str, body: str, max_size: int, now: int) -> None:
    item = {
        "api_key_id": api_key_id, "message_id": message_id, "notification_id": notification_id,
        "document_id": document_id, "headline": headline, "body": body, "max_size": max_size, "now": now
    }
    await execute(conn, q.add_slack_item, item)


async def slack_today(conn: Conn, *, api_key_id: str, since: int) -> int:
    row = await fetch_one(conn, q.slack_today, {"api_key_id": api_key_id, "since": since})
    return row["n"] if row else 0


async def due_slack(conn: Conn, *, now: int, limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.due_slack, {"now": now, "limit": limit})


async def mark_slack_sending(conn: Conn, *, api_key_id: str, id: str, lease_until: int, now: int) -> None:
    await execute(conn, q.mark_slack_sending,
                  {"api_key_id": api_key_id, "id": id, "lease_until": lease_until, "now": now})


async def claim_slack(conn: Conn, *, api_key_id: str, id: str, attempts: int) -> dict[str, Any] | None:
    return await fetch_one(conn, q.claim_slack, {"api_key_id": api_key_id, "id": id, "attempts": attempts})


async def slack_items(conn: Conn, *, api_key_id: str, message_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.slack_items, {"api_key_id": api_key_id, "message_id": message_id})


async def finish_slack(conn: Conn, *, api_key_id: str, id: str, attempts: int, status: str, error: str | None,
                       due_at: int | None, now: int) -> None:
    row = {
        "api_key_id": api_key_id, "id": id, "attempts": attempts, "status": status, "error": error, "due_at": due_at,
        "now": now
    }
    await execute(conn, q.finish_slack, row)


async def cancel_slack(conn: Conn, *, api_key_id: str, organization_id: str, user_ids: list[str], reason: str,
                       now: int) -> None:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_ids": user_ids, "reason": reason, "now": now
    }
    await execute(conn, q.cancel_slack, params)


async def slack_counts(conn: Conn, *, api_key_id: str) -> dict[str, int]:
    return {r["status"]: r["n"] for r in await fetch_all(conn, q.slack_counts, {"api_key_id": api_key_id})}


async def recent_slack(conn: Conn, *, api_key_id: str, user_id: str | None, status: str | None,
                       limit: int) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "user_id": user_id, "status": status, "limit": limit}
    return await fetch_all(conn, q.recent_slack, params)
