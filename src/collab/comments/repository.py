"""SQL of comment threads, comments, reactions, mentions and read marks; executes, never commits."""

from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


async def insert_annotation(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, id: str,
                            location: Any, target_element: Any, status: str, status_type: str,
                            status_meta: dict[str, Any] | None, priority: str | None,
                            priority_meta: dict[str, Any] | None, assigned_to: dict[str, Any] | None,
                            from_user: dict[str, Any], context: Any, visibility: str,
                            visible_user_ids: list[str] | None, created_at: int, updated_at: int, kind: str = "comment",
                            source_type: str = "rest-api", agent: dict[str, Any] | None = None,
                            suggestion: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Create a thread; None when the id is taken in the organization."""
    location_id = location.get("id") if isinstance(location, dict) and isinstance(location.get("id"), str) else None
    params = dict(api_key_id=api_key_id, organization_id=organization_id, document_id=document_id, id=id,
                  location=_json(location), location_id=location_id, target_element=_json(target_element),
                  status=status, status_type=status_type, status_meta=_json(status_meta), priority=priority,
                  priority_meta=_json(priority_meta), assigned_to=_json(assigned_to), assigned_id=(assigned_to
                                                                                                   or {}).get("userId"),
                  from_user=Jsonb(from_user), from_id=from_user["userId"], context=_json(context),
                  visibility=visibility, visible_user_ids=visible_user_ids, kind=kind, source_type=source_type,
                  agent=_json(agent), suggestion=_json(suggestion), created_at=created_at, updated_at=updated_at)
    return await fetch_one(conn, q.insert_annotation, params)


async def get_annotation(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, id: str,
                         lock: bool = False) -> dict[str, Any] | None:
    """One thread of a document (locked for a change when asked)."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "id": id}
    return await fetch_one(conn, q.lock_annotation if lock else q.get_annotation, params)


async def annotation_document(conn: Conn, *, api_key_id: str, organization_id: str, id: str) -> str | None:
    row = await fetch_one(conn, q.annotation_document,
                          {"api_key_id": api_key_id, "organization_id": organization_id, "id": id})
    return row["document_id"] if row else None


async def lock_annotations(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                           ids: list[str] | None, location_ids: list[str] | None = None,
                           user_ids: list[str] | None = None, agent_id: str | None = None,
                           agent_urls: list[str] | None = None,
                           agent_suggestions: bool = False) -> list[dict[str, Any]]:
    """A document's threads, locked, narrowed by each filter given (all of them when none is)."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "ids": ids,
        "location_ids": location_ids, "user_ids": user_ids, "agent_id": agent_id, "agent_urls": agent_urls,
        "agent_suggestions": agent_suggestions
    }
    return await fetch_all(conn, q.lock_annotations, params)


async def document_organizations(conn: Conn, *, api_key_id: str, document_id: str) -> list[str]:
    """The organizations holding a document of this id (at most two: one is the answer, two are ambiguous)."""
    rows = await fetch_all(conn, q.document_organizations, {"api_key_id": api_key_id, "document_id": document_id})
    return [r["organization_id"] for r in rows]


async def update_annotation(conn: Conn, *, api_key_id: str, organization_id: str, id: str, change: dict[str, Any],
                            now: int) -> dict[str, Any] | None:
    """Apply a change (keys: status, status_type, status_meta, resolver, resolved_by, priority, priority_meta,
    assigned_to, location, context, target_element, visibility, visible_user_ids, kind, suggestion); keys absent stay
    as they are."""
    location = change.get("location")
    assigned = change.get("assigned_to")
    params = dict(
        api_key_id=api_key_id, organization_id=organization_id, id=id, now=now, status=change.get("status"),
        status_type=change.get("status_type"), status_meta=_json(change.get("status_meta")),
        resolver=change.get("resolver"), set_resolved_by="resolved_by" in change, resolved_by=change.get("resolved_by"),
        set_priority="priority" in change, priority=change.get("priority"),
        priority_meta=_json(change.get("priority_meta")), set_target="target_element" in change, target_element=_json(
            change.get("target_element")), set_assigned="assigned_to" in change, assigned_to=_json(assigned),
        assigned_id=(assigned or {}).get("userId"), set_location="location" in change, location=_json(location),
        location_id=location.get("id") if isinstance(location, dict) and isinstance(location.get("id"), str) else None,
        set_context="context" in change, context=_json(change.get("context")), visibility=change.get("visibility"),
        visible_user_ids=change.get("visible_user_ids"), kind=change.get("kind"), set_suggestion="suggestion" in change,
        suggestion=_json(change.get("suggestion")))
    return await fetch_one(conn, q.update_annotation, params)


async def take_comment_ids(conn: Conn, *, api_key_id: str, organization_id: str, id: str, count: int, now: int,
                           floor: int = 0) -> int:
    """Stamp a thread updated and reserve `count` comment ids above `floor` (an import's highest); the last id."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "id": id, "taken": count, "now": now,
        "floor": floor
    }
    return (await fetch_row(conn, q.touch_annotation, params))["last_comment_id"]


async def delete_annotations(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                             ids: list[str]) -> set[str]:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "ids": ids}
    return {r["id"] for r in await fetch_all(conn, q.delete_annotations, params)}


async def plan_page(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None,
                    document_ids: list[str] | None, folder_id: str | None, annotation_ids: list[str] | None,
                    location_ids: list[str] | None, user_ids: list[str] | None, assigned_ids: list[str] | None,
                    status_ids: list[str] | None, resolved_by: str | None, mentioned_ids: list[str] | None,
                    created_after: int | None, created_before: int | None, updated_after: int | None,
                    updated_before: int | None, viewer: str | None, after_ts: int | None, after_id: str | None,
                    desc: bool, limit: int, rows: int, agent_id: str | None = None, execution_id: str | None = None,
                    agent_type: str | None = None, agent_source: str | None = None, agent_suggestions: bool = False,
                    agent_comments: bool = False) -> list[dict[str, Any]]:
    """A page of threads by last update then id after a (lastUpdated, id) key, as sizes: a row per thread and
    comment (n, id, updated_at, bytes, fetched, comment_id, comment_bytes), at most `rows` rows."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                  document_ids=document_ids, folder_id=folder_id, annotation_ids=annotation_ids,
                  location_ids=location_ids, user_ids=user_ids, assigned_ids=assigned_ids, status_ids=status_ids,
                  resolved_by=resolved_by, mentioned_ids=mentioned_ids, created_after=created_after,
                  created_before=created_before, updated_after=updated_after, updated_before=updated_before,
                  viewer=viewer, after_ts=after_ts, after_id=after_id, limit=limit, rows=rows, agent_id=agent_id,
                  execution_id=execution_id, agent_type=agent_type, agent_source=agent_source,
                  agent_suggestions=agent_suggestions, agent_comments=agent_comments)
    return await fetch_all(conn, plan_query(desc), params)


def plan_query(desc: bool) -> sql.Composed:
    """plan_annotations in one direction: spelled out (not a CASE on a parameter), so that an index on
    (…, updated_at desc, id desc) gives the order either way, in generic plans too."""
    return sql.SQL(q.plan_annotations).format(order=sql.SQL("desc" if desc else "asc"),
                                              after=sql.SQL("<" if desc else ">"))


async def annotations_by_id(conn: Conn, *, api_key_id: str, organization_id: str,
                            ids: list[str]) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "ids": ids}
    return await fetch_all(conn, q.annotations_by_id, params)


async def thread_comments(conn: Conn, *, api_key_id: str, organization_id: str, annotation_ids: list[str],
                          upto: list[int | None]) -> list[dict[str, Any]]:
    """The comments of threads with their reactions: all of each, or up to its `upto` id when that is not None."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "annotation_ids": annotation_ids, "upto": upto
    }
    return await fetch_all(conn, q.thread_comments, params)


async def comments_page(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str,
                        comment_ids: list[int] | None, user_ids: list[str] | None, after_id: int | None, limit: int,
                        budget: int) -> list[dict[str, Any]]:
    """A page of a thread's comments after an id: at most `limit`, ending within `budget` bytes (at least one)."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, annotation_id=annotation_id,
                  comment_ids=comment_ids, user_ids=user_ids, after_id=after_id, limit=limit, budget=budget)
    return await fetch_all(conn, q.comments_page, params)


async def comment_briefs(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str,
                         ids: list[int] | None, preview: int) -> list[dict[str, Any]]:
    """Named comments (all the thread's when ids is None) without their blobs (id, from_id, from_brief, text_preview,
    times, is_edited, bytes, tagged_ids)."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, annotation_id=annotation_id, ids=ids,
                  preview=preview)
    return await fetch_all(conn, q.comment_briefs, params)


async def thread_load(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str) -> dict[str, int]:
    """{n, bytes}: a thread's comments and their stored bytes."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "annotation_id": annotation_id}
    return await fetch_row(conn, q.thread_load, params)


async def thread_participants(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str) -> set[str]:
    """The authors and tagged users of a thread's comments."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "annotation_id": annotation_id}
    return {r["user_id"] for r in await fetch_all(conn, q.thread_participants, params)}


async def insert_comments(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, annotation_id: str,
                          rows: list[dict[str, Any]]) -> set[int]:
    """Add comments to a thread in one round trip; each row: id, comment_text, comment_html, from_user, tagged,
    attachments, agent, context, created_at, updated_at. The ids added (an id the thread holds is skipped)."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                  annotation_id=annotation_id, rows=Jsonb(rows))
    return {r["id"] for r in await fetch_all(conn, q.insert_comments, params)}


async def insert_new_mentions(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                              annotation_id: str, pairs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Record who new comments tag, in one round trip; the (comment id, user id) pairs stored."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                  annotation_id=annotation_id, pairs=Jsonb([{"commentId": c, "userId": u} for c, u in pairs]))
    return [(r["comment_id"], r["user_id"]) for r in await fetch_all(conn, q.insert_new_mentions, params)]


async def update_comment(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str, id: int,
                         change: dict[str, Any], now: int) -> int | None:
    """Edit a comment (keys: comment_text, comment_html, tagged); its stored bytes after, None when it does not
    exist."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, annotation_id=annotation_id, id=id, now=now,
                  set_text="comment_text" in change, comment_text=change.get("comment_text"), set_html="comment_html"
                  in change, comment_html=change.get("comment_html"), set_tagged="tagged" in change,
                  tagged=_json(change.get("tagged")))
    row = await fetch_one(conn, q.update_comment, params)
    return row["bytes"] if row else None


async def delete_comments(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str,
                          ids: list[int]) -> set[int]:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "annotation_id": annotation_id, "ids": ids}
    return {r["id"] for r in await fetch_all(conn, q.delete_comments, params)}


async def set_mentions(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, annotation_id: str,
                       comment_id: int, user_ids: list[str]) -> list[str]:
    """Make a comment's mentions exactly `user_ids`; the users newly mentioned."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "annotation_id": annotation_id, "comment_id": comment_id, "user_ids": user_ids
    }
    await execute(conn, q.drop_mentions, params)
    return [r["user_id"] for r in await fetch_all(conn, q.insert_mentions, params)] if user_ids else []


async def reaction_counts(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str, comment_id: int,
                          reaction: str, user_id: str) -> dict[str, Any]:
    """{total, kinds, mine, known_kind, made} of a comment's reactions (see the query)."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, annotation_id=annotation_id,
                  comment_id=comment_id, reaction=reaction, user_id=user_id)
    return await fetch_row(conn, q.reaction_counts, params)


async def add_reaction(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, annotation_id: str,
                       comment_id: int, reaction: str, user_id: str, now: int) -> bool:
    """True when the reaction is new."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                  annotation_id=annotation_id, comment_id=comment_id, reaction=reaction, user_id=user_id, now=now)
    return await fetch_one(conn, q.insert_reaction, params) is not None


async def delete_reaction(conn: Conn, *, api_key_id: str, organization_id: str, annotation_id: str, comment_id: int,
                          reaction: str, user_id: str) -> bool:
    """True when there was such a reaction."""
    params = dict(api_key_id=api_key_id, organization_id=organization_id, annotation_id=annotation_id,
                  comment_id=comment_id, reaction=reaction, user_id=user_id)
    return await fetch_one(conn, q.delete_reaction, params) is not None


async def mark_read(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, user_id: str,
                    ids: list[str] | None, now: int) -> set[str]:
    """Move the user's read marks to now; the threads marked."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "user_id": user_id,
        "ids": ids, "now": now
    }
    return {r["annotation_id"] for r in await fetch_all(conn, q.mark_read, params)}


async def count_scope(conn: Conn, *, api_key_id: str, organization_id: str, document_ids: list[str] | None,
                      status_ids: list[str] | None, most: int) -> int:
    """How many threads a count would read, counted up to `most` + 1."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_ids": document_ids,
        "status_ids": status_ids, "most": most
    }
    return (await fetch_row(conn, q.count_scope, params))["n"]


async def count_threads(conn: Conn, *, api_key_id: str, organization_id: str, document_ids: list[str] | None,
                        status_ids: list[str] | None, user_id: str) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_ids": document_ids,
        "status_ids": status_ids, "user_id": user_id
    }
    return await fetch_all(conn, q.count_threads, params)


async def rename_user(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, ids: list[str] | None,
                      old_id: str, new_user: dict[str, Any], now: int) -> set[str]:
    """Rewrite one user's identity in a document's comment data (only some threads' when `ids` is set); the threads
    whose own fields changed."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "ids": ids,
        "old_id": old_id, "new_id": new_user["userId"], "new_user": Jsonb(new_user), "now": now
    }
    threads = {r["id"] for r in await fetch_all(conn, q.rename_annotation_users, params)}
    await execute(conn, q.rename_comment_users, params)
    await execute(conn, q.rename_other_users, params)
    return threads


async def forget_user(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None) -> None:
    """Remove users' threads, comments, reactions, mentions and read marks, and their name on others' threads."""
    params = {"api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    await execute(conn, q.forget_user_threads, params)
    await execute(conn, q.forget_user_parts, params)


async def user_comments(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None,
                        after: list[Any] | None, limit: int, budget: int) -> list[dict[str, Any]]:
    """Export: the users' comments with their reactions after `after` ([organization, annotation, comment]), at most
    `limit` and ending within `budget` bytes by their stored sizes (at least one); each row's `fetched` says how
    many there were by key."""
    org, annotation, id = after or (None, None, None)
    params = {
        "api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids, "after_org": org,
        "after_annotation": annotation, "after_id": id, "limit": limit, "budget": budget
    }
    return await fetch_all(conn, q.user_comments, params)


async def user_reactions(conn: Conn, *, api_key_id: str, user_ids: list[str], organization_ids: list[str] | None,
                         after: list[Any] | None, limit: int) -> list[dict[str, Any]]:
    """Export: the users' reactions after `after` ([organization, annotation, comment, reaction, user])."""
    org, annotation, comment, reaction, user = after or (None, ) * 5
    params = {
        "api_key_id": api_key_id, "user_ids": user_ids, "organization_ids": organization_ids, "after_org": org,
        "after_annotation": annotation, "after_comment": comment, "after_reaction": reaction, "after_user": user,
        "limit": limit
    }
    return await fetch_all(conn, q.user_reactions, params)
