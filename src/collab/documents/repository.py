"""SQL of documents, folders and migrations; executes, never commits."""

from typing import Any

from psycopg import sql

from collab.features import DOCUMENT_TABLES, delete_feature_data
from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def insert(conn: Conn, *, api_key_id: str, organization_id: str, id: str, name: str | None, folder_id: str | None,
                 now: int) -> bool:
    """Create a document; False when the id is taken in the organization (or the organization is missing)."""
    found = await insert_many(conn, api_key_id=api_key_id, organization_id=organization_id, documents=[(id, name)],
                              folder_id=folder_id, now=now)
    return bool(found["added"])


async def insert_many(conn: Conn, *, api_key_id: str, organization_id: str, documents: list[tuple[str, str | None]],
                      folder_id: str | None, now: int) -> dict[str, Any]:
    """Add the (id, name) pairs in one statement, if their organization exists; {organization: exists, added: the
    ids now added (not those already taken)}."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "ids": [d[0] for d in documents],
        "names": [d[1] for d in documents], "folder_id": folder_id, "now": now
    }
    return await fetch_row(conn, q.insert_documents, params)


async def list_page(conn: Conn, *, api_key_id: str, organization_id: str, ids: list[str] | None, folder_id: str | None,
                    after_id: str | None, limit: int) -> list[dict[str, Any]]:
    filters = {
        "api_key_id": api_key_id, "organization_id": organization_id, "ids": ids, "folder_id": folder_id,
        "after_id": after_id, "limit": limit
    }
    return await fetch_all(conn, q.list_documents, filters)


async def update(conn: Conn, *, api_key_id: str, organization_id: str, name: str | None, folder_id: str | None, id: str,
                 now: int) -> bool:
    change = {
        "api_key_id": api_key_id, "organization_id": organization_id, "name": name, "folder_id": folder_id, "id": id,
        "now": now
    }
    return await fetch_one(conn, q.update_document, change) is not None


async def delete(conn: Conn, *, api_key_id: str, organization_id: str, ids: list[str]) -> set[str]:
    """Delete documents with their grants and every feature's data about them."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "ids": ids}
    deleted = {r["id"] for r in await fetch_all(conn, q.delete_documents, params)}
    if deleted:
        params["ids"] = sorted(deleted)
        await execute(conn, q.delete_document_grants, params)
        await delete_feature_data(conn, api_key_id=api_key_id, organization_id=organization_id,
                                  document_ids=params["ids"])
    return deleted


async def move(conn: Conn, *, api_key_id: str, organization_id: str, id: str, new_id: str, now: int) -> str | None:
    """Give a document a new id, with its grants and every feature's data; the reason when refused."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id, "new_id": new_id, "now": now}
    if await fetch_one(conn, q.lock_document, params) is None:
        return f"Document {id} does not exist in organization {organization_id}."
    if await fetch_one(conn, q.lock_document, params | {"id": new_id}) is not None:
        return f"Document {new_id} already exists in organization {organization_id}."
    await execute(conn, q.rename_document, params)
    await execute(conn, q.move_document_grants, params)
    await execute(conn, q.drop_clashing_presence, params)
    await execute(conn, q.drop_orphan_live_states, params)
    for table in DOCUMENT_TABLES:
        statement = sql.SQL(q.move_feature_rows).format(table=sql.Identifier(table))
        await execute(conn, statement, params)
    return None


async def insert_folder(conn: Conn, *, api_key_id: str, organization_id: str, id: str, name: str | None,
                        parent_id: str | None, now: int, access_type: str | None = None) -> bool:
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "id": id, "name": name, "parent_id": parent_id,
        "access_type": access_type, "now": now
    }
    return await fetch_one(conn, q.insert_folder, row) is not None


async def folder_exists(conn: Conn, *, api_key_id: str, organization_id: str, id: str) -> bool:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id}
    return await fetch_one(conn, q.get_folder, params) is not None


async def folder_tree(conn: Conn, *, api_key_id: str, organization_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.folder_tree, {"api_key_id": api_key_id, "organization_id": organization_id})


async def folder_page(conn: Conn, *, api_key_id: str, organization_id: str, root_only: bool, max_depth: int | None,
                      after_depth: int | None, after_id: str | None, limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "root_only": root_only, "max_depth": max_depth,
        "after_depth": after_depth, "after_id": after_id, "limit": limit
    }
    return await fetch_all(conn, q.folder_page, params)


async def lock_folder_tree(conn: Conn, *, api_key_id: str, organization_id: str) -> None:
    await fetch_row(conn, q.lock_folder_tree, {"api_key_id": api_key_id, "organization_id": organization_id})


async def folder_would_cycle(conn: Conn, *, api_key_id: str, organization_id: str, id: str, parent_id: str) -> bool:
    """Whether giving the folder `parent_id` as parent would put it inside itself."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id, "parent_id": parent_id}
    return (await fetch_row(conn, q.folder_would_cycle, params))["cycle"]


async def update_folder(conn: Conn, *, api_key_id: str, organization_id: str, id: str, name: str | None, move: bool,
                        parent_id: str | None, now: int) -> bool:
    """Rename the folder and/or (when `move`) give it a new parent; False when it does not exist."""
    change = {
        "api_key_id": api_key_id, "organization_id": organization_id, "id": id, "name": name, "move": move,
        "parent_id": parent_id, "now": now
    }
    return await fetch_one(conn, q.update_folder, change) is not None


async def delete_folder(conn: Conn, *, api_key_id: str, organization_id: str, id: str) -> bool:
    """Delete a folder, its subfolders, every document in them (with their data) and the grants on all of them;
    False when the folder does not exist."""
    key = {"api_key_id": api_key_id, "organization_id": organization_id}
    folder_ids = [r["id"] for r in await fetch_all(conn, q.folder_subtree, key | {"id": id})]
    if not folder_ids:
        return False
    documents = await fetch_all(conn, q.documents_in_folders, key | {"folder_ids": folder_ids})
    if documents:
        await delete(conn, **key, ids=[r["id"] for r in documents])
    await execute(conn, q.delete_folder_grants, key | {"ids": folder_ids})
    return await fetch_one(conn, q.delete_folder, key | {"id": id}) is not None


async def move_documents(conn: Conn, *, api_key_id: str, organization_id: str, ids: list[str], folder_id: str | None,
                         now: int) -> set[str]:
    """Put documents into a folder (None: into none); the ids that exist."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "ids": ids, "folder_id": folder_id, "now": now
    }
    return {r["id"] for r in await fetch_all(conn, q.move_documents, params)}


async def count(conn: Conn, *, api_key_id: str, organization_id: str, folder_id: str | None,
                outside_folders: bool) -> int:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "folder_id": folder_id,
        "outside_folders": outside_folders
    }
    return (await fetch_row(conn, q.count_documents, params))["count"]


async def insert_migration(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, id: str,
                           new_document_id: str, job_id: str, now: int) -> None:
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "id": id,
        "new_document_id": new_document_id, "job_id": job_id, "now": now
    }
    await execute(conn, q.insert_migration, row)


async def get_migration(conn: Conn, *, api_key_id: str, organization_id: str, id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_migration,
                           {"api_key_id": api_key_id, "organization_id": organization_id, "id": id})


async def start_migration(conn: Conn, *, api_key_id: str, id: str, now: int) -> dict[str, Any] | None:
    """Mark a migration in progress; None when it has already finished."""
    return await fetch_one(conn, q.start_migration, {"api_key_id": api_key_id, "id": id, "now": now})


async def finish_migration(conn: Conn, *, api_key_id: str, id: str, status: str, reason: str | None, now: int) -> None:
    params = {"api_key_id": api_key_id, "id": id, "status": status, "reason": reason, "now": now}
    await execute(conn, q.finish_migration, params)
