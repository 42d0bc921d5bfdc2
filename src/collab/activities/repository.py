"""SQL of the activity log; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)
JSON_COLUMNS = ("action_user", "changes", "entity_data", "entity_target_data", "display_message_template_data")


def _json(row: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if k in JSON_COLUMNS and v is not None else v for k, v in row.items()}


async def upsert(conn: Conn, **row: Any) -> bool:
    """Write an activity; True when it is new (not an overwrite of the same id)."""
    return (await fetch_one(conn, q.upsert_activity, _json(row)))["inserted"]


async def update(conn: Conn, *, api_key_id: str, organization_id: str, id: str, fields: dict[str, Any]) -> bool:
    """Change only the given fields; False when no such activity exists in the organization."""
    params: dict[str, Any] = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id}
    for column in ("changes", "entity_data", "entity_target_data", "display_message_template",
                   "display_message_template_data", "action_icon"):
        params[f"set_{column}"] = column in fields
        params[column] = fields.get(column)
    return await execute(conn, q.update_activity, _json(params)) > 0


async def get(conn: Conn, *, api_key_id: str, id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_activity, {"api_key_id": api_key_id, "id": id})


async def list_page(conn: Conn, **filters: Any) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.list_activities, filters)


async def delete(conn: Conn, **filters: Any) -> list[str]:
    return [r["id"] for r in await fetch_all(conn, q.delete_activities, filters)]
