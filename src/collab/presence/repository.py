"""SQL of presence; executes, never commits."""

from typing import Any

from collab.kit.db import Queries, execute, fetch_all
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def upsert(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, user_id: str, name: str | None,
                 email: str | None, status: str, last_seen: int) -> None:
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "user_id": user_id,
        "name": name, "email": email, "status": status, "last_seen": last_seen
    }
    await execute(conn, q.upsert_presence, row)


async def list_users(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id}
    return await fetch_all(conn, q.list_presence, params)


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, user_ids: list[str]) -> int:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "user_ids": user_ids
    }
    return await execute(conn, q.delete_presence, params)


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> int:
    """Delete the users' presence on every document (only in these organizations when given)."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    return await execute(conn, q.forget_user, params)
