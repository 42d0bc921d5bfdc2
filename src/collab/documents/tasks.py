"""Jobs of documents: the migration of a document to a new id."""

from typing import Any

from collab.documents import repository as repo
from collab.kit.db import constraints
from collab.kit.errors import ApiError
from collab.kit.jobs import job, transaction
from collab.kit.services import Services
from collab.webhooks import events as webhook_events


@job(timeout=600, max_tries=5)
async def migrate_document(ctx: dict, *, api_key_id: str, migration_id: str) -> dict[str, Any] | None:
    """Move the document and its data to the new id in one transaction; a refusal is recorded as failed."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        migration = await repo.start_migration(conn, api_key_id=api_key_id, id=migration_id, now=svc.now_ms())
    if migration is None:
        return None  # finished on an earlier delivery
    key = {"api_key_id": api_key_id, "id": migration_id}
    # Another migration took the target id meanwhile, or feature data (such as CRDT content) sits there.
    taken = (f"Document {migration['new_document_id']} already exists or holds data in organization "
             f"{migration['organization_id']}.")
    try:
        with constraints.mapped(ALREADY_EXISTS=taken):
            async with transaction(svc.pool, svc.redis) as tx:
                reason = await repo.move(tx.conn, api_key_id=api_key_id, organization_id=migration["organization_id"],
                                         id=migration["document_id"], new_id=migration["new_document_id"],
                                         now=svc.now_ms())
                if reason is None:
                    await repo.finish_migration(tx.conn, **key, status="completed", reason=None, now=svc.now_ms())
                    await _migrated(tx, migration, status="completed", reason=None, now=svc.now_ms())
    except ApiError as exc:
        reason = exc.message
    if reason is not None:
        async with transaction(svc.pool, svc.redis) as tx:
            await repo.finish_migration(tx.conn, **key, status="failed", reason=reason, now=svc.now_ms())
            await _migrated(tx, migration, status="failed", reason=reason, now=svc.now_ms())
        return {"status": "failed", "reason": reason}
    return {"status": "completed"}


async def _migrated(tx, migration: dict[str, Any], *, status: str, reason: str | None, now: int) -> None:
    """The `document.migrate` webhook event of a finished migration (one per migration, however often it runs)."""
    payload = {
        "migrationId": migration["id"], "status": status, "documentId": migration["document_id"],
        "newDocumentId": migration["new_document_id"]
    } | ({"reason": reason} if reason else {})
    await webhook_events.emit(tx, now=now, api_key_id=migration["api_key_id"], event_type="document.migrate",
                              organization_id=migration["organization_id"], document_id=migration["document_id"],
                              payload=payload, dedupe=f"document.migrate:{migration['id']}")
