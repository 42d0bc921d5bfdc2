"""SQL of knowledge sources; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def insert_source(conn: Conn, *, api_key_id: str, id: str, file_name: str, mime_type: str, size_bytes: int,
                        sha256: str, content: bytes, provider: str | None) -> None:
    row = {
        "api_key_id": api_key_id, "id": id, "file_name": file_name, "mime_type": mime_type, "size_bytes": size_bytes,
        "sha256": sha256, "content": content, "provider": provider
    }
    await execute(conn, q.insert_source, row)


async def get_source(conn: Conn, *, source_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_source, {"id": source_id})


async def mark_ready(conn: Conn, *, source_id: str, canonical_text: str, tasks: list, result: dict, model: str) -> None:
    await execute(conn, q.mark_ready, {
        "id": source_id, "canonical_text": canonical_text, "tasks": Jsonb(tasks), "result": Jsonb(result),
        "model": model
    })


async def mark_failed(conn: Conn, *, source_id: str, error: str) -> None:
    await execute(conn, q.mark_failed, {"id": source_id, "error": error[:2000]})


async def drop_old_content(conn: Conn, *, before: Any, limit: int) -> int:
    return await execute(conn, q.drop_old_content, {"before": before, "limit": limit})
