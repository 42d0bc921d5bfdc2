"""The signed URLs this service serves itself: the PUT of an upload slot's bytes (once, bounded before the body is
read, streamed into one buffer) and the GET of a source's original file or canonical markdown."""

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timezone

from collab.files import normalise_mime_type
from collab.kit.errors import ApiError, invalid, issue
from collab.kit.ratelimit import check, concurrency
from collab.kit.services import Services
from collab.knowledge import bounds, urls
from collab.knowledge import repository as repo
from collab.knowledge.service import FULL, REFUSED

UPLOADED = "This upload URL has stored its file already; an upload URL takes one upload (request another)."
# A signed PUT's body must arrive within this long (a slow sender must not keep an upload place for ever).
RECEIVE_S = 300


def _now(svc: Services) -> datetime:
    return datetime.fromtimestamp(svc.clock(), tz=timezone.utc)


def _declared_length(value: str | None) -> int:
    """The Content-Length a signed PUT must send (411 without one)."""
    if value is None or not value.strip().isdigit():
        raise ApiError("INVALID_ARGUMENT", "A Content-Length header is required (no chunked uploads).",
                       details={"issues": [issue(["Content-Length"], "Required", "invalid_type")]}, http_status=411)
    return int(value)


def _too_big(length: int, declared: int) -> ApiError:
    return ApiError(
        "INVALID_ARGUMENT", f"The upload is {length} bytes, over the fileSize of {declared} bytes this "
        "upload URL was minted for.", details={"issues": [issue(["Content-Length"], "Over fileSize", "too_big")]},
        http_status=413)


async def _receive(body: AsyncIterator[bytes], length: int) -> bytearray:
    """Exactly `length` bytes of the body, read into one buffer of that size (no list of parts, no join)."""
    content = bytearray(length)
    view = memoryview(content)
    got = 0
    async with asyncio.timeout(RECEIVE_S):
        async for part in body:
            if got + len(part) > length:
                raise _too_big(got + len(part), length)
            view[got:got + len(part)] = part
            got += len(part)
    view.release()
    if got < length:
        raise invalid(f"The upload ended after {got} of its {length} bytes.")
    return content


async def put_upload(svc: Services, *, token: str, content_type: str | None, content_length: str | None,
                     body: AsyncIterator[bytes]) -> None:
    """Store the bytes PUT to a signed upload URL, once: Content-Length required and at most the declared fileSize,
    checked before the body is read, which is then streamed into one buffer of that size; PERMISSION_DENIED for
    any bad token, ALREADY_EXISTS for a second PUT."""
    claims = urls.read(svc.keyring, token, purposes=("upload", ), now_ms=int(svc.clock() * 1000))
    if claims is None:
        raise ApiError("PERMISSION_DENIED", REFUSED)
    _, api_key_id, upload_id, mime = claims
    if normalise_mime_type(content_type or "") != mime:
        raise ApiError("PERMISSION_DENIED", "The Content-Type must be the mimeType the upload URL was minted for.")
    length = _declared_length(content_length)
    settings = svc.settings
    await check(svc.redis, bucket=f"knowledge-upload:{api_key_id}", rate=settings.rate_limit_knowledge_upload,
                now=svc.clock(), message="Too many knowledge uploads for this API key; retry later.")
    async with svc.pool.connection() as conn:
        slot = await repo.upload_slot(conn, api_key_id=api_key_id, upload_id=upload_id)
        stored = await repo.stored_bytes(conn, api_key_id=api_key_id) if slot else 0
    if slot is None or slot["expires_at"] <= _now(svc):
        raise ApiError("PERMISSION_DENIED", REFUSED)
    if slot["status"] != "pending":
        raise ApiError("ALREADY_EXISTS", UPLOADED)
    if length > slot["declared_size"]:
        raise _too_big(length, slot["declared_size"])
    if length == 0:
        raise invalid("The upload is empty.")
    if stored + length > settings.knowledge_max_key_bytes:
        raise ApiError("RESOURCE_EXHAUSTED", FULL)
    with bounds.receiving(settings.knowledge_uploads_in_flight):
        async with concurrency(
                svc.redis, bucket=f"knowledge-upload:{api_key_id}", limit=settings.knowledge_uploads_in_flight_per_key,
                ttl_s=RECEIVE_S + 60,
                message="Too many knowledge uploads in flight for this API key; retry when one has "
                "finished."):
            try:
                content = await _receive(body, length)
            except TimeoutError:
                raise ApiError("DEADLINE_EXCEEDED", f"The upload did not arrive within {RECEIVE_S} s.") from None
            async with svc.pool.connection() as conn:
                if await repo.store_upload(conn, api_key_id=api_key_id, upload_id=upload_id, content=content,
                                           now=_now(svc)):
                    return
                slot = await repo.upload_slot(conn, api_key_id=api_key_id, upload_id=upload_id)
    if slot is not None and slot["status"] != "pending":  # another PUT of this URL stored its file first
        raise ApiError("ALREADY_EXISTS", UPLOADED)
    raise ApiError("PERMISSION_DENIED", REFUSED)


async def open_file(svc: Services, *, token: str) -> tuple[bytes, str, str | None]:
    """(bytes, MIME type, file name) a signed download URL opens; PERMISSION_DENIED for any bad token."""
    claims = urls.read(svc.keyring, token, purposes=("original", "canonical"), now_ms=int(svc.clock() * 1000))
    if claims is None:
        raise ApiError("PERMISSION_DENIED", REFUSED)
    purpose, api_key_id, source_id, _ = claims
    async with svc.pool.connection() as conn:
        row = await repo.source_content(conn, api_key_id=api_key_id, source_id=source_id)
        markdown = await repo.canonical_text(conn, api_key_id=api_key_id, source_id=source_id)
    if row is None or row["status"] != "ready":
        raise ApiError("PERMISSION_DENIED", REFUSED)
    name = row["file_name"]
    if purpose == "canonical":
        if markdown is None:
            raise ApiError("PERMISSION_DENIED", REFUSED)
        return markdown.encode(), "text/markdown; charset=utf-8", name
    if row["content"] is None:
        raise ApiError("PERMISSION_DENIED", REFUSED)
    return bytes(row["content"]), row["mime_type"], name
