"""Reads of threads and comments in pages that stay within COLLAB_MAX_RESPONSE_BYTES in memory as well as on the
wire: the sizes Postgres keeps per thread and per comment (migration 0018) decide what is fetched before anything
is read whole or rendered, and a thread too large for a page of its own is paged inside (comments/get)."""

from itertools import groupby
from typing import Any

import orjson

from collab.comments import repository as repo
from collab.comments.schemas import Annotation, Comment
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.services import Services

MIN_ROW_BYTES = 200  # no stored size is smaller (a comment's starts at 200 bytes, a thread's at 400)
TOKEN_BYTES = 300  # room for a cut thread's commentsPageToken


def comments_pager(svc: Services, tenant: Tenant, thread: dict[str, Any], ids: list[int] | None,
                   user_ids: list[str] | None = None) -> paging.Pager:
    """Page tokens of one thread's comments (comments/get), for these ids (and authors) or all."""
    scope = {
        "organizationId": thread["organization_id"], "documentId": thread["document_id"], "annotationId": thread["id"],
        "commentIds": ids
    }
    if user_ids is not None:
        scope["userIds"] = user_ids
    return paging.Pager.for_query(svc.keyring, tenant.api_key_id, "comments", scope)


def _take(rows: list[dict[str, Any]], size: int, budget: int, truncated: bool) -> list[tuple[dict, int | None]]:
    """The threads a page takes, in order, each with the last comment id to read (None: all of them). A thread
    comes whole while it fits; the first one, when it alone does not, comes with the comments that fit."""
    taken: list[tuple[dict, int | None]] = []
    used = 1  # the array's opening bracket
    groups = [list(g) for _, g in groupby(rows, key=lambda r: r["n"])]
    for index, group in enumerate(groups[:size]):
        head = group[0]
        need = head["bytes"] + sum(r["comment_bytes"] or 0 for r in group) + len(group) + 1
        known = index < len(groups) - 1 or not truncated  # all of its comments were planned
        if known and used + need <= budget:
            taken.append((head, None))
            used += need
            continue
        if not taken:
            taken.append((head, _fitting(group, budget - used - head["bytes"] - TOKEN_BYTES)))
        break
    return taken


def _fitting(group: list[dict[str, Any]], room: int) -> int:
    """The last comment id of a thread's leading comments that fit in `room` bytes (0: none)."""
    upto = 0
    for row in group:
        if row["comment_id"] is None or row["comment_bytes"] + 1 > room:
            break
        room -= row["comment_bytes"] + 1
        upto = row["comment_id"]
    return upto


async def threads(conn: Conn, svc: Services, *, tenant: Tenant, organization_id: str, filters: dict[str, Any],
                  pager: paging.Pager, after: list[Any], desc: bool,
                  size: int) -> tuple[list[Any], list[dict], str | None]:
    """A page of threads with their comments: (records as rendered, their rows, the next page's token)."""
    budget = svc.settings.max_response_bytes
    key: dict[str, Any] = {"api_key_id": tenant.api_key_id, "organization_id": organization_id}
    rows_cap = budget // MIN_ROW_BYTES + 2  # more rows than this cannot fit the budget
    plan = await repo.plan_page(conn, **key, **filters, after_ts=after[0], after_id=after[1], desc=desc, limit=size + 1,
                                rows=rows_cap)
    taken = _take(plan, size, budget, truncated=len(plan) >= rows_cap)
    if not taken:
        return [], [], None
    ids = [head["id"] for head, _ in taken]
    found = {r["id"]: r for r in await repo.annotations_by_id(conn, **key, ids=ids)}
    comments: dict[str, list[dict[str, Any]]] = {}
    for row in await repo.thread_comments(conn, **key, annotation_ids=ids, upto=[upto for _, upto in taken]):
        comments.setdefault(row["annotation_id"], []).append(Comment.wire(row))
    # A thread deleted between the plan and the read is left out, as if the page had been read a moment later.
    served = [(found[i], upto) for i, (_, upto) in zip(ids, taken) if i in found]
    records = [_record(svc, tenant, row, comments.get(row["id"], []), upto) for row, upto in served]
    blobs = paging.fit(records, budget)
    rows = [row for row, _ in served[:len(blobs)]]
    more = len(blobs) < len(served) or len(taken) < plan[0]["fetched"]
    token = (paging.encode(rows[-1]["updated_at"], rows[-1]["id"], keyring=pager.keyring, scope=pager.scope)
             if more and rows else None)
    return [orjson.Fragment(b) for b in blobs], rows, token


def _record(svc: Services, tenant: Tenant, row: dict[str, Any], comments: list[dict[str, Any]],
            upto: int | None) -> dict[str, Any]:
    """A thread as get shows it; one cut inside says where its comments go on."""
    record = Annotation.wire(row, comments)
    if upto is not None:
        record["commentsPageToken"] = paging.encode(upto, keyring=svc.keyring,
                                                    scope=comments_pager(svc, tenant, row, None).scope)
    return record


async def comments(conn: Conn, svc: Services, *, tenant: Tenant, thread: dict[str, Any], ids: list[int] | None,
                   user_ids: list[str] | None = None, size: int, token: str | None) -> tuple[list[Any], str | None]:
    """A page of one thread's comments in id order (some ids', some authors' when named): at most `size` and the
    response budget (at least one)."""
    budget = svc.settings.max_response_bytes
    pager = comments_pager(svc, tenant, thread, ids, user_ids)
    (after, ) = pager.after(token, 1)
    rows = await repo.comments_page(conn, api_key_id=tenant.api_key_id, organization_id=thread["organization_id"],
                                    annotation_id=thread["id"], comment_ids=ids, user_ids=user_ids, after_id=after,
                                    limit=size + 1, budget=budget)
    return pager.cut(rows, size, "id", render=Comment.wire, budget=budget)
