"""Comment threads: add (idempotent by annotationId), get, update (incl. updateUsers), delete, count and read marks."""

from typing import Any

from collab.comments import access, events, pages
from collab.comments import repository as repo
from collab.comments.replies import insert_comments, limit_issue, not_future, room, thread_issue
from collab.comments.schemas import (
    AddAnnotations,
    AnnotationChange,
    AnnotationIn,
    CountAnnotations,
    DeleteAnnotations,
    GetAnnotations,
    ReadUpdate,
    Status,
    UpdateAnnotations,
    Visibility,
)
from collab.documents import repository as documents_repo
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError, invalid, issue, not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services

SYSTEM_USER = {"userId": "system"}  # the actor of a change made without actionUser
# A thread's changes that may grow it by more than a few bytes (checked against its byte cap; a status is not).
GROWS = frozenset({"location", "context", "assigned_to", "visible_user_ids"})


def _outcome(id: str, success: bool, message: str) -> dict[str, Any]:
    return {"success": success, "id": id, "message": message}


def _added(id: str, success: bool, message: str, comment_ids: list[int], item: AnnotationIn) -> dict[str, Any]:
    """An add's entry: collab's outcome, with Velt's annotationId, commentIds and (agent threads) findingId."""
    out = _outcome(id, success, message) | {"annotationId": id, "commentIds": comment_ids}
    reason = (item.commentData[0].agent or {}).get("reason")
    if isinstance(reason, dict) and isinstance(reason.get("findingId"), str):
        out["findingId"] = reason["findingId"]
    return out


def _visibility_issues(visibility: Visibility | None, organization_id: str, path: list[Any]) -> list[dict[str, Any]]:
    """organizationPrivate names the call's organization (a thread is only ever read within its own)."""
    if visibility is None or visibility.type != "organizationPrivate" or visibility.organizationId == organization_id:
        return []
    message = "organizationPrivate visibility names the thread's own organization (the call's organizationId)."
    return [issue([*path, "visibility", "organizationId"], message, "invalid")]


def _classified(item: AnnotationIn) -> dict[str, Any]:
    """A new thread's kind, source, agent block and suggestion payload (Velt: a first comment with an agent block
    makes an agent thread, which carries that block; a suggestion's status is stamped pending)."""
    agent = item.commentData[0].agent
    suggestion = None
    if item.type == "suggestion":
        suggestion = {**{k: v for k, v in (item.suggestion or {}).items() if k != "status"}, "status": "pending"}
    return {
        "kind": item.type, "source_type": "agent" if agent is not None else "rest-api", "agent": agent,
        "suggestion": suggestion
    }


def _times(item: AnnotationIn, now: int) -> tuple[int, int]:
    """A new thread's createdAt and lastUpdated: an import's own, else its comments', else now."""
    comments = item.commentData
    created = item.createdAt if item.createdAt is not None else min(
        (c.createdAt for c in comments if c.createdAt is not None), default=now)
    updated = item.lastUpdated if item.lastUpdated is not None else max(
        [created, *(c.lastUpdated or c.createdAt or created for c in comments)])
    return created, updated


@access.asks_provider
async def add(svc: Services, *, tenant: Tenant, data: AddAnnotations) -> dict[str, Any]:
    """Create threads with their first comments; a supplied annotationId that exists answers as done, unchanged."""
    now = svc.now_ms()
    cap, cap_bytes = svc.settings.comments_max_per_thread, svc.settings.comments_max_thread_bytes
    over = [
        limit_issue(["commentAnnotations", i, "commentData"], cap) for i, a in enumerate(data.commentAnnotations)
        if len(a.commentData) > cap
    ]
    over += [
        thread_issue(["commentAnnotations", i], cap_bytes) for i, a in enumerate(data.commentAnnotations)
        if a.size() > cap_bytes
    ]
    for i, a in enumerate(data.commentAnnotations):
        over += _visibility_issues(a.visibility, data.organizationId, ["commentAnnotations", i])
    if over:
        raise invalid(over[0]["message"], over)
    for i, a in enumerate(data.commentAnnotations):
        not_future([a.createdAt, a.lastUpdated, *(t for c in a.commentData for t in (c.createdAt, c.lastUpdated))], now,
                   ["commentAnnotations", i])
    key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        await access.writable(tx.conn, tenant=tenant, organization_id=data.organizationId,
                              create=data.createOrganization, now=now)
        if data.createDocument:
            await documents_repo.insert(tx.conn, **key, id=data.documentId, name=None, folder_id=None, now=now)
        elif not await access.document_exists(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                              document_id=data.documentId):
            raise not_found("document")
        if data.verifyUserPermissions:
            writers = {c.from_.userId for a in data.commentAnnotations for c in a.commentData}
            await access.verify(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                document_id=data.documentId, user_ids=writers, role="editor", svc=svc)
        config = await events.config_of(tx.conn, tenant=tenant)
        for item in data.commentAnnotations:
            annotation_id = item.annotationId or new_id("ann_")
            creator = item.commentData[0].from_.model_dump(exclude_none=True)
            visibility = item.visibility
            status = item.status or Status(id="open")
            created, updated = _times(item, now)
            thread = await repo.insert_annotation(
                tx.conn, **key, document_id=data.documentId, id=annotation_id, location=item.location,
                target_element=item.targetElement.model_dump(exclude_none=True) if item.targetElement else None,
                status=status.id, status_type=status.kind(), status_meta=status.meta(),
                priority=item.priority.id if item.priority else None,
                priority_meta=item.priority.meta() if item.priority else None,
                assigned_to=item.assignedTo.model_dump(exclude_none=True) if item.assignedTo else None,
                from_user=creator, context=item.context, visibility=visibility.type if visibility else "public",
                visible_user_ids=(visibility.userIds or []) if visibility and visibility.type == "restricted" else None,
                created_at=created, updated_at=updated, **_classified(item))
            if thread is None:
                where = await repo.annotation_document(tx.conn, **key, id=annotation_id)
                same = where == data.documentId
                results[annotation_id] = _added(
                    annotation_id, same, "Annotation already exists."
                    if same else "Annotation id is taken by another document of the organization.", [], item)
                continue
            sent = await insert_comments(tx.conn, tenant=tenant, thread=thread, comments=item.commentData, now=now,
                                         touched=updated)
            participants = {thread["from_id"], *([thread["assigned_id"]] if thread["assigned_id"] else [])}
            batch = []
            for n, (comment, source, mentioned) in enumerate(sent):
                participants |= {comment["from"]["userId"], *mentioned}
                batch.append(
                    events.Event(
                        events.record(action_type="comment_annotation.add" if n == 0 else "comment.add",
                                      actor=comment["from"], thread=thread, comment=comment, now=now,
                                      new_thread=n == 0), log=source.triggerActivities,
                        notify=source.triggerNotification, mentioned=mentioned))
            await events.send(tx, svc, tenant=tenant, config=config, thread=thread, participants=participants,
                              events=batch)
            results[annotation_id] = _added(annotation_id, True, "Annotation added.",
                                            [comment["commentId"] for comment, _, _ in sent], item)
    return results


def _filters(data: GetAnnotations) -> dict[str, Any]:
    # One document is an equality (its index gives the page in order); several are a list.
    return dict(document_id=data.documentId, document_ids=data.documentIds, folder_id=data.folderId,
                annotation_ids=data.annotationIds, location_ids=data.locationIds, user_ids=data.userIds,
                assigned_ids=data.assignedToUserIds, status_ids=data.status_ids(), resolved_by=data.resolvedBy,
                mentioned_ids=data.mentionedUserIds, created_after=data.createdAfter, created_before=data.createdBefore,
                updated_after=data.updatedAfter, updated_before=data.updatedBefore, viewer=data.userId,
                agent_id=data.agentId, execution_id=data.executionId, agent_type=data.agentType,
                agent_source=data.agentSource, agent_suggestions=bool(data.agentSuggestions),
                agent_comments=bool(data.agentComments))


async def get(svc: Services, *, tenant: Tenant, data: GetAnnotations) -> tuple[Any, str | None]:
    """A page of threads with their comments, by last update, within the response budget (a thread too large for
    a page of its own comes with the comments that fit and a commentsPageToken); grouped by document when asked."""
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "commentannotations",
                                   data.model_dump(exclude={"pageSize", "pageToken", "groupByDocumentId"}))
    after = pager.after(data.pageToken, 2)
    async with svc.pool.connection() as conn:
        records, rows, token = await pages.threads(conn, svc, tenant=tenant, organization_id=data.organizationId,
                                                   filters=_filters(data), pager=pager, after=after,
                                                   desc=data.order == "desc", size=data.pageSize)
    if not data.groupByDocumentId:
        return records, token
    grouped: dict[str, list[Any]] = {}
    for row, record in zip(rows, records):
        grouped.setdefault(row["document_id"], []).append(record)
    return grouped, token


def _change(change: AnnotationChange, actor: dict[str, Any]) -> dict[str, Any]:
    sent = change.model_dump(exclude_unset=True, exclude_none=True)
    out: dict[str, Any] = {}
    if change.status is not None:
        out |= {
            "status": change.status.id, "status_type": change.status.kind(), "status_meta": change.status.meta(),
            "resolver": actor["userId"] if actor is not SYSTEM_USER else None
        }
    if "resolvedByUserId" in change.model_fields_set:  # null clears it; absent leaves it
        out["resolved_by"] = change.resolvedByUserId
    if change.priority is not None:
        out |= {"priority": change.priority.id, "priority_meta": change.priority.meta()}
    if change.targetElement is not None:
        out["target_element"] = change.targetElement.model_dump(exclude_none=True)
    if change.assignedTo is not None:
        out["assigned_to"] = change.assignedTo.model_dump(exclude_none=True)
    for name in ("location", "context"):
        if name in sent:
            out[name] = sent[name]
    if change.type is not None:
        out["kind"] = change.type
    if change.suggestion is not None:
        out["suggestion"] = change.suggestion
    if change.visibility is not None:
        restricted = change.visibility.type == "restricted"
        out |= {
            "visibility": change.visibility.type,
            "visible_user_ids": (change.visibility.userIds or []) if restricted else None
        }
    return out


def _change_events(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(action type, changes) of each tracked field a change moved."""
    moved = []
    if before["status"] != after["status"]:
        moved.append(("comment_annotation.status_change", {"status": {"from": before["status"],
                                                                      "to": after["status"]}}))
    if before["assigned_id"] != after["assigned_id"]:
        moved.append(("comment_annotation.assign", {
            "assignedTo": {
                "from": events.brief_user(before["assigned_to"]), "to": events.brief_user(after["assigned_to"])
            }
        }))
    if before["priority"] != after["priority"]:  # an id's new display fields alone are no event
        moved.append(
            ("comment_annotation.priority_change", {"priority": {"from": before["priority"], "to": after["priority"]}}))
    return moved


def _is_agent_suggestion(thread: dict[str, Any]) -> bool:
    return thread["kind"] == "suggestion" and thread["source_type"] == "agent"


def _suggestion_status(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """A suggestion's payload with the status its thread's move gives it (a terminal status accepts it, or rejects
    it when its id is `rejected`; leaving a terminal status makes it pending again); None when it stays."""
    if after["kind"] != "suggestion" or before["status"] == after["status"]:
        return None
    if after["status_type"] == "terminal":
        status = "rejected" if after["status"].lower() == "rejected" else "accepted"
    elif before["status_type"] == "terminal":
        status = "pending"
    else:
        return None
    current = after["suggestion"] or {}
    return None if current.get("status") == status else {**current, "status": status}


async def _suggestion_decision(conn, *, key: dict[str, Any], before: dict[str, Any], after: dict[str, Any],
                               actor: dict[str, Any], now: int) -> events.Event | None:
    """The reviewer's decision on an agent's suggestion (ADR 0055): a thread written by an agent execution that moves
    to a terminal status is accepted (`comment_annotation.suggestion_accept`), or rejected when that status's id is
    `rejected` (`comment_annotation.suggestion_reject`). The record quotes the agent's finding as its reasoning and
    its targetText as the reviewed content, so the judgment it becomes is found by memory search."""
    if (not _is_agent_suggestion(before) or before["status"] == after["status"] or after["status_type"] != "terminal"
            or before["status_type"] == "terminal"):
        return None
    rejected = after["status"].lower() == "rejected"
    first = await repo.comments_page(conn, api_key_id=key["api_key_id"], organization_id=key["organization_id"],
                                     annotation_id=after["id"], comment_ids=None, user_ids=None, after_id=None, limit=1,
                                     budget=1 << 62)
    comment: dict[str, Any] = first[0] if first else {}
    block = comment.get("agent")
    agent: dict[str, Any] = block if isinstance(block, dict) else {}
    kind = "comment_annotation.suggestion_reject" if rejected else "comment_annotation.suggestion_accept"
    record = events.record(action_type=kind, actor=actor, thread=after,
                           changes={"status": {"from": before["status"], "to": after["status"]}}, now=now)
    context: dict[str, Any] = before["agent"] or before["context"] or {}
    # The decision is the reviewer's (a human judgment): the agent's block goes under `suggestion`, not `agent`.
    suggestion: dict[str, Any] = {
        "status": "rejected" if rejected else "accepted", "resolvedBy": actor.get("userId"), "resolvedAt": now,
        "agentId": context.get("agentId"), "executionId": context.get("executionId")
    }
    suggestion |= {k: agent[k] for k in ("findingId", "severity", "targetText", "suggestion", "url") if k in agent}
    reasoning = (comment.get("comment_text") or "")[:events.PREVIEW * 10] or None
    record["entity_data"] |= {"reasoning": reasoning, "suggestion": suggestion}
    if record["entity_target_data"] is None and isinstance(agent.get("targetText"), str) and agent["targetText"]:
        record["entity_target_data"] = {"text": agent["targetText"][:events.PREVIEW]}
    return events.Event(record)


@access.asks_provider
async def update(svc: Services, *, tenant: Tenant, data: UpdateAnnotations) -> dict[str, Any]:
    """Change threads' status, priority, assignee, location, context or visibility; rewrite users' identities."""
    now = svc.now_ms()
    key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    actor = data.actionUser.model_dump(exclude_none=True) if data.actionUser else SYSTEM_USER
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        await access.writable(tx.conn, tenant=tenant, organization_id=data.organizationId)
        if data.verifyUserPermissions:
            await access.verify(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                document_id=data.documentId, user_ids={actor["userId"]}, role="editor", svc=svc)
        config = await events.config_of(tx.conn, tenant=tenant)
        change = _change(data.updatedData, actor) if data.updatedData else {}
        found: dict[str, dict[str, Any]] = {}
        if data.updatedData:
            mismatch = _visibility_issues(data.updatedData.visibility, data.organizationId, ["updatedData"])
            if mismatch:
                raise invalid(mismatch[0]["message"], mismatch)
        if data.updatedData:  # the threads named, narrowed by the filters; without ids, all the filters match
            threads = await repo.lock_annotations(tx.conn, **key, document_id=data.documentId, ids=data.annotationIds,
                                                  location_ids=data.locationIds, user_ids=data.userIds)
            found = {t["id"]: t for t in threads}
        chosen = (sorted(found) if data.annotationIds is None else data.annotationIds) if data.updatedData else []
        for annotation_id in chosen:
            before = found.get(annotation_id)  # a thread named but absent or outside the filters is not found
            # With verifyUserPermissions a restricted thread exists only for who may see it (visibility included).
            if before is None or (data.verifyUserPermissions and not access.may_see(before, actor["userId"])):
                results[annotation_id] = _outcome(annotation_id, False, not_found_message("annotation"))
                continue
            after = await repo.update_annotation(tx.conn, **key, id=annotation_id, change=change, now=now)
            assert after is not None  # locked above: it is still there
            moved = None if "suggestion" in change else _suggestion_status(before, after)
            if moved is not None:
                after = await repo.update_annotation(tx.conn, **key, id=annotation_id, change={"suggestion": moved},
                                                     now=now)
                assert after is not None
            if GROWS.intersection(change) and after["bytes"] > before["bytes"]:
                await room(tx.conn, svc, after, path="updatedData")  # refusing rolls the whole call back
            batch = [
                events.Event(events.record(action_type=kind, actor=actor, thread=after, changes=changes, now=now))
                for kind, changes in _change_events(before, after)
            ]
            decided = await _suggestion_decision(tx.conn, key=key, before=before, after=after, actor=actor, now=now)
            if decided is not None:
                batch.append(decided)
            if batch:
                participants = {after["from_id"], *([after["assigned_id"]] if after["assigned_id"] else [])}
                await events.send(tx, svc, tenant=tenant, config=config, thread=after, participants=participants,
                                  events=batch)
            results[annotation_id] = _outcome(annotation_id, True, "Annotation updated.")
        for pair in data.updateUsers or []:
            old = pair.old().userId
            # The request names a document (and maybe threads): the rewrite stays inside them (docs/reference.md).
            renamed = await repo.rename_user(tx.conn, **key, document_id=data.documentId, ids=data.annotationIds,
                                             old_id=old, new_user=pair.new().model_dump(exclude_none=True), now=now)
            results.setdefault(old, _outcome(old, True, f"User identity rewritten on {len(renamed)} threads."))
    return results


async def _organization_of(conn, *, tenant: Tenant, data: DeleteAnnotations) -> str:
    """The call's organization: the one named, else the only one holding the document."""
    if data.organizationId is not None:
        return data.organizationId
    found = await repo.document_organizations(conn, api_key_id=tenant.api_key_id, document_id=data.documentId)
    if not found:
        raise not_found("document")
    if len(found) > 1:
        message = "Documents with this id are in several organizations: name its organizationId."
        raise invalid(message, [issue(["organizationId"], message, "missing")])
    return found[0]


@access.asks_provider
async def delete(svc: Services, *, tenant: Tenant, data: DeleteAnnotations) -> dict[str, Any]:
    """Delete threads of a document (all of them when no ids are given), narrowed by locations, creators and agents,
    with everything in them."""
    async with transaction(svc.pool, svc.redis) as tx:
        organization_id = await _organization_of(tx.conn, tenant=tenant, data=data)
        key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": organization_id}
        await access.writable(tx.conn, tenant=tenant, organization_id=organization_id)
        if data.verifyUserPermissions:
            await access.verify(tx.conn, tenant=tenant, organization_id=organization_id, document_id=data.documentId,
                                user_ids={data.actionUser.userId}, role="editor", svc=svc)
        threads = await repo.lock_annotations(tx.conn, **key, document_id=data.documentId, ids=data.annotationIds,
                                              location_ids=data.locationIds, user_ids=data.userIds,
                                              agent_id=data.agentId, agent_urls=data.agentUrls,
                                              agent_suggestions=data.agentSuggestions)
        if data.verifyUserPermissions:  # delete-all included: never a thread the actor cannot see
            threads = [t for t in threads if access.may_see(t, data.actionUser.userId)]
        deleted = await repo.delete_annotations(tx.conn, **key, document_id=data.documentId,
                                                ids=[t["id"] for t in threads])
    wanted = data.annotationIds if data.annotationIds is not None else sorted(deleted)
    return {
        i: _outcome(i, i in deleted, "Annotation deleted." if i in deleted else not_found_message("annotation"))
        for i in wanted
    }


async def count(svc: Services, *, tenant: Tenant, data: CountAnnotations) -> dict[str, Any]:
    """Per document, the threads a user may see and how many of them hold comments unread by that user; at most
    COLLAB_COMMENTS_COUNT_MAX_THREADS threads are counted in one call."""
    most = svc.settings.comments_count_max_threads
    key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    async with svc.pool.connection() as conn:
        scope: dict[str, Any] = {"document_ids": data.documentIds, "status_ids": data.statusIds}
        if await repo.count_scope(conn, **key, **scope, most=most) > most:
            raise _too_many(data, most)
        rows = await repo.count_threads(conn, **key, **scope, user_id=data.userId)
    counts = {d: {"total": 0, "unread": 0, "unreadComments": 0} for d in data.documentIds or []}
    for row in rows:
        counts[row["document_id"]] = {
            "total": row["total"], "unread": row["unread"], "unreadComments": int(row["unread_comments"])
        }
    return counts


def _too_many(data: CountAnnotations, most: int) -> ApiError:
    # An error, not a partial count: a badge that silently leaves threads out would be wrong without saying so.
    where = "These documents hold" if data.documentIds else "The organization holds"
    message = (f"{where} more than {most} comment threads; count/get counts at most {most} in one call: "
               f"{'name fewer documents' if data.documentIds else 'name its documents'} in documentIds.")
    return invalid(message, [issue(["documentIds"], message, "too_big")])


async def read(svc: Services, *, tenant: Tenant, data: ReadUpdate) -> dict[str, Any]:
    """Mark threads of a document (all when no ids are given) read by a user, now."""
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        await access.writable(tx.conn, tenant=tenant, organization_id=data.organizationId)
        marked = await repo.mark_read(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                      document_id=data.documentId, user_id=data.userId, ids=data.annotationIds, now=now)
    wanted = data.annotationIds if data.annotationIds is not None else sorted(marked)
    return {
        i: _outcome(i, i in marked, "Marked read." if i in marked else not_found_message("annotation"))
        for i in wanted
    }


async def forget_users(conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> None:
    """User-data deletion's comments task: the users' threads (whole), comments, reactions, read marks and the
    mentions of them; threads others started stay, minus those parts."""
    await repo.forget_user(conn, api_key_id=api_key_id, user_ids=user_ids, organization_ids=organization_ids)
