"""SQL of the activity log; executes, never commits."""

from collections.abc import Sequence
from typing import Any, cast

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)
JSON_COLUMNS = ("action_user", "changes", "entity_data", "entity_target_data", "display_message_template_data")


def _json(row: dict[str, Any]) -> dict[str, Any]:
    return {k: Jsonb(v) if k in JSON_COLUMNS and v is not None else v for k, v in row.items()}


async def upsert_many(conn: Conn, *, api_key_id: str, records: list[dict[str, Any]]) -> list[bool]:
    """Write activities in order (a later one with the same id overwrites an earlier one), in one round trip: the
    statements go down a pipeline together. For each, True when it was new (not an overwrite of the same id)."""
    rows = [_json({"api_key_id": api_key_id, **record}) for record in records]
    flags: list[bool] = []
    async with conn.cursor() as cur:
        await cur.executemany(q.upsert_activity, rows, returning=True)
        for _ in rows:
            # One row per statement (its `inserted`), a dict as the pool's connections make them.
            flags.append(cast(dict[str, Any], await cur.fetchone())["inserted"])
            cur.nextset()
    return flags


async def add_at_once(conn: Conn, *, api_key_id: str, records: list[dict[str, Any]], events: bool, job_id: str,
                      derive_ids: list[str]) -> dict[str, Any]:
    """The one-statement activities/add (see the query): {enabled, follows, logged, queued}; on an autocommit
    connection it commits as it returns."""
    params = {
        "api_key_id": api_key_id, "records": Jsonb(records), "events": events, "job_id": job_id,
        "derive_ids": derive_ids
    }
    row = await fetch_one(conn, q.add_activities, params)
    assert row is not None, "authenticated API key vanished"
    return row


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


async def list_page(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                    target_entity_id: str | None, feature_types: Sequence[str] | None, action_types: list[str] | None,
                    user_id: str | None, activity_ids: list[str] | None, after_ts: int | None, desc: bool,
                    after_id: str | None, limit: int, budget: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "target_entity_id": target_entity_id, "feature_types": feature_types, "action_types": action_types,
        "user_id": user_id, "activity_ids": activity_ids, "after_ts": after_ts, "desc": desc, "after_id": after_id,
        "limit": limit, "budget": budget
    }
    return await fetch_all(conn, q.list_activities, filters)


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                 activity_ids: list[str] | None, target_entity_id: str | None = None) -> list[str]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "activity_ids": activity_ids, "target_entity_id": target_entity_id
    }
    return [r["id"] for r in await fetch_all(conn, q.delete_activities, filters)]
