"""Document migration: a job (documents/tasks.py) gives a document a new id, with all its feature data, atomically."""

from typing import Any

from collab.documents import repository as repo
from collab.documents.schemas import MigrateDocument, MigrationStatus
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services


async def start(svc: Services, *, tenant: Tenant, data: MigrateDocument) -> dict[str, Any]:
    """Record a pending migration and queue its job; the outcome is read with `status`."""
    migration_id = new_id("mig_")
    async with transaction(svc.pool, svc.redis) as tx:
        job_id = await tx.enqueue("migrate_document", api_key_id=tenant.api_key_id, migration_id=migration_id)
        await repo.insert_migration(tx.conn, api_key_id=tenant.api_key_id, id=migration_id,
                                    organization_id=data.organizationId, document_id=data.documentId,
                                    new_document_id=data.newDocumentId, job_id=job_id, now=svc.now_ms())
    return {"migrationId": migration_id}


async def status(svc: Services, *, tenant: Tenant, data: MigrationStatus) -> dict[str, Any]:
    """Where a migration stands: pending, in_progress, completed, or failed with a reason."""
    async with svc.pool.connection() as conn:
        row = await repo.get_migration(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                       id=data.migrationId)
    if row is None:
        raise not_found("migration")
    state, reason = row["status"], row["reason"]
    if state in ("pending", "in_progress") and row["job_status"] == "failed":
        state, reason = "failed", f"The migration job failed: {row['job_error']}"
    result = {
        "migrationId": row["id"], "status": state, "documentId": row["document_id"],
        "newDocumentId": row["new_document_id"]
    }
    return result | ({"reason": reason} if reason else {})
