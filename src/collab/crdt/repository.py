"""SQL of CRDT editor documents; executes, never commits."""

from typing import Any

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def insert(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str, type: str,
                 content_key: str, state: bytes, last_updated_by: str | None, session_id: str | None, now: int) -> bool:
    """Store a new editor document; False when the editor already has one."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "type": type, "content_key": content_key, "state": state,
        "last_updated_by": last_updated_by, "session_id": session_id, "now": now
    }
    return await fetch_one(conn, q.insert_editor, row) is not None


async def list_editors(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str | None,
                       after_id: str | None, limit: int, yjs: bool, budget: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "after_id": after_id, "limit": limit, "yjs": yjs, "budget": budget
    }
    return await fetch_all(conn, q.list_editors, filters)


async def count_editors_locked(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str) -> int:
    """The document's editor count, holding the document's add lock until the transaction ends."""
    key = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id}
    await execute(conn, q.lock_document, key)
    return (await fetch_row(conn, q.count_editors, key))["editors"]


def _editor(api_key_id: str, organization_id: str, document_id: str, editor_id: str) -> dict[str, str]:
    """The parameters that name one editor."""
    return {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "editor_id": editor_id
    }


async def exists(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str) -> bool:
    """Whether the editor has a document."""
    found = await fetch_row(conn, q.editor_exists, _editor(api_key_id, organization_id, document_id, editor_id))
    return found["found"]


async def lock(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
               editor_id: str) -> dict[str, Any] | None:
    """An editor's type, content key and state, locked until the transaction ends."""
    return await fetch_one(conn, q.lock_editor, _editor(api_key_id, organization_id, document_id, editor_id))


async def save(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, state: bytes,
               last_updated_by: str | None, session_id: str | None, editor_id: str, now: int) -> None:
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "state": state,
        "last_updated_by": last_updated_by, "session_id": session_id, "editor_id": editor_id, "now": now
    }
    await execute(conn, q.save_editor, row)


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                 editor_ids: list[str] | None) -> set[str]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_ids": editor_ids
    }
    return {r["editor_id"] for r in await fetch_all(conn, q.delete_editors, filters)}


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> None:
    """User-data deletion: the content belongs to the document, so only lastUpdatedBy is cleared."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    await execute(conn, q.forget_user, params)
    await execute(conn, q.forget_user_updates, params)


async def kind(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
               editor_id: str) -> dict[str, Any] | None:
    """An editor's type and content key; None when it has no document."""
    return await fetch_one(conn, q.editor_kind, _editor(api_key_id, organization_id, document_id, editor_id))


async def append_update(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
                        update: bytes, user_id: str | None, now: int) -> int:
    """Append a realtime update to the editor's log; its sequence number."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_id": editor_id, "update": update, "user_id": user_id, "now": now
    }
    return (await fetch_row(conn, q.append_update, row))["seq"]


async def append_updates(conn: Conn, rows: list[dict[str, Any]]) -> None:
    """Append realtime updates of any editors in one statement, in order; rows as `append_update` takes them."""
    columns = {
        "api_key_ids": "api_key_id", "organization_ids": "organization_id", "document_ids": "document_id",
        "editor_ids": "editor_id", "updates": "update", "user_ids": "user_id", "nows": "now"
    }
    await execute(conn, q.append_updates, {name: [r[field] for r in rows] for name, field in columns.items()})


async def pending(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                  editor_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each editor's updates not yet folded into its state, oldest first (editors without any left out)."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "editor_ids": editor_ids
    }
    found: dict[str, list[dict[str, Any]]] = {}
    for row in await fetch_all(conn, q.pending_updates, params):
        found.setdefault(row["editor_id"], []).append(row)
    return found


async def clear_updates(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
                        upto: int) -> None:
    """Forget the editor's pending changes through `upto` once this transaction folded them into its state."""
    await execute(conn, q.clear_updates, {**_editor(api_key_id, organization_id, document_id, editor_id), "upto": upto})


async def quarantine(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str,
                     reasons: dict[int, str], now: int) -> None:
    """Move the editor's pending updates `reasons` names (seq → why) out of its log into the quarantine."""
    await execute(
        conn, q.quarantine_updates, {
            **_editor(api_key_id, organization_id, document_id, editor_id), "seqs": list(reasons), "reasons": list(
                reasons.values()), "now": now
        })


async def editors_to_compact(conn: Conn, *, before: int, limit: int) -> list[dict[str, Any]]:
    """Editors with a pending update older than `before` (epoch ms)."""
    return await fetch_all(conn, q.editors_to_compact, {"before": before, "limit": limit})
