"""Knowledge sources on the API side: validate, store, enqueue the ingest, answer from the rows; the signed upload
and download URLs this service serves itself."""

import base64
import binascii
import hashlib
from datetime import datetime, timezone
from typing import Any

from collab.files import normalise_mime_type
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import run_sync, transaction
from collab.kit.ratelimit import check, concurrency
from collab.kit.services import Services
from collab.knowledge import bounds, pipeline, urls
from collab.knowledge import repository as repo
from collab.knowledge.schemas import (
    MAX_INLINE_BYTES,
    IngestKnowledge,
    SearchKnowledge,
    SourceRef,
    UpdateKnowledge,
    UploadUrl,
)

LIST_LIMIT = 100  # Velt's: the 100 most recent sources, no pagination
MAX_OUTSTANDING_UPLOADS = 50  # Velt's: upload URLs a workspace may hold before ingesting them
NOT_RULE_BASED = "Version diff is only supported for rule-based knowledge sources."
STATUS = {"processing": "processing", "ready": "completed", "failed": "failed"}
REFUSED = "The signature is invalid or has expired."
FULL = "This API key's knowledge holds the most file bytes allowed; delete some sources."


def _now(svc: Services) -> datetime:
    return datetime.fromtimestamp(svc.clock(), tz=timezone.utc)


def _ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def _mime(value: str, path: list[str]) -> str:
    mime = normalise_mime_type(value)
    if mime not in pipeline.MIME_TYPES:
        raise invalid(f"Unsupported mimeType {value!r}.",
                      [issue(path, f"Must be one of {', '.join(pipeline.MIME_TYPES)}", "invalid_enum_value")])
    return mime


def _scope(organization_id: str | None, document_id: str | None) -> None:
    if document_id is not None and organization_id is None:
        raise invalid("documentId requires organizationId.", [issue(["documentId"], "Requires organizationId")])


def _inline(data: IngestKnowledge) -> tuple[bytes, str, str]:
    """(bytes, MIME type, file name) of an inline file, checked against its own bytes."""
    if data.file is None:
        raise invalid("file is required when source is 'inline'.", [issue(["file"], "Required", "invalid_type")])
    if data.fileRef is not None:
        raise invalid("fileRef is not accepted when source is 'inline'.", [issue(["fileRef"], "Not accepted")])
    mime = _mime(data.file.mimeType, ["file", "mimeType"])
    text = "".join(data.file.base64.split())
    try:
        content = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise invalid("file.base64 is not valid base64.", [issue(["file", "base64"], "Not valid base64")]) from None
    if not content:
        raise invalid("The decoded file is empty.", [issue(["file", "base64"], "The decoded file is empty")])
    if len(content) > MAX_INLINE_BYTES:
        raise invalid(f"The decoded file is over {MAX_INLINE_BYTES} bytes (5 MB).",
                      [issue(["file", "base64"], f"Over {MAX_INLINE_BYTES} bytes", "too_big")])
    mismatch = pipeline.bytes_match(content, mime)
    if mismatch is not None:
        raise invalid(mismatch, [issue(["file", "mimeType"], mismatch)])
    return content, mime, data.file.fileName.replace("\x00", "")


async def ingest(svc: Services, *, tenant: Tenant, data: IngestKnowledge) -> dict[str, Any]:
    """Store the file as a processing source and enqueue its ingest; the source id."""
    _scope(data.organizationId, data.documentId)
    inline = _inline(data) if data.source == "inline" else None
    if inline is None:
        if data.file is not None:
            raise invalid("file is not accepted when source is 'fileRef'.", [issue(["file"], "Not accepted")])
        problems = [
            issue([name], "Required when source is 'fileRef'", "invalid_type") for name in ("fileRef", "mimeType")
            if getattr(data, name) is None
        ]
        if problems:
            raise invalid("fileRef and mimeType are required when source is 'fileRef'.", problems)
        assert data.mimeType is not None and data.fileRef is not None
        _mime(data.mimeType, ["mimeType"])
    await check(svc.redis, bucket=f"knowledge-ingest:{tenant.workspace_id}",
                rate=svc.settings.rate_limit_knowledge_ingest, now=svc.clock(),
                message="Too many knowledge ingests for this workspace; retry later.")
    source_id = new_id("src_")
    async with transaction(svc.pool, svc.redis) as tx:
        queued = await repo.processing_in_workspace(tx.conn, workspace_id=tenant.workspace_id)
        if queued >= svc.settings.knowledge_max_processing_per_workspace:
            raise ApiError(
                "RESOURCE_EXHAUSTED", f"This workspace has {queued} knowledge ingests in progress; retry "
                "when some have finished.", headers={"Retry-After": "5"})
        if inline is not None and (await repo.stored_bytes(tx.conn, api_key_id=tenant.api_key_id) + len(inline[0])
                                   > svc.settings.knowledge_max_key_bytes):
            raise ApiError("RESOURCE_EXHAUSTED", FULL)
        if await repo.count_sources(tx.conn, api_key_id=tenant.api_key_id) >= svc.settings.knowledge_max_sources:
            raise ApiError("RESOURCE_EXHAUSTED", "This API key holds the most knowledge sources allowed; delete some.")
        if await repo.count_chunks(tx.conn, api_key_id=tenant.api_key_id) >= svc.settings.knowledge_max_key_chunks:
            raise ApiError("RESOURCE_EXHAUSTED", "This API key's knowledge sources hold the most text allowed; "
                           "delete some.")
        if inline is not None:
            content, mime, file_name = inline
            org, doc = data.organizationId, data.documentId
        else:
            content, mime, file_name, org, doc = await _take_upload(svc, tx.conn, tenant, data)
        await repo.insert_source(tx.conn, api_key_id=tenant.api_key_id, id=source_id, file_name=file_name,
                                 mime_type=mime, content=content, sha256=hashlib.sha256(content).hexdigest(),
                                 organization_id=org, document_id=doc)
        await tx.enqueue("ingest_knowledge", api_key_id=tenant.api_key_id, source_id=source_id)
    return {"status": "processing", "sourceId": source_id, "message": "Knowledge ingestion task enqueued."}


async def _take_upload(svc: Services, conn, tenant: Tenant, data: IngestKnowledge) -> tuple[bytes, str, Any, Any, Any]:
    """The bytes of an uploaded slot, claimed once; PERMISSION_DENIED or FAILED_PRECONDITION as Velt answers."""
    assert data.fileRef is not None and data.mimeType is not None
    upload_id = urls.upload_id(data.fileRef)
    slot = await repo.get_upload(conn, api_key_id=tenant.api_key_id, upload_id=upload_id) if upload_id else None
    if slot is None:  # another workspace's ref, one that never existed, and one removed a day after expiry read alike
        raise ApiError("PERMISSION_DENIED",
                       "The fileRef does not belong to this workspace (or expired more than a day ago).")
    if (slot["organization_id"], slot["document_id"]) != (data.organizationId, data.documentId):
        raise ApiError("PERMISSION_DENIED", "The organizationId and documentId must match those of the upload URL.")
    if normalise_mime_type(data.mimeType) != slot["mime_type"]:
        raise invalid("mimeType must match the upload's.", [issue(["mimeType"], "Differs from the upload URL's")])
    taken = await repo.take_upload(conn, api_key_id=tenant.api_key_id, upload_id=slot["id"], now=_now(svc))
    if taken is None or taken["content"] is None:
        raise ApiError("FAILED_PRECONDITION", "The file was never uploaded, has expired, or was already ingested.")
    content = bytes(taken["content"])
    mismatch = pipeline.bytes_match(content, slot["mime_type"])
    if mismatch is not None:
        raise invalid(mismatch, [issue(["mimeType"], mismatch)])
    return content, slot["mime_type"], taken["file_name"], slot["organization_id"], slot["document_id"]


async def upload_url(svc: Services, *, tenant: Tenant, data: UploadUrl, base: str) -> dict[str, Any]:
    """Mint an upload slot and its signed PUT URL (15 minutes)."""
    _scope(data.organizationId, data.documentId)
    mime = _mime(data.mimeType, ["mimeType"])
    now = _now(svc)
    expires_ms = _ms(now) + svc.settings.knowledge_url_ttl_s * 1000
    upload_id = new_id("upl_")
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await repo.lock_uploads(conn, api_key_id=tenant.api_key_id)
            if await repo.outstanding_uploads(conn, api_key_id=tenant.api_key_id, now=now) >= MAX_OUTSTANDING_UPLOADS:
                raise ApiError("RESOURCE_EXHAUSTED",
                               f"This workspace holds {MAX_OUTSTANDING_UPLOADS} outstanding upload URLs; ingest some.")
            stored = await repo.stored_bytes(conn, api_key_id=tenant.api_key_id)
            if stored + data.fileSize > svc.settings.knowledge_max_key_bytes:
                raise ApiError("RESOURCE_EXHAUSTED", FULL)
            await repo.insert_upload(conn, api_key_id=tenant.api_key_id, id=upload_id,
                                     organization_id=data.organizationId, document_id=data.documentId, mime_type=mime,
                                     file_name=(data.fileName or "").replace("\x00", "") or None,
                                     declared_size=data.fileSize,
                                     expires_at=datetime.fromtimestamp(expires_ms / 1000, tz=timezone.utc))
    token = urls.sign(svc.keyring, purpose="upload", api_key_id=tenant.api_key_id, id=upload_id, expires_ms=expires_ms,
                      mime_type=mime)
    return {
        "uploadUrl": urls.url(base, urls.UPLOAD_PATH, token), "fileRef": urls.file_ref(upload_id),
        "expiresAt": expires_ms
    }


def _download_urls(svc: Services, row: dict[str, Any], base: str) -> dict[str, str]:
    expires_ms = int(svc.clock() * 1000) + svc.settings.knowledge_url_ttl_s * 1000
    out = {}
    for field, purpose, available in (("originalDownloadUrl", "original", row["has_content"]),
                                      ("canonicalMdDownloadUrl", "canonical", True)):
        token = urls.sign(svc.keyring, purpose=purpose, api_key_id=row["api_key_id"], id=row["id"],
                          expires_ms=expires_ms)
        out[field] = urls.url(base, urls.DOWNLOAD_PATH, token) if available else ""
    return out


def _failure_reason(row: dict[str, Any]) -> str:
    if row["failure_reason"]:
        return row["failure_reason"]
    # An extraction's failed file: the documented reason closest to what went wrong.
    return "pdf-llm-conversion-failed" if row[
        "mime_type"] == pipeline.PDF else "unsupported-mime-detected-post-validation"


def _status(svc: Services, row: dict[str, Any], base: str) -> dict[str, Any]:
    status = STATUS[row["status"]]
    out: dict[str, Any] = {
        "status": status, "sourceId": row["id"], "startedAt": _ms(row["created_at"]),
        "updatedAt": _ms(row["updated_at"]), "mimeType": row["mime_type"]
    }
    if status == "failed":
        out["failureReason"] = _failure_reason(row)
    if status == "completed":
        out |= {
            "extractedRulesCount": row["rule_count"], "chunkCount": row["chunk_count"],
            **_download_urls(svc, row, base)
        }
        if row["used_raw_fallback"]:
            out["metadata"] = {"usedRawFallback": True}
    return out


async def _source(svc: Services, tenant: Tenant, source_id: str) -> dict[str, Any]:
    async with svc.pool.connection() as conn:
        row = await repo.get_source(conn, api_key_id=tenant.api_key_id, source_id=source_id)
    if row is None:
        raise not_found("knowledge_source")
    return row


async def status(svc: Services, *, tenant: Tenant, data: SourceRef, base: str) -> dict[str, Any]:
    """An ingestion's status (with fresh download URLs once completed)."""
    return _status(svc, await _source(svc, tenant, data.sourceId), base)


async def list_sources(svc: Services, *, tenant: Tenant, base: str) -> list[dict[str, Any]]:
    """The 100 newest sources of the key, extraction's files included."""
    async with svc.pool.connection() as conn:
        rows = await repo.list_sources(conn, api_key_id=tenant.api_key_id, limit=LIST_LIMIT)
    out = []
    for row in rows:
        item = {
            "id": row["id"], "sourceType": "upload" if row["kind"] == "upload" else "extraction",
            "fileName": row["file_name"], "uploadedAt": _ms(row["created_at"]), "updatedAt": _ms(row["updated_at"]),
            "mimeType": row["mime_type"], "embeddingStatus": STATUS[row["status"]], "ruleCount": row["rule_count"],
            "chunkCount": row["chunk_count"], "version": row["version"], "ruleBased": row["rule_based"],
            "sizeBytes": row["size_bytes"], "sha256": row["sha256"]
        }
        for field, column in (("organizationId", "organization_id"), ("documentId", "document_id")):
            if row[column] is not None:
                item[field] = row[column]
        if row["status"] == "failed":
            item["failureReason"] = _failure_reason(row)
        if row["status"] == "ready":
            item |= _download_urls(svc, row, base)
            if row["used_raw_fallback"]:
                item["metadata"] = {"usedRawFallback": True}
        out.append(item)
    return out


async def search(svc: Services, *, tenant: Tenant, data: SearchKnowledge) -> dict[str, Any]:
    """Semantic search of the key's chunks (and rules); the whole search is one job on the search lane."""
    if not data.query.strip():
        raise invalid("query must not be empty.", [issue(["query"], "Must not be empty")])
    return await run_sync(svc.redis, "search_knowledge", timeout_s=svc.settings.search_timeout_s,
                          api_key_id=tenant.api_key_id, data=data.model_dump(exclude_none=True))


async def rules(svc: Services, *, tenant: Tenant, data: SourceRef) -> list[dict[str, Any]]:
    """A source's extracted rules, in order."""
    await _source(svc, tenant, data.sourceId)
    async with svc.pool.connection() as conn:
        rows = await repo.current_rules(conn, api_key_id=tenant.api_key_id, source_id=data.sourceId)
    return [{"id": r["id"], "content": r["content"], "category": r["category"], "index": r["ordinal"]} for r in rows]


async def update(svc: Services, *, tenant: Tenant, data: UpdateKnowledge) -> dict[str, Any]:
    """A rule-based source's new version, with its rule diff (the model runs in the worker)."""
    if not data.newContent.strip():
        raise invalid("newContent must not be empty.", [issue(["newContent"], "Must not be empty")])
    row = await _source(svc, tenant, data.sourceId)
    # An update costs what an ingest does (a model call, embeddings, a version): the same budget.
    await check(svc.redis, bucket=f"knowledge-ingest:{tenant.workspace_id}",
                rate=svc.settings.rate_limit_knowledge_ingest, now=svc.clock(),
                message="Too many knowledge ingests for this workspace; retry later.")
    if row["status"] != "ready":
        raise ApiError("FAILED_PRECONDITION", "The knowledge source is not completed; poll its ingest status.")
    if not row["rule_based"]:
        raise ApiError("FAILED_PRECONDITION", NOT_RULE_BASED)
    settings = svc.settings
    # One of the workspace's extraction slots while the update runs (its ingests and extractions share them).
    async with concurrency(svc.redis, bucket=bounds.slot_bucket(tenant.workspace_id),
                           limit=settings.extraction_max_concurrency_per_workspace,
                           ttl_s=int(settings.knowledge_timeout_s) + 30, message=bounds.BUSY):
        return await run_sync(svc.redis, "update_knowledge", timeout_s=settings.knowledge_timeout_s,
                              api_key_id=tenant.api_key_id, workspace_id=tenant.workspace_id, source_id=data.sourceId,
                              content=data.newContent)


async def delete(svc: Services, *, tenant: Tenant, data: SourceRef) -> dict[str, Any]:
    """Hard-delete a source with its chunks, rules, vectors and versions."""
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            gone = await repo.delete_source(conn, api_key_id=tenant.api_key_id, source_id=data.sourceId)
            if gone is None:
                exists = await repo.get_source(conn, api_key_id=tenant.api_key_id, source_id=data.sourceId)
                if exists is None:
                    raise not_found("knowledge_source")
                raise ApiError(
                    "FAILED_PRECONDITION", "The knowledge source is still processing; poll its ingest status "
                    "until it is terminal, then retry.")
    return {
        "status": "deleted", "sourceId": data.sourceId, "deletedChunks": gone["chunks"], "deletedRules": gone["rules"]
    }


async def download(svc: Services, *, tenant: Tenant, data: SourceRef) -> str | None:
    """A completed source's canonical markdown; None for anything else (Velt answers null, not an error)."""
    async with svc.pool.connection() as conn:
        return await repo.canonical_text(conn, api_key_id=tenant.api_key_id, source_id=data.sourceId)
