"""Documents: add (with the spec's partial-failure envelope), get, update, delete."""

from typing import Any

from collab.documents import repository as repo
from collab.documents.folders import target
from collab.documents.schemas import (
    AddDocuments,
    CountDocuments,
    DeleteDocuments,
    Document,
    GetDocuments,
    MoveDocuments,
    UpdateDocuments,
)
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError, not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations.service import ensure as ensure_organization


def _failed(doc_id: str, message: str, code: str) -> dict[str, Any]:
    return {"success": False, "id": doc_id, "message": message, "code": code}


async def add(svc: Services, *, tenant: Tenant, data: AddDocuments) -> dict[str, Any]:
    """Add documents; any failed item turns the answer into the spec's INTERNAL envelope with per-item codes."""
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    ids = [d.documentId for d in data.documents]
    if data.createOrganization or data.folderId:
        async with transaction(svc.pool, svc.redis) as tx:
            if not await ensure_organization(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                             create=data.createOrganization, now=now):
                results = {i: _failed(i, not_found_message("organization"), "internal") for i in ids}
            elif data.folderId and not await _ensure_folder(tx.conn, key, data.folderId, data.createFolder, now):
                results = {i: _failed(i, not_found_message("folder"), "internal") for i in ids}
            else:
                results = await _insert(tx.conn, key, data, now)
    else:
        async with svc.pool.connection() as conn:  # the usual case: one statement, atomic on its own
            results = await _insert(conn, key, data, now)
    if any(not r["success"] for r in results.values()):
        # The spec's one non-batch-style answer: HTTP 500, decided per item by `code`.
        raise ApiError("INTERNAL", "One or more documents could not be added.", details=results)
    return results


async def _insert(conn, key: dict[str, str], data: AddDocuments, now: int) -> dict[str, Any]:
    """Insert the batch in one statement (a driver error fails the request and writes nothing); results by id."""
    documents: list[tuple[str, str | None]] = [(d.documentId, d.documentName) for d in data.documents]
    found = await repo.insert_many(conn, **key, documents=documents, folder_id=data.folderId, now=now)
    if not found["organization"]:
        return {i: _failed(i, not_found_message("organization"), "internal") for i, _ in documents}
    added = set(found["added"])
    return {
        i: {"success": True, "id": i, "message": "Document added successfully."} if i in added else _failed(
            i, "Document already exists.", "already-exists")
        for i, _ in documents
    }


async def _ensure_folder(conn, key: dict[str, str], folder_id: str, create: bool, now: int) -> bool:
    if create:
        await repo.insert_folder(conn, **key, id=folder_id, name=None, parent_id=None, now=now)
    return await repo.folder_exists(conn, **key, id=folder_id)


async def get(svc: Services, *, tenant: Tenant, data: GetDocuments) -> tuple[list[dict[str, Any]], str | None]:
    """A page of an organization's documents in id order."""
    pager = paging.Pager(svc.keyring, f"{tenant.api_key_id}:documents:{data.organizationId}")
    (after_id, ) = pager.after(data.pageToken, 1)
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    ids=data.documentIds, folder_id=data.folderId, after_id=after_id,
                                    limit=data.pageSize + 1)
    rows, token = pager.page(rows, data.pageSize, "id")
    return [Document.wire(r) for r in rows], token


async def update(svc: Services, *, tenant: Tenant, data: UpdateDocuments) -> dict[str, Any]:
    """Rename documents or move them into a folder; results keyed by documentId."""
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        for doc in data.documents:
            if doc.folderId and not await repo.folder_exists(tx.conn, **key, id=doc.folderId):
                results[doc.documentId] = {
                    "success": False, "id": doc.documentId, "message": not_found_message("folder")
                }
                continue
            found = await repo.update(tx.conn, **key, id=doc.documentId, name=doc.documentName, folder_id=doc.folderId,
                                      now=now)
            message = "Document updated." if found else not_found_message("document")
            results[doc.documentId] = {"success": found, "id": doc.documentId, "message": message}
    return results


async def delete(svc: Services, *, tenant: Tenant, data: DeleteDocuments) -> dict[str, Any]:
    """Delete documents with their access grants and every feature's data about them."""
    async with transaction(svc.pool, svc.redis) as tx:
        deleted = await repo.delete(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    ids=data.documentIds)
    return {
        d: {
            "success": d in deleted, "id": d,
            "message": "Document deleted." if d in deleted else not_found_message("document")
        }
        for d in data.documentIds
    }


async def move(svc: Services, *, tenant: Tenant, data: MoveDocuments) -> dict[str, Any]:
    """Move documents into a folder ("root": into none), all or none; keyed by documentId."""
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    async with transaction(svc.pool, svc.redis) as tx:
        found, folder_id = await target(tx.conn, **key, folder_id=data.folderId)
        if not found:
            raise not_found("folder")
        moved = await repo.move_documents(tx.conn, **key, ids=data.documentIds, folder_id=folder_id, now=svc.now_ms())
        missing = [d for d in data.documentIds if d not in moved]
        if missing:  # Velt answers the call as a whole: a half-done move would read as done
            gone = not_found_message("document")
            raise not_found("document", details={d: {"success": False, "id": d, "message": gone} for d in missing})
    return {d: {"success": True, "id": d, "message": "Document moved."} for d in data.documentIds}


async def count(svc: Services, *, tenant: Tenant, data: CountDocuments) -> dict[str, Any]:
    """How many documents the organization has (in one folder, or in none); 0 for an unknown organization."""
    async with svc.pool.connection() as conn:
        total = await repo.count(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                 folder_id=data.folderId, outside_folders=data.excludeFolderDocs)
    # Documents carry no metadata here, so filters cannot narrow the count: Velt's documented answer for a filter
    # that could not be applied is the unfiltered count with filtersApplied false.
    return {"count": total} | ({"filtersApplied": False} if data.filters is not None else {})
