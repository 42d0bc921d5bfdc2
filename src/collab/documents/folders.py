"""Folders: nested inside an organization; documents in a folder inherit its access."""

from typing import Any

from collab.documents import repository as repo
from collab.documents.schemas import AddFolders, Folder, GetFolders
from collab.kit.auth import Tenant
from collab.kit.errors import not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations.service import ensure as ensure_organization


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
                                             parent_id=folder.parentFolderId, now=now)
            message = "Folder added." if added else "Folder already exists."
            results[folder.folderId] = {"success": added, "id": folder.folderId, "message": message}
    return results


async def get(svc: Services, *, tenant: Tenant, data: GetFolders) -> list[dict[str, Any]]:
    """An organization's folders, or one folder and its descendants down to `maxDepth` levels."""
    async with svc.pool.connection() as conn:
        rows = await repo.folder_tree(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId)
    if data.folderId is not None:
        top = next((r for r in rows if r["id"] == data.folderId), None)
        if top is None:
            return []
        base = len(top["ancestors"])
        rows = [r for r in rows if r is top or data.folderId in r["ancestors"]]
    else:
        base = 0
    if data.maxDepth is not None:
        rows = [r for r in rows if len(r["ancestors"]) - base <= data.maxDepth]
    return [Folder.wire(r) for r in rows]
