"""SQL of recordings; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def lock_and_find(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str) -> str | None:
    """Take the annotation's write lock (until commit); the document its recording is on, None when new."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "annotation_id": annotation_id}
    await execute(conn, q.lock_annotation, params)
    row = await fetch_one(conn, q.recording_document, params)
    return row["document_id"] if row else None


async def insert_version(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, annotation_id: str,
                         recording_type: str, mode: str, display_name: str, duration_ms: int | None, attachments: Any,
                         from_user: dict[str, Any] | None, now: int) -> int:
    """Store the next version of an annotation (call under its lock); the version number."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "annotation_id": annotation_id, "recording_type": recording_type, "mode": mode, "display_name": display_name,
        "duration_ms": duration_ms, "attachments": attachments, "from_user": from_user, "now": now
    }
    params = row | {
        "attachments": Jsonb(row["attachments"]),
        "from_user": Jsonb(row["from_user"]) if row["from_user"] is not None else None
    }
    return (await fetch_row(conn, q.insert_version, params))["version"]


async def list_page(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                    annotation_ids: list[str] | None, after_id: str | None, limit: int,
                    budget: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "annotation_ids": annotation_ids, "after_id": after_id, "limit": limit, "budget": budget
    }
    return await fetch_all(conn, q.list_latest, filters)


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, annotation_ids: list[str]) -> set[str]:
    """Delete every version of these annotations; the ids that had any."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "annotation_ids": annotation_ids}
    return {r["annotation_id"] for r in await fetch_all(conn, q.delete_recordings, params)}


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> int:
    """Remove the recordings the users made (`from.userId`), only in these organizations when given."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    return await execute(conn, q.forget_user, params)
