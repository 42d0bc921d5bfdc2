"""SQL of CRDT editor documents; executes, never commits."""

from typing import Any

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def insert(
    conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str, type: str,
    content_key: str, state: bytes, last_updated_by: str | None, session_id: str | None, now: int,
) -> bool:
    """Store a new editor document; False when the editor already has one."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "type": type, "content_key": content_key, "state": state,
        "last_updated_by": last_updated_by, "session_id": session_id, "now": now,
    }
    return await fetch_one(conn, q.insert_editor, row) is not None


async def list_editors(
    conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str | None,
    after_id: str | None, limit: int, yjs: bool, budget: int,
) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "after_id": after_id, "limit": limit, "yjs": yjs, "budget": budget,
    }
    return await fetch_all(conn, q.list_editors, filters)


async def count_editors_locked(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str) -> int:
    """The document's editor count, holding the document's add lock until the transaction ends."""
    key = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id}
    await execute(conn, q.lock_document, key)
    return (await fetch_one(conn, q.count_editors, key))["editors"]


async def exists(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str) -> bool:
    """Whether the editor has a document."""
    key = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id,
    }
    return (await fetch_one(conn, q.editor_exists, key))["found"]


async def lock(
    conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
) -> dict[str, Any] | None:
    """An editor's type, content key and state, locked until the transaction ends."""
    key = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id,
    }
    return await fetch_one(conn, q.lock_editor, key)


async def save(
    conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, state: bytes, last_updated_by: str | None,
    session_id: str | None, editor_id: str, now: int,
) -> None:
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "state": state,
        "last_updated_by": last_updated_by, "session_id": session_id, "editor_id": editor_id, "now": now,
    }
    await execute(conn, q.save_editor, row)


async def delete(
    conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_ids: list[str] | None,
) -> set[str]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_ids": editor_ids,
    }
    return {r["editor_id"] for r in await fetch_all(conn, q.delete_editors, filters)}


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> None:
    """User-data deletion: the content belongs to the document, so only lastUpdatedBy is cleared."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    await execute(conn, q.forget_user, params)
