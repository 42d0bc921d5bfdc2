"""SQL of users, groups and user-data deletions; executes, never commits."""

from typing import Any

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def upsert(conn: Conn, *, api_key_id: str, id: str, now: int, name: str | None = None, email: str | None = None) -> None:
    """Create a user's profile, or change the fields given."""
    await execute(conn, q.upsert_user, {"api_key_id": api_key_id, "id": id, "name": name, "email": email, "now": now})


async def scope_grant(conn: Conn, **scope: Any) -> dict[str, Any] | None:
    """The user's own live grant on the scope resource, locked for update."""
    return await fetch_one(conn, q.scope_grant, scope)


async def set_scope_role(conn: Conn, **scope: Any) -> None:
    await execute(conn, q.set_scope_role, scope)


async def delete_scope_grant(conn: Conn, **scope: Any) -> bool:
    return await execute(conn, q.delete_scope_grant, scope) > 0


async def delete_user_grants(
    conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None
) -> set[str]:
    """Drop users' grants and group memberships; the users who had any."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    return {r["user_id"] for r in await fetch_all(conn, q.delete_user_grants, params)}


async def list_page(conn: Conn, **filters: Any) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.list_users, filters)


async def insert_group(conn: Conn, **row: Any) -> bool:
    return await fetch_one(conn, q.insert_group, row) is not None


async def insert_member(conn: Conn, **row: Any) -> bool:
    return await fetch_one(conn, q.insert_member, row) is not None


async def delete_member(conn: Conn, **row: Any) -> bool:
    return await fetch_one(conn, q.delete_member, row) is not None


async def insert_deletion(conn: Conn, **row: Any) -> None:
    await execute(conn, q.insert_deletion, row)


async def get_deletion(conn: Conn, *, api_key_id: str, id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_deletion, {"api_key_id": api_key_id, "id": id})


async def task_done(conn: Conn, *, api_key_id: str, id: str, task: str, now: int) -> None:
    await execute(conn, q.task_done, {"api_key_id": api_key_id, "id": id, "task": task, "now": now})


async def delete_user_activities(conn: Conn, **scope: Any) -> int:
    return await execute(conn, q.delete_user_activities, scope)


async def delete_contacts(conn: Conn, **scope: Any) -> int:
    return await execute(conn, q.delete_contacts, scope)
