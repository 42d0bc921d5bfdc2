"""SQL of organizations; executes, never commits."""

from typing import Any

from collab.kit.db import Queries, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def insert(conn: Conn, *, api_key_id: str, id: str, name: str | None, now: int) -> bool:
    """Create an organization; False when it exists already."""
    params = {"api_key_id": api_key_id, "id": id, "name": name, "now": now}
    return await fetch_one(conn, q.insert_organization, params) is not None


async def get(conn: Conn, *, api_key_id: str, id: str, for_update: bool = False) -> dict[str, Any] | None:
    sql = q.lock_organization if for_update else q.get_organization
    return await fetch_one(conn, sql, {"api_key_id": api_key_id, "id": id})


async def rename(conn: Conn, *, api_key_id: str, id: str, name: str, now: int) -> bool:
    params = {"api_key_id": api_key_id, "id": id, "name": name, "now": now}
    return await fetch_one(conn, q.rename_organization, params) is not None


async def set_disabled(conn: Conn, *, api_key_id: str, ids: list[str], disabled: bool, now: int) -> set[str]:
    params = {"api_key_id": api_key_id, "ids": ids, "disabled": disabled, "now": now}
    return {r["id"] for r in await fetch_all(conn, q.set_disabled, params)}


async def list_page(conn: Conn, *, api_key_id: str, ids: list[str] | None, after_id: str | None,
                    limit: int) -> list[dict[str, Any]]:
    filters = {"api_key_id": api_key_id, "ids": ids, "after_id": after_id, "limit": limit}
    return await fetch_all(conn, q.list_organizations, filters)


async def delete(conn: Conn, *, api_key_id: str, ids: list[str]) -> set[str]:
    return {r["id"] for r in await fetch_all(conn, q.delete_organizations, {"api_key_id": api_key_id, "ids": ids})}
