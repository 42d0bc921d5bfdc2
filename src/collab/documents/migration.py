"""Document migration: a job gives a document a new id, with all its feature data, atomically."""

from typing import Any

from psycopg.errors import UniqueViolation

from collab.documents import repository as repo
from collab.documents.schemas import MigrateDocument, MigrationStatus
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError
from collab.kit.jobs import transaction, tracked
from collab.kit.services import Services
from collab.webhooks import events as webhook_events


async def start(svc: Services, *, tenant: Tenant, data: MigrateDocument) -> dict[str, Any]:
    """Record a pending migration and queue its job; the outcome is read with `status`."""
    migration_id = new_id("mig_")
    async with transaction(svc.pool, svc.redis) as tx:
        job_id = await tx.enqueue("migrate_document", api_key_id=tenant.api_key_id, migration_id=migration_id)
        await repo.insert_migration(
            tx.conn,
            api_key_id=tenant.api_key_id,
            id=migration_id,
            organization_id=data.organizationId,
            document_id=data.documentId,
            new_document_id=data.newDocumentId,
            job_id=job_id,
            now=svc.now_ms(),
        )
    return {"migrationId": migration_id}


async def status(svc: Services, *, tenant: Tenant, data: MigrationStatus) -> dict[str, Any]:
    """Where a migration stands: pending, in_progress, completed, or failed with a reason."""
    async with svc.pool.connection() as conn:
        row = await repo.get_migration(
            conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId, id=data.migrationId
        )
    if row is None:
        raise ApiError("NOT_FOUND", "Migration not found.")
    state, reason = row["status"], row["reason"]
    if state in ("pending", "in_progress") and row["job_status"] == "failed":
        state, reason = "failed", f"The migration job failed: {row['job_error']}"
    result = {"migrationId": row["id"], "status": state, "documentId": row["document_id"],
              "newDocumentId": row["new_document_id"]}
    return result | ({"reason": reason} if reason else {})


@tracked(max_tries=5)
async def migrate_document(ctx: dict, *, api_key_id: str, migration_id: str) -> dict[str, Any] | None:
    """Move the document and its data to the new id in one transaction; a refusal is recorded as failed."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        migration = await repo.start_migration(conn, api_key_id=api_key_id, id=migration_id, now=svc.now_ms())
    if migration is None:
        return None  # finished on an earlier delivery
    key = {"api_key_id": api_key_id, "id": migration_id}
    try:
        async with transaction(svc.pool, svc.redis) as tx:
            reason = await repo.move(
                tx.conn,
                api_key_id=api_key_id,
                organization_id=migration["organization_id"],
                id=migration["document_id"],
                new_id=migration["new_document_id"],
                now=svc.now_ms(),
            )
            if reason is None:
                await repo.finish_migration(tx.conn, **key, status="completed", reason=None, now=svc.now_ms())
                await _migrated(tx, migration, status="completed", reason=None, now=svc.now_ms())
    except UniqueViolation:
        # Another migration took the target id meanwhile, or feature data (such as CRDT content) sits there.
        reason = (f"Document {migration['new_document_id']} already exists or holds data in organization "
                  f"{migration['organization_id']}.")
    if reason is not None:
        async with transaction(svc.pool, svc.redis) as tx:
            await repo.finish_migration(tx.conn, **key, status="failed", reason=reason, now=svc.now_ms())
            await _migrated(tx, migration, status="failed", reason=reason, now=svc.now_ms())
        return {"status": "failed", "reason": reason}
    return {"status": "completed"}


async def _migrated(tx, migration: dict[str, Any], *, status: str, reason: str | None, now: int) -> None:
    """The `document.migrate` webhook event of a finished migration (one per migration, however often it runs)."""
    payload = {"migrationId": migration["id"], "status": status, "documentId": migration["document_id"],
               "newDocumentId": migration["new_document_id"]} | ({"reason": reason} if reason else {})
    await webhook_events.emit(tx, now=now, api_key_id=migration["api_key_id"], event_type="document.migrate",
                              organization_id=migration["organization_id"], document_id=migration["document_id"],
                              payload=payload, dedupe=f"document.migrate:{migration['id']}")
