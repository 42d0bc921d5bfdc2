"""Access types of documents and folders, and documents disabled on their own (ADR 0051); access.py applies them."""

from typing import Any

from collab.kit.auth import Tenant
from collab.kit.errors import not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations import repository as organizations_repo
from collab.permissions import repository as repo
from collab.permissions.schemas import UpdateDocumentAccess, UpdateDocumentDisabled, UpdateFolderAccess


def _outcomes(ids: list[str], found: set[str], what: str, done: str, **fields: Any) -> dict[str, Any]:
    return {
        i: {"success": True, "id": i, "message": done, **fields}
        if i in found else {"success": False, "id": i, "message": not_found_message(what)}
        for i in ids
    }


async def _set(svc: Services, *, tenant: Tenant, organization_id: str, kind: str, ids: list[str],
               access_type: str | None) -> set[str]:
    async with transaction(svc.pool, svc.redis) as tx:
        if await organizations_repo.get(tx.conn, api_key_id=tenant.api_key_id, id=organization_id) is None:
            raise not_found("organization")
        return await repo.set_access(tx.conn, api_key_id=tenant.api_key_id, organization_id=organization_id, kind=kind,
                                     ids=ids, access_type=access_type, now=svc.now_ms())


async def update_documents(svc: Services, *, tenant: Tenant, data: UpdateDocumentAccess) -> dict[str, Any]:
    """Set the access type of documents; each answers by id."""
    found = await _set(svc, tenant=tenant, organization_id=data.organizationId, kind="document", ids=data.documentIds,
                       access_type=data.accessType)
    return _outcomes(data.documentIds, found, "document", "Document access type updated.", accessType=data.accessType)


async def update_folders(svc: Services, *, tenant: Tenant, data: UpdateFolderAccess) -> dict[str, Any]:
    """Set the access type of folders, or let them inherit their parent's; each answers by id."""
    found = await _set(svc, tenant=tenant, organization_id=data.organizationId, kind="folder", ids=data.folderIds,
                       access_type=data.accessType)
    extra: dict[str, Any] = {"accessType": data.accessType}
    if data.inheritFromParent:
        extra["inheritFromParent"] = True
    return _outcomes(data.folderIds, found, "folder", "Folder access type updated.", **extra)


async def update_disabled(svc: Services, *, tenant: Tenant, data: UpdateDocumentDisabled) -> dict[str, Any]:
    """Disable or restore read and write access to documents on their own; each answers by id."""
    async with transaction(svc.pool, svc.redis) as tx:
        if await organizations_repo.get(tx.conn, api_key_id=tenant.api_key_id, id=data.organizationId) is None:
            raise not_found("organization")
        found = await repo.set_document_disabled(tx.conn, api_key_id=tenant.api_key_id,
                                                 organization_id=data.organizationId, ids=data.documentIds,
                                                 disabled=data.disabled, now=svc.now_ms())
    return _outcomes(data.documentIds, found, "document", "Document disabled state updated.", disabled=data.disabled)
