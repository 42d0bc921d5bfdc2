"""SQL of users, groups and user-data deletions; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def update_users(conn: Conn, *, api_key_id: str, organization_id: str, users: list[dict[str, Any]],
                       resource_type: str, resource_id: str, now: int) -> set[str]:
    """Change the profile and scope role of the `users` ({userId, name, email, accessRole}) with a live grant of
    their own on the scope resource, in one statement (`now` in ms); the ids of the users updated."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "resource_type": resource_type,
        "resource_id": resource_id, "now": now, "user_ids": [u["userId"]
                                                             for u in users], "names": [u.get("name") for u in users],
        "emails": [u.get("email") for u in users], "roles": [u.get("accessRole") for u in users]
    }
    return set((await fetch_row(conn, q.update_users, params))["updated"])


async def delete_scope_grant(conn: Conn, *, api_key_id: str, organization_id: str, user_id: str, resource_type: str,
                             resource_id: str) -> bool:
    scope = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_id": user_id,
        "resource_type": resource_type, "resource_id": resource_id
    }
    return await execute(conn, q.delete_scope_grant, scope) > 0


async def delete_user_grants(conn: Conn, *, api_key_id: str, user_ids: list[str],
                             organization_ids: list[str] | None) -> set[str]:
    """Drop users' grants and group memberships; the users who had any."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    return {r["user_id"] for r in await fetch_all(conn, q.delete_user_grants, params)}


async def list_page(conn: Conn, *, api_key_id: str, organization_id: str, resource_type: str, resource_id: str | None,
                    user_ids: list[str] | None, group_ids: list[str] | None, after_resource: str | None,
                    after_user: str | None, limit: int, now_ms: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "resource_type": resource_type,
        "resource_id": resource_id, "user_ids": user_ids, "group_ids": group_ids, "after_resource": after_resource,
        "after_user": after_user, "limit": limit, "now_ms": now_ms
    }
    return await fetch_all(conn, q.list_users, filters)


async def insert_group(conn: Conn, *, api_key_id: str, organization_id: str, id: str, name: str | None,
                       now: int) -> bool:
    row = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id, "name": name, "now": now}
    return await fetch_one(conn, q.insert_group, row) is not None


async def insert_member(conn: Conn, *, api_key_id: str, organization_id: str, group_id: str, user_id: str) -> bool:
    row = {"api_key_id": api_key_id, "organization_id": organization_id, "group_id": group_id, "user_id": user_id}
    return await fetch_one(conn, q.insert_member, row) is not None


async def delete_member(conn: Conn, *, api_key_id: str, organization_id: str, group_id: str, user_id: str) -> bool:
    row = {"api_key_id": api_key_id, "organization_id": organization_id, "group_id": group_id, "user_id": user_id}
    return await fetch_one(conn, q.delete_member, row) is not None


async def insert_deletion(conn: Conn, *, api_key_id: str, id: str, user_ids: list[str],
                          organization_ids: list[str] | None, tasks: list[str], now: int) -> None:
    row = {
        "api_key_id": api_key_id, "id": id, "user_ids": user_ids, "organization_ids": organization_ids, "tasks": tasks,
        "now": now
    }
    await execute(conn, q.insert_deletion, row)


async def get_deletion(conn: Conn, *, api_key_id: str, id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_deletion, {"api_key_id": api_key_id, "id": id})


async def task_done(conn: Conn, *, api_key_id: str, id: str, task: str, now: int) -> None:
    await execute(conn, q.task_done, {"api_key_id": api_key_id, "id": id, "task": task, "now": now})


async def delete_user_activities(conn: Conn, *, api_key_id: str, user_ids: list[str],
                                 organization_ids: list[str] | None) -> int:
    scope = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    return await execute(conn, q.delete_user_activities, scope)


async def delete_contacts(conn: Conn, *, api_key_id: str, user_ids: list[str],
                          organization_ids: list[str] | None) -> int:
    scope = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    return await execute(conn, q.delete_contacts, scope)


async def _export_after_id(conn: Conn, sql: str, *, api_key_id: str, user_ids: list[str],
                           organization_ids: list[str] | None, after: list[Any] | None,
                           limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids,
        "after_id": after[0] if after else None, "limit": limit
    }
    return await fetch_all(conn, sql, params)


async def export_notifications(conn: Conn, **scope: Any) -> list[dict[str, Any]]:
    """Export: the notifications the users caused, receive or read, after `after` ([id])."""
    return await _export_after_id(conn, q.export_notifications, **scope)


async def export_activities(conn: Conn, **scope: Any) -> list[dict[str, Any]]:
    """Export: the activities the users performed, after `after` ([id])."""
    return await _export_after_id(conn, q.export_activities, **scope)


async def export_recordings(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None,
                            after: list[Any] | None, limit: int) -> list[dict[str, Any]]:
    """Export: the recording versions the users made, after `after` ([organization, annotation, version])."""
    org, annotation, version = after or (None, None, None)
    params = {
        "api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids, "after_org": org,
        "after_annotation": annotation, "after_version": version, "limit": limit
    }
    return await fetch_all(conn, q.export_recordings, params)


async def count_users(conn: Conn, *, api_key_id: str, organization_id: str, resource_type: str, resource_id: str | None,
                      user_id: str | None, now_ms: int) -> int:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "resource_type": resource_type,
        "resource_id": resource_id, "user_id": user_id, "now_ms": now_ms
    }
    return (await fetch_row(conn, q.count_users, params))["count"]


async def document_users(conn: Conn, *, api_key_id: str, organization_id: str, user_ids: list[str] | None,
                         involved: bool, after_user: str | None, limit: int, now_ms: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_ids": user_ids, "involved": involved,
        "after_user": after_user, "limit": limit, "now_ms": now_ms
    }
    return await fetch_all(conn, q.document_users, params)


async def list_groups(conn: Conn, *, api_key_id: str, organization_id: str, ids: list[str] | None, after_id: str | None,
                      limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "ids": ids, "after_id": after_id, "limit": limit
    }
    return await fetch_all(conn, q.list_groups, params)


async def delete_all_members(conn: Conn, *, api_key_id: str, organization_id: str, group_id: str) -> list[str]:
    """Empty a group; the users taken out, in id order."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "group_id": group_id}
    return sorted(r["user_id"] for r in await fetch_all(conn, q.delete_all_members, params))


async def insert_invitation(conn: Conn, *, api_key_id: str, organization_id: str, id: str, type: str,
                            folder_id: str | None, document_id: str | None, email: str, organization_name: str | None,
                            folder_name: str | None, document_name: str | None, invited_by: dict[str, Any] | None,
                            now: int) -> dict[str, Any] | None:
    """Invite an e-mail to a target; None when a pending or accepted invitation is there already."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "id": id, "type": type, "folder_id": folder_id,
        "document_id": document_id, "email": email, "organization_name": organization_name, "folder_name": folder_name,
        "document_name": document_name, "invited_by": Jsonb(invited_by) if invited_by is not None else None, "now": now
    }
    return await fetch_one(conn, q.insert_invitation, row)


async def get_invitation(conn: Conn, *, api_key_id: str, organization_id: str, type: str, resource_id: str,
                         email: str) -> dict[str, Any] | None:
    key = {
        "api_key_id": api_key_id, "organization_id": organization_id, "type": type, "resource_id": resource_id,
        "email": email
    }
    return await fetch_one(conn, q.get_invitation, key)


async def respond_invitation(conn: Conn, *, api_key_id: str, organization_id: str, type: str, resource_id: str,
                             email: str, status: str, user_id: str | None, now: int) -> dict[str, Any] | None:
    """Answer a pending invitation; None when there is none pending."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "type": type, "resource_id": resource_id,
        "email": email, "status": status, "user_id": user_id, "now": now
    }
    return await fetch_one(conn, q.respond_invitation, params)


async def list_invitations(conn: Conn, *, api_key_id: str, organization_id: str, email: str | None, status: str | None,
                           type: str | None, after_email: str | None, after_id: str | None,
                           limit: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "email": email, "status": status, "type": type,
        "after_email": after_email, "after_id": after_id, "limit": limit
    }
    return await fetch_all(conn, q.list_invitations, filters)


async def count_pending_invitations(conn: Conn, *, api_key_id: str, organization_id: str, type: str) -> int:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "type": type}
    return (await fetch_row(conn, q.count_pending_invitations, params))["count"]
