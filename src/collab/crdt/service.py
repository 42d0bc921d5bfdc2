"""CRDT editor content: one Yjs document per editor, written as diffs and merged with Yjs clients' updates."""

import asyncio
import base64
import binascii
import logging
from typing import Any, Callable

from collab.crdt import repository as repo
from collab.crdt import ydoc
from collab.crdt.schemas import AddCrdt, CrdtEditor, DeleteCrdt, GetCrdt, UpdateCrdt
from collab.kit import fanout, paging
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError, invalid, issue, not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.webhooks import events as webhook_events

log = logging.getLogger("collab.crdt")
ALREADY_EXISTS = "CRDT data already exists for this editor ID."
DELETED = "CRDT data deleted."
UNREADABLE = "This editor's stored document cannot be read; replace it with crdt/update data, or delete it"
# A page holds at most this many editors (and about COLLAB_MAX_RESPONSE_BYTES of JSON).
PAGE_EDITORS = 1000
# The messages Velt clients know for a missing id (the organization's has no full stop there either).
_REQUIRED = {
    "organizationId": "Organization ID is required", "documentId": "Document ID is required.",
    "editorId": "Editor ID is required."
}


def _require(data: Any, *fields: str) -> None:
    missing = [f for f in fields if getattr(data, f) is None]
    if missing:
        raise invalid(_REQUIRED[missing[0]], [issue([f], _REQUIRED[f], "invalid_type") for f in missing])


def _check_data(data: Any, kind: str) -> None:
    message = "Data is required." if data is None else ydoc.shape_error(kind, data)
    if message:
        raise invalid(message, [issue(["data"], message, "invalid_type")])


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"


async def _off_loop(svc: Services, field: str, fn: Callable[..., bytes], *args: Any) -> bytes:
    """Run pycrdt and diff work in a thread (documents can be large); bad content is INVALID_ARGUMENT."""
    try:
        state = await asyncio.to_thread(fn, *args)
    except ydoc.BadContent as exc:
        raise invalid(str(exc), [issue([field], str(exc))]) from None
    limit = svc.settings.crdt_max_state_bytes
    if len(state) > limit:
        message = f"The CRDT document would exceed {_size(limit)}."
        raise invalid(message, [issue([field], message, "too_big")])
    return state


def _decode_update(text: str) -> bytes:
    # Standard or URL-safe alphabet, padding optional: what JavaScript base64 helpers produce.
    text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        message = "yjsUpdate is not valid base64."
        raise invalid(message, [issue(["yjsUpdate"], message, "invalid_string")]) from None


async def add(svc: Services, *, tenant: Tenant, data: AddCrdt) -> None:
    """Store JSON content as an editor's new Yjs document; ALREADY_EXISTS when the editor has one."""
    _require(data, "organizationId", "documentId", "editorId")
    assert data.organizationId is not None and data.documentId is not None and data.editorId is not None
    _check_data(data.data, data.type)
    state = await _off_loop(svc, "data", ydoc.write, data.type, data.contentKey, None, data.data)
    async with transaction(svc.pool, svc.redis) as tx:
        cap = svc.settings.crdt_max_editors_per_document
        editors = await repo.count_editors_locked(tx.conn, api_key_id=tenant.api_key_id,
                                                  organization_id=data.organizationId, document_id=data.documentId)
        # An editor that exists is ALREADY_EXISTS at the cap too (under the lock, no add can slip in between).
        if editors >= cap and not await repo.exists(tx.conn, api_key_id=tenant.api_key_id,
                                                    organization_id=data.organizationId, document_id=data.documentId,
                                                    editor_id=data.editorId):
            raise ApiError("RESOURCE_EXHAUSTED", f"A document holds at most {cap} CRDT editors; delete one first.")
        added = await repo.insert(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                  document_id=data.documentId, editor_id=data.editorId, type=data.type,
                                  content_key=data.contentKey, state=state, last_updated_by=data.userId,
                                  session_id=data.sessionId, now=svc.now_ms())
        if added:
            await webhook_events.crdt_changed(tx.conn, now=svc.now_ms(), api_key_id=tenant.api_key_id,
                                              organization_id=data.organizationId, document_id=data.documentId,
                                              editor_id=data.editorId, user_id=data.userId)
    if not added:
        raise ApiError("ALREADY_EXISTS", ALREADY_EXISTS)
    await fanout.publish(svc.redis, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                         document_id=data.documentId, editor_id=data.editorId, message=fanout.sync_update(state))


async def get(svc: Services, *, tenant: Tenant, data: GetCrdt) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the editor records of a document (one editor's when editorId is given), in editor id order, of
    about `max_response_bytes` (at least one editor), and the next page's token."""
    _require(data, "organizationId", "documentId")
    assert data.organizationId is not None and data.documentId is not None
    filters = data.model_dump(exclude={"pageToken"})
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "crdt", filters)
    (after_id, ) = pager.after(data.pageToken, 1)
    budget, yjs = svc.settings.max_response_bytes, data.format == "yjs"
    async with svc.pool.connection() as conn:
        rows = await repo.list_editors(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                       document_id=data.documentId, editor_id=data.editorId, after_id=after_id, yjs=yjs,
                                       limit=PAGE_EDITORS + 1, budget=budget)
    # Updates that arrived over the WebSocket and are not compacted yet are part of the document.
    rows = [_with_pending(r) for r in rows]
    try:
        contents = await asyncio.to_thread(lambda: [_content(r, yjs=yjs) for r in rows])
    except ydoc.BadContent as exc:
        raise ApiError("FAILED_PRECONDITION", f"{UNREADABLE} ({exc})") from None
    records = {row["editor_id"]: content for row, content in zip(rows, contents)}
    return pager.cut(rows, PAGE_EDITORS, "editor_id", budget=budget,
                     render=lambda row: CrdtEditor.wire(row, records[row["editor_id"]], yjs=yjs))


def _with_pending(row: dict[str, Any]) -> dict[str, Any]:
    """An editor row whose realtime updates (not yet compacted) make its last change."""
    if not row.get("pending"):
        return row
    return row | {
        "last_update": max(row["last_update"], row["pending_at"]), "last_updated_by": row["pending_by"],
        "session_id": None
    }


def _content(row: dict[str, Any], *, yjs: bool) -> Any:
    """The row's content, its pending realtime updates folded in (the folded state kept on the row for the yjs
    format). A read writes nothing: an update that cannot be folded is left out here and quarantined by the next
    write."""
    if not row.get("pending"):
        return ydoc.read(row["type"], row["content_key"], row["state"])
    doc, bad = ydoc.fold(row["type"], row["content_key"], row["state"], row.pop("pending"))
    for index, why in bad:
        log.warning("crdt editor %s: pending update %d left out of a read: %s", row["editor_id"], index, why)
    if yjs:
        row["state"] = doc.get_update()
    return ydoc.read(row["type"], row["content_key"], doc)


async def _folded(conn: Any, key: dict[str, Any], row: dict[str, Any], now: int) -> tuple[bytes, int | None]:
    """The locked editor's state with its pending realtime updates folded in (those that cannot be are quarantined),
    and the last seq folded."""
    pending = (await repo.pending(conn, api_key_id=key["api_key_id"], organization_id=key["organization_id"],
                                  document_id=key["document_id"], editor_ids=[key["editor_id"]])).get(key["editor_id"])
    if not pending:
        return row["state"], None
    doc, bad = await asyncio.to_thread(ydoc.fold, row["type"], row["content_key"], row["state"],
                                       [p["yjs_update"] for p in pending])
    if bad:
        reasons = {pending[i]["seq"]: why for i, why in bad}
        log.warning("crdt editor %s/%s (key %s): quarantined pending updates %s", key["document_id"], key["editor_id"],
                    key["api_key_id"], reasons)
        await repo.quarantine(conn, **key, reasons=reasons, now=now)
    return await asyncio.to_thread(doc.get_update), pending[-1]["seq"]


async def compact(svc: Services, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str) -> bool:
    """Fold an editor's pending realtime updates into its stored state (quarantining those that cannot be); False
    when there was nothing to fold."""
    key = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "editor_id": editor_id
    }
    async with transaction(svc.pool, svc.redis) as tx:
        row = await repo.lock(tx.conn, **key)
        if row is None:
            return False
        pending = (await repo.pending(tx.conn, api_key_id=api_key_id, organization_id=organization_id,
                                      document_id=document_id, editor_ids=[editor_id])).get(editor_id)
        if not pending:
            return False
        state, _ = await _folded(tx.conn, key, row, svc.now_ms())
        last = pending[-1]
        await repo.save(tx.conn, **key, state=state, last_updated_by=last["user_id"], session_id=None,
                        now=last["created_at"])
        await repo.clear_updates(tx.conn, **key, upto=last["seq"])
    return True


async def update(svc: Services, *, tenant: Tenant, data: UpdateCrdt) -> None:
    """Change an editor's document by CRDT operations (a diff of data, or a client's Yjs update), so edits merge."""
    _require(data, "organizationId", "documentId", "editorId")
    assert data.organizationId is not None and data.documentId is not None and data.editorId is not None
    if (data.data is None) == (data.yjsUpdate is None):
        message = "Provide exactly one of data and yjsUpdate."
        raise invalid(message, [issue(["data"], message), issue(["yjsUpdate"], message)])
    client_update = _decode_update(data.yjsUpdate) if data.yjsUpdate is not None else None
    key: dict[str, Any] = {
        "api_key_id": tenant.api_key_id, "organization_id": data.organizationId, "document_id": data.documentId,
        "editor_id": data.editorId
    }
    async with transaction(svc.pool, svc.redis) as tx:
        # Locked from read to write: two concurrent updates apply one after the other, neither is lost.
        row = await repo.lock(tx.conn, **key)
        if row is None:
            raise not_found("crdt", "editor")
        kind, content_key = row["type"], row["content_key"]
        # Realtime edits not compacted yet are part of the document: the diff and the update apply on top of them.
        before, folded = await _folded(tx.conn, key, row, svc.now_ms())
        if client_update is None:
            _check_data(data.data, kind)
            state = await _off_loop(svc, "data", ydoc.write, kind, content_key, before, data.data)
        else:
            state = await _off_loop(svc, "yjsUpdate", ydoc.merge, kind, content_key, before, client_update)
        await repo.save(tx.conn, **key, state=state, last_updated_by=data.userId, session_id=data.sessionId,
                        now=svc.now_ms())
        if folded is not None:
            await repo.clear_updates(tx.conn, **key, upto=folded)
        await webhook_events.crdt_changed(tx.conn, now=svc.now_ms(), **key, user_id=data.userId)
    # Connected realtime clients get what changed at once (after commit: a reconnect would find it stored).
    change = await asyncio.to_thread(ydoc.diff, before, state)
    await fanout.publish(svc.redis, **key, message=fanout.sync_update(change))


async def delete(svc: Services, *, tenant: Tenant, data: DeleteCrdt) -> dict[str, Any]:
    """Delete editors' documents (all of the document's when editorIds is omitted); results keyed by editor id."""
    _require(data, "organizationId", "documentId")
    assert data.organizationId is not None and data.documentId is not None
    async with transaction(svc.pool, svc.redis) as tx:
        deleted = await repo.delete(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    document_id=data.documentId, editor_ids=data.editorIds)
    ids = data.editorIds if data.editorIds is not None else sorted(deleted)
    return {
        i: {"success": i in deleted, "id": i, "message": DELETED if i in deleted else not_found_message("crdt")}
        for i in ids
    }
