"""Comments inside one thread: add, get, update (an edit), delete; reactions on them."""

from typing import Any

from collab.comments import access, events, pages
from collab.comments import repository as repo
from collab.comments.schemas import (
    MAX_COMMENT_BYTES,
    AddComments,
    Comment,
    CommentBrief,
    CommentIn,
    DeleteComments,
    GetComments,
    Reaction,
    UpdateComments,
    json_size,
)
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import invalid, issue, not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services


def limit_issue(path: list[Any], cap: int) -> dict[str, Any]:
    return issue(path, f"A comment thread holds at most {cap} comments.", "too_big")


def _wire(*, id: int, source: CommentIn, now: int) -> dict[str, Any]:
    """The comment as stored and shown (a new one has no reactions; an imported one keeps its times)."""
    created = source.createdAt if source.createdAt is not None else now
    return Comment.wire({
        "id": id, "comment_text": source.commentText, "comment_html": source.commentHtml,
        "from_user": source.from_.model_dump(exclude_none=True), "created_at": created,
        "updated_at": source.lastUpdated if source.lastUpdated is not None else created, "is_edited": False,
        "tagged": [t.model_dump(exclude_none=True) for t in source.taggedUserContacts or []], "reactions": [],
        "attachments": [a.model_dump(exclude_none=True)
                        for a in source.attachments or []], "agent": source.agent, "context": source.context
    })


def not_future(times: list[int | None], now: int, path: list[Any]) -> None:
    """INVALID_ARGUMENT when an imported time is after now (it would sort above everything made since)."""
    if any(t is not None and t > now for t in times):
        message = "createdAt and lastUpdated are epoch milliseconds no later than now."
        raise invalid(message, [issue(path, message, "too_big")])


async def insert_comments(conn: Conn, *, tenant: Tenant, thread: dict[str, Any], comments: list[CommentIn], now: int,
                          touched: int | None = None) -> list[tuple[dict[str, Any], CommentIn, list[str]]]:
    """Store comments in a (locked or new) thread, stamped updated at `touched` (else now): each one added as shown,
    its source, and the users it newly mentions. An imported commentId the thread holds is skipped (a retry)."""
    key = {"api_key_id": tenant.api_key_id, "organization_id": thread["organization_id"]}
    given = [c.commentId for c in comments if c.commentId is not None]
    fresh = len(comments) - len(given)
    last = await repo.take_comment_ids(conn, **key, id=thread["id"], count=fresh,
                                       now=now if touched is None else touched, floor=max(given, default=0))
    new_ids = iter(range(last - fresh + 1, last + 1))  # above every imported id: none can clash
    wires = [
        _wire(id=source.commentId if source.commentId is not None else next(new_ids), source=source, now=now)
        for source in comments
    ]
    where = {**key, "document_id": thread["document_id"], "annotation_id": thread["id"]}
    # One statement for all of them (and one for their mentions), not a round trip per comment.
    added = await repo.insert_comments(
        conn, **where, rows=[{
            "id": w["commentId"], "comment_text": s.commentText, "comment_html": s.commentHtml, "from_user": w["from"],
            "tagged": w["taggedUserContacts"], "attachments": w["attachments"], "agent": s.agent, "context": s.context,
            "created_at": w["createdAt"], "updated_at": w["lastUpdated"]
        } for w, s in zip(wires, comments)])
    kept = [(w, s) for w, s in zip(wires, comments) if w["commentId"] in added]
    wires, comments = [w for w, _ in kept], [s for _, s in kept]
    pairs = [(w["commentId"], t["userId"]) for w in wires for t in w["taggedUserContacts"]]
    stored = await repo.insert_new_mentions(conn, **where, pairs=pairs) if pairs else []
    mentioned: dict[int, list[str]] = {}
    for comment_id, user_id in stored:
        mentioned.setdefault(comment_id, []).append(user_id)
    return [(w, s, mentioned.get(w["commentId"], [])) for w, s in zip(wires, comments)]


async def _thread(conn: Conn, tenant: Tenant, data: Any, *, lock: bool) -> dict[str, Any]:
    thread = await repo.get_annotation(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                       document_id=data.documentId, id=data.annotationId, lock=lock)
    if thread is None:
        raise not_found("annotation")
    return thread


async def _briefs(conn: Conn, thread: dict[str, Any], ids: list[int] | None) -> dict[int, dict[str, Any]]:
    """Named comments of a thread by id (all when ids is None), without their blobs (comment_briefs)."""
    rows = await repo.comment_briefs(conn, api_key_id=thread["api_key_id"], organization_id=thread["organization_id"],
                                     annotation_id=thread["id"], ids=ids, preview=events.PREVIEW)
    return {r["id"]: r for r in rows}


async def _participants(conn: Conn, thread: dict[str, Any]) -> set[str]:
    """The thread's creator, assignee, authors and tagged users (from their ids: no comment is read whole)."""
    people = await repo.thread_participants(conn, api_key_id=thread["api_key_id"],
                                            organization_id=thread["organization_id"], annotation_id=thread["id"])
    return people | {thread["from_id"], *([thread["assigned_id"]] if thread["assigned_id"] else [])}


def thread_issue(path: list[Any], cap: int) -> dict[str, Any]:
    return issue(path, f"A comment thread holds at most {cap} bytes of JSON.", "too_big")


async def room(conn: Conn, svc: Services, thread: dict[str, Any], *, path: str, count: int = 0,
               adding: int = 0) -> None:
    """INVALID_ARGUMENT on `path` when `count` more comments and `adding` more bytes would pass the thread's caps
    (called after a change that grew it, with neither); what it holds is read from the stored sizes."""
    load = await repo.thread_load(conn, api_key_id=thread["api_key_id"], organization_id=thread["organization_id"],
                                  annotation_id=thread["id"])
    most, most_bytes = svc.settings.comments_max_per_thread, svc.settings.comments_max_thread_bytes
    if count and load["n"] + count > most:
        problem = limit_issue([path], most)
        raise invalid(f"{problem['message']} This one holds {load['n']}.", [problem])
    total = thread["bytes"] + load["bytes"] + adding
    if total > most_bytes:
        problem = thread_issue([path], most_bytes)
        raise invalid(f"{problem['message']} This one would hold {total}.", [problem])


async def _editable(conn: Conn, svc: Services, tenant: Tenant, data: Any) -> tuple[dict[str, Any], dict[int, dict]]:
    """The locked thread and its named comments by id (briefly), once the organization takes writes and (when asked)
    the actor, else each comment's author, may edit the document."""
    await access.writable(conn, tenant=tenant, organization_id=data.organizationId)
    thread = await _thread(conn, tenant, data, lock=True)
    before = await _briefs(conn, thread, data.commentIds)  # none named (a delete): every comment of the thread
    if data.verifyUserPermissions:
        writers = {data.actionUser.userId} if data.actionUser else {c["from_id"] for c in before.values()}
        access.require_visible(thread, writers)
        await access.verify(conn, tenant=tenant, organization_id=data.organizationId, document_id=data.documentId,
                            user_ids=writers or {"-"}, role="editor", svc=svc)
    return thread, before


@access.asks_provider
async def add(svc: Services, *, tenant: Tenant, data: AddComments) -> dict[str, Any]:
    """Add comments to a thread (within the per-thread caps); results keyed by the new commentIds."""
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        await access.writable(tx.conn, tenant=tenant, organization_id=data.organizationId)
        thread = await _thread(tx.conn, tenant, data, lock=True)
        if data.verifyUserPermissions:
            writers = {c.from_.userId for c in data.commentData}
            access.require_visible(thread, writers)
            await access.verify(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                document_id=data.documentId, user_ids=writers, role="editor", svc=svc)
        not_future([t for c in data.commentData for t in (c.createdAt, c.lastUpdated)], now, ["commentData"])
        await room(tx.conn, svc, thread, path="commentData", count=len(data.commentData),
                   adding=sum(json_size(c.stored()) for c in data.commentData))
        config = await events.config_of(tx.conn, tenant=tenant)
        sent = await insert_comments(tx.conn, tenant=tenant, thread=thread, comments=data.commentData, now=now)
        batch = [
            events.Event(
                events.record(action_type="comment.add", actor=wire["from"], thread=thread, comment=wire, now=now),
                log=source.triggerActivities, notify=source.triggerNotification, mentioned=mentioned)
            for wire, source, mentioned in sent
        ]
        await events.send(tx, svc, tenant=tenant, config=config, thread=thread, participants=await
                          _participants(tx.conn, thread), events=batch)
    added = {w["commentId"] for w, _, _ in sent}
    ids = [c.commentId for c in data.commentData if c.commentId is not None and c.commentId not in added]
    return {
        **{str(i): {"success": True, "id": str(i), "message": "Comment already exists."}
           for i in ids},
        **{str(i): {"success": True, "id": str(i), "message": "Comment added."}
           for i in sorted(added)}
    }


async def get(svc: Services, *, tenant: Tenant, data: GetComments) -> tuple[list[Any], str | None]:
    """A page of a thread's comments in order (only the given ids when named), within the response budget."""
    async with svc.pool.connection() as conn:
        thread = await _thread(conn, tenant, data, lock=False)
        return await pages.comments(conn, svc, tenant=tenant, thread=thread, ids=data.commentIds, user_ids=data.userIds,
                                    size=data.pageSize, token=data.pageToken)


FIELDS = {"commentText": "comment_text", "commentHtml": "comment_html", "taggedUserContacts": "tagged"}


def _edited(brief: dict[str, Any], change: dict[str, Any], now: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the comment as its update event quotes it, the changes): the new values whole (the request carried them),
    the old ones as stored, briefly."""
    new = {wire: change[column] for wire, column in FIELDS.items() if column in change}
    old = {
        "commentText": brief["text_preview"], "commentHtml": brief["html_preview"],
        "taggedUserContacts": [{"userId": u} for u in brief["tagged_ids"] or []]
    }
    changes = {wire: {"from": old[wire], "to": value} for wire, value in new.items()}
    quoted = {k: v for k, v in (CommentBrief.wire(brief) | new).items() if v is not None}  # a text set to null goes
    return quoted | {"lastUpdated": now, "isEdited": True}, changes


@access.asks_provider
async def update(svc: Services, *, tenant: Tenant, data: UpdateComments) -> dict[str, Any]:
    """Edit comments (text, html, tags): createdAt stays, lastUpdated moves, isEdited turns true."""
    now = svc.now_ms()
    given = data.updatedData.model_dump(by_alias=True, exclude_unset=True, exclude_none=True)
    named = data.updatedData.model_fields_set
    change: dict[str, Any] = {column: given.get(wire) for wire, column in FIELDS.items() if wire in named}
    if "tagged" in change:
        change["tagged"] = change["tagged"] or []
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        thread, before = await _editable(tx.conn, svc, tenant, data)
        config = await events.config_of(tx.conn, tenant=tenant)
        batch, grown = [], 0
        key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
        for comment_id in data.commentIds:
            if comment_id not in before:
                results[str(comment_id)] = {
                    "success": False, "id": str(comment_id), "message": not_found_message("comment")
                }
                continue
            size = (await repo.update_comment(tx.conn, **key, annotation_id=thread["id"], id=comment_id, change=change,
                                              now=now) or 0)
            _comment_room(before[comment_id]["bytes"], size)
            grown += size - before[comment_id]["bytes"]
            mentioned = []
            if "tagged" in change:
                mentioned = await repo.set_mentions(tx.conn, **key, document_id=thread["document_id"],
                                                    annotation_id=thread["id"], comment_id=comment_id,
                                                    user_ids=[t["userId"] for t in change["tagged"]])
            after, changes = _edited(before[comment_id], change, now)
            actor = data.actionUser.model_dump(exclude_none=True) if data.actionUser else after["from"]
            batch.append(
                events.Event(
                    events.record(action_type="comment.update", actor=actor, thread=thread, comment=after,
                                  changes=changes, now=now), notify=data.triggerNotification, mentioned=mentioned))
            results[str(comment_id)] = {"success": True, "id": str(comment_id), "message": "Comment updated."}
        if batch:
            if grown > 0:  # checked on the sizes Postgres now holds; refusing rolls every edit of the call back
                await room(tx.conn, svc, thread, path="updatedData")
            await repo.take_comment_ids(tx.conn, **key, id=thread["id"], count=0, now=now)
            await events.send(tx, svc, tenant=tenant, config=config, thread=thread, participants=await
                              _participants(tx.conn, thread), events=batch)
    return results


def _comment_room(old: int, new: int) -> None:
    """INVALID_ARGUMENT when an edit makes a comment larger than MAX_COMMENT_BYTES (one over it may shrink)."""
    if new > old and new > MAX_COMMENT_BYTES:
        message = f"A comment holds at most {MAX_COMMENT_BYTES} bytes of JSON."
        raise invalid(message, [issue(["updatedData"], message, "too_big")])


@access.asks_provider
async def delete(svc: Services, *, tenant: Tenant, data: DeleteComments) -> dict[str, Any]:
    """Delete comments of a thread (all of them when none is named; the thread stays, even empty); results keyed by
    commentId."""
    now = svc.now_ms()
    key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    async with transaction(svc.pool, svc.redis) as tx:
        thread, before = await _editable(tx.conn, svc, tenant, data)
        participants = await _participants(tx.conn, thread)  # before the deleted comments' authors and tags go
        ids = data.commentIds if data.commentIds is not None else sorted(before)
        deleted = await repo.delete_comments(tx.conn, **key, annotation_id=thread["id"], ids=ids)
        if deleted:
            config = await events.config_of(tx.conn, tenant=tenant)
            await repo.take_comment_ids(tx.conn, **key, id=thread["id"], count=0, now=now)
            batch = [
                events.Event(
                    events.record(
                        action_type="comment.delete", thread=thread, comment=CommentBrief.wire(before[i]), now=now,
                        actor=data.actionUser.model_dump(
                            exclude_none=True) if data.actionUser else before[i]["from_brief"]))
                for i in sorted(deleted)
            ]
            await events.send(tx, svc, tenant=tenant, config=config, thread=thread, participants=participants,
                              events=batch)
    return {
        str(i): {
            "success": i in deleted, "id": str(i),
            "message": "Comment deleted." if i in deleted else not_found_message("comment")
        }
        for i in ids
    }


# Reactions on one comment (every read renders them all): kinds of reaction, reactions of one user, and in all.
MAX_REACTION_KINDS, MAX_REACTIONS_PER_USER, MAX_REACTIONS_PER_COMMENT = 50, 20, 1000


def _room_for_reaction(held: dict[str, Any]) -> None:
    """INVALID_ARGUMENT when a new reaction would pass a comment's caps (one made already changes nothing)."""
    if held["made"]:
        return
    for over, message in ((not held["known_kind"] and held["kinds"] >= MAX_REACTION_KINDS,
                           f"A comment holds at most {MAX_REACTION_KINDS} kinds of reaction."),
                          (held["mine"] >= MAX_REACTIONS_PER_USER,
                           f"A user makes at most {MAX_REACTIONS_PER_USER} reactions on a comment."),
                          (held["total"] >= MAX_REACTIONS_PER_COMMENT,
                           f"A comment holds at most {MAX_REACTIONS_PER_COMMENT} reactions.")):
        if over:
            raise invalid(message, [issue(["reaction"], message, "too_big")])


@access.asks_provider
async def react(svc: Services, *, tenant: Tenant, data: Reaction, add: bool) -> dict[str, Any]:
    """Add or take back a user's reaction on a comment (viewers may react)."""
    now = svc.now_ms()
    key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    async with transaction(svc.pool, svc.redis) as tx:
        await access.writable(tx.conn, tenant=tenant, organization_id=data.organizationId)
        thread = await _thread(tx.conn, tenant, data, lock=True)
        if data.verifyUserPermissions:
            access.require_visible(thread, {data.userId})
            await access.verify(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                document_id=data.documentId, user_ids={data.userId}, role="viewer", svc=svc)
        brief = (await _briefs(tx.conn, thread, [data.commentId])).get(data.commentId)
        if brief is None:
            raise not_found("comment")
        where: dict[str, Any] = dict(annotation_id=thread["id"], comment_id=data.commentId, reaction=data.reaction,
                                     user_id=data.userId)
        if add:
            _room_for_reaction(await repo.reaction_counts(tx.conn, **key, **where))
            changed = await repo.add_reaction(tx.conn, **key, document_id=thread["document_id"], **where, now=now)
        else:
            changed = await repo.delete_reaction(tx.conn, **key, **where)
        if changed:
            await repo.take_comment_ids(tx.conn, **key, id=thread["id"], count=0, now=now)
            config = await events.config_of(tx.conn, tenant=tenant)
            kind = "comment.reaction_add" if add else "comment.reaction_delete"
            batch = [
                events.Event(
                    events.record(action_type=kind, actor={"userId": data.userId}, thread=thread,
                                  comment=CommentBrief.wire(brief), reaction=data.reaction, now=now))
            ]
            await events.send(tx, svc, tenant=tenant, config=config, thread=thread,
                              participants={thread["from_id"], brief["from_id"]}, events=batch)
    if add:
        message = "Reaction added." if changed else "Reaction already exists."
    else:
        message = "Reaction deleted." if changed else not_found_message("reaction")
    return {"success": changed, "id": str(data.commentId), "message": message}
