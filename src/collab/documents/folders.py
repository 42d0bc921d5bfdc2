"""Folders: nested inside an organization; documents in a folder inherit its access."""

from typing import Any

from collab.documents import repository as repo
from collab.documents.schemas import AddFolders, DeleteFolder, Folder, FolderChange, GetFolders, UpdateFolders
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations.service import ensure as ensure_organization

# Velt's name for the top of the tree (its folders/get shows top-level folders under the parent "root"): as a
# target it means "no folder", unless the organization has a real folder of that id (ADR 0048).
ROOT = "root"
CYCLE = "A folder cannot be moved into itself or one of its subfolders."
# How deep Velt's nested `subFolders` go below the folder asked for: each level is two levels of JSON, and the
# encoder refuses documents nested past 255 (the flat list beside it still holds every folder).
NEST_LEVELS = 50


async def add(svc: Services, *, tenant: Tenant, data: AddFolders) -> dict[str, Any]:
    """Create folders in order (a parent may come earlier in the same batch); keyed by folderId."""
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        if not await ensure_organization(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                         create=data.createOrganization, now=now):
            missing = not_found_message("organization")
            return {f.folderId: {"success": False, "id": f.folderId, "message": missing} for f in data.folders}
        for folder in data.folders:
            if folder.parentFolderId and not await repo.folder_exists(tx.conn, **key, id=folder.parentFolderId):
                results[folder.folderId] = {
                    "success": False, "id": folder.folderId, "message": not_found_message("parent_folder")
                }
                continue
            added = await repo.insert_folder(tx.conn, **key, id=folder.folderId, name=folder.folderName,
                                             parent_id=folder.parentFolderId, access_type=folder.accessType, now=now)
            message = "Folder added." if added else "Folder already exists."
            results[folder.folderId] = {"success": added, "id": folder.folderId, "message": message}
    return results


async def target(conn: Conn, *, api_key_id: str, organization_id: str, folder_id: str) -> tuple[bool, str | None]:
    """Whether a folder named as a destination exists, and the parent it stands for (None: the top level)."""
    if await repo.folder_exists(conn, api_key_id=api_key_id, organization_id=organization_id, id=folder_id):
        return True, folder_id
    return folder_id == ROOT, None


async def get(svc: Services, *, tenant: Tenant, data: GetFolders) -> tuple[list[dict[str, Any]], str | None]:
    """One folder and its descendants down to `maxDepth` levels, or a page of the organization's folders."""
    if data.folderId is None:
        return await _page(svc, tenant=tenant, data=data)
    async with svc.pool.connection() as conn:
        rows = await repo.folder_tree(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId)
    top = next((r for r in rows if r["id"] == data.folderId), None)
    if top is None:
        return [], None
    base = len(top["ancestors"])
    rows = [r for r in rows if r is top or data.folderId in r["ancestors"]]
    if data.maxDepth is not None:
        rows = [r for r in rows if len(r["ancestors"]) - base <= data.maxDepth]
    records = [Folder.wire(r) for r in rows]
    return [_nested(records, base), *records[1:]], None


def _nested(records: list[dict[str, Any]], base: int) -> dict[str, Any]:
    """The first record (the folder asked for) with Velt's `subFolders`: its descendants in `records` (parents before
    children) nested under their parents, down to NEST_LEVELS levels; the flat records are left as they are."""
    copies = {r["folderId"]: dict(r) for r in records if len(r["ancestors"]) - base <= NEST_LEVELS}
    for record in records[1:]:
        parent = copies.get(record["parentFolderId"])
        if record["folderId"] in copies and parent is not None:
            parent.setdefault("subFolders", []).append(copies[record["folderId"]])
    return copies[records[0]["folderId"]]


async def _page(svc: Services, *, tenant: Tenant, data: GetFolders) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the organization's folders, parents before children, optionally only the top-level ones."""
    pager = paging.Pager.for_query(
        svc.keyring, tenant.api_key_id, "folders",
        {"organizationId": data.organizationId, "rootFoldersOnly": data.rootFoldersOnly, "maxDepth": data.maxDepth})
    after_depth, after_id = pager.after(data.pageToken, 2)
    size = data.pageSize or 1000
    async with svc.pool.connection() as conn:
        rows = await repo.folder_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                      root_only=data.rootFoldersOnly, max_depth=data.maxDepth, after_depth=after_depth,
                                      after_id=after_id, limit=size + 1)
    rows, token = pager.page(rows, size, "depth", "id")
    return [Folder.wire(r) for r in rows], token


async def update(svc: Services, *, tenant: Tenant, data: UpdateFolders) -> dict[str, Any]:
    """Rename folders or move them, with everything in them, under another parent; keyed by folderId."""
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        # Each move is checked against the tree as it stands; two crossing moves running at once could each pass
        # that check and together make a loop, so an organization's tree changes one transaction at a time.
        await repo.lock_folder_tree(tx.conn, **key)
        for folder in data.folders:
            message = await _change(tx.conn, key=key, folder=folder, now=now)
            results[folder.folderId] = {
                "success": message is None, "id": folder.folderId, "message": message or "Folder Updated."
            }
    return results


async def _change(conn: Conn, *, key: dict[str, str], folder: FolderChange, now: int) -> str | None:
    """Apply one folder's change; why it was refused, or None."""
    if not await repo.folder_exists(conn, **key, id=folder.folderId):
        return not_found_message("folder")
    parent = None
    if folder.parentFolderId is not None:
        found, parent = await target(conn, **key, folder_id=folder.parentFolderId)
        if not found:
            return not_found_message("parent_folder")
        if parent is not None and await repo.folder_would_cycle(conn, **key, id=folder.folderId, parent_id=parent):
            return CYCLE
    await repo.update_folder(conn, **key, id=folder.folderId, name=folder.folderName, move=folder.parentFolderId
                             is not None, parent_id=parent, now=now)
    return None


async def delete(svc: Services, *, tenant: Tenant, data: DeleteFolder) -> None:
    """Delete a folder with its subfolders and every document in them (their data and grants too)."""
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.lock_folder_tree(tx.conn, **key)
        if not await repo.delete_folder(tx.conn, **key, id=data.folderId):
            raise not_found("folder")
