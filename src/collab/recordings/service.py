"""Recordings (recorder annotations): import versions, get the latest of each, delete."""

from typing import Any

from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.recordings import repository as repo
from collab.recordings.schemas import AddRecordings, DeleteRecordings, GetRecordings, Recording, RecordingIn

OTHER_DOCUMENT = "Recording belongs to another document."


def _attachments(recording: RecordingIn) -> list[dict[str, Any]]:
    # attachmentId numbers each version's files 1..n, in the order sent.
    return [{"attachmentId": i, **a.model_dump()} for i, a in enumerate(recording.attachments, start=1)]


async def add(svc: Services, *, tenant: Tenant, data: AddRecordings) -> dict[str, Any]:
    """Import recordings; an existing annotationId gets a new version. Results keyed by annotationId."""
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    items = [(r.annotationId or new_id("rec_"), r) for r in data.recordings]
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        # Annotations are locked in one order by every writer, so two imports cannot deadlock.
        for annotation_id, recording in sorted(items, key=lambda item: item[0]):
            existing = await repo.lock_and_find(tx.conn, **key, annotation_id=annotation_id)
            if existing is not None and existing != data.documentId:
                results[annotation_id] = {"success": False, "id": annotation_id, "message": OTHER_DOCUMENT}
                continue
            version = await repo.insert_version(
                tx.conn, **key, document_id=data.documentId, annotation_id=annotation_id,
                recording_type=recording.recordingType, mode=recording.mode, display_name=recording.displayName,
                duration_ms=recording.recordedTime.duration, attachments=_attachments(recording),
                from_user=recording.from_.model_dump(exclude_none=True) if recording.from_ else None, now=now)
            message = "Recording added." if version == 1 else f"Recording version {version} added."
            results[annotation_id] = {"success": True, "id": annotation_id, "message": message}
    # Answer in the order sent.
    return {annotation_id: results[annotation_id] for annotation_id, _ in items}


async def get(svc: Services, *, tenant: Tenant, data: GetRecordings) -> tuple[list[dict[str, Any]], str | None]:
    """A page of recording annotations (latest version each) in annotationId order, at most `pageSize` records
    and about `max_response_bytes` of JSON (at least one record), and the token of the next page."""
    pager = paging.Pager(svc.keyring, f"{tenant.api_key_id}:recordings:{data.organizationId}")
    (after_id, ) = pager.after(data.pageToken, 1)
    budget = svc.settings.max_response_bytes
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    document_id=data.documentId, annotation_ids=data.recordingIds, after_id=after_id,
                                    limit=data.pageSize + 1, budget=budget)
    return pager.cut(rows, data.pageSize, "annotation_id", render=Recording.wire, budget=budget)


async def delete(svc: Services, *, tenant: Tenant, data: DeleteRecordings) -> dict[str, Any]:
    """Delete recordings with all their versions; results keyed by annotationId."""
    async with transaction(svc.pool, svc.redis) as tx:
        deleted = await repo.delete(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    annotation_ids=data.annotationIds)
    return {
        a: {
            "success": a in deleted, "id": a,
            "message": "Recording deleted." if a in deleted else not_found_message("recording")
        }
        for a in data.annotationIds
    }
