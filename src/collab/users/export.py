"""Get User Data (GDPR export): users' comments, reactions, notifications, activities and recordings as one list
of typed records, paged across the features.

A page walks the kinds in a fixed order and each kind in its own key order; the page token holds the kind and
the key of the last record served, so a page may end inside one kind and the next starts right after it.
"""

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import orjson

from collab.activities.schemas import Activity
from collab.comments import repository as comments_repo
from collab.comments.schemas import UserComment, UserReaction
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.envelope import dumps
from collab.kit.services import Services
from collab.notifications.schemas import Notification
from collab.users import repository as repo
from collab.users.schemas import UserDataGet, UserRecording


@dataclass(frozen=True)
class Kind:
    """One feature's records: how to fetch a page after a key, each row's key, owners and wire shape."""

    type: str
    fetch: Callable[..., Awaitable[list[dict[str, Any]]]]
    key: Callable[[dict[str, Any]], list[Any]]
    owners: Callable[[dict[str, Any]], set[str]]
    render: Callable[[dict[str, Any], str], dict[str, Any]]


def _notification_owners(row: dict[str, Any]) -> set[str]:
    actor = (row["action_user"] or {}).get("userId")
    return {*([actor] if actor else []), *row["notify_users_by_user_id"], *row["read_by"]}


def _recording_owners(row: dict[str, Any]) -> set[str]:
    author = (row["from_user"] or {}).get("userId")
    return {author} if author is not None else set()


def _unsized(fetch: Callable[..., Awaitable[list[dict[str, Any]]]]) -> Callable[..., Awaitable[list[dict[str, Any]]]]:
    """A kind's fetch that reads by count only (its records are small or bounded on their own)."""
    return lambda conn, *, budget, **scope: fetch(conn, **scope)


# The order pages walk; a token names a kind by its place here, so new kinds go at the end. Comments are read by
# their stored sizes as well (up to 64 KiB each, and their reactions), so a page never loads a thousand whole.
KINDS: tuple[Kind, ...] = (
    Kind("comment", comments_repo.user_comments, lambda r: [r["organization_id"], r["annotation_id"], r["id"]],
         lambda r: {r["from_id"]}, lambda r, api_key_id: UserComment.wire(r)),
    Kind("reaction", _unsized(comments_repo.user_reactions),
         lambda r: [r["organization_id"], r["annotation_id"], r["comment_id"], r["reaction"], r["user_id"]],
         lambda r: {r["user_id"]}, lambda r, api_key_id: UserReaction.wire(r)),
    Kind("notification", _unsized(repo.export_notifications), lambda r: [r["id"]], _notification_owners,
         lambda r, api_key_id: Notification.wire(r, api_key_id)),
    Kind("activity", _unsized(repo.export_activities), lambda r: [r["id"]], lambda r: {r["action_user"].get("userId")},
         lambda r, api_key_id: Activity.wire(r)),
    Kind("recording", _unsized(repo.export_recordings),
         lambda r: [r["organization_id"], r["annotation_id"], r["version"]], _recording_owners,
         lambda r, api_key_id: UserRecording.wire(r)))


async def get(svc: Services, *, tenant: Tenant, data: UserDataGet) -> tuple[list[Any], str | None]:
    """A page of everything stored about the users, as typed records, cut at pageSize records or the byte budget."""
    user_ids, organization_ids = data.users(), data.organizations()
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "users/data",
                                   {"userIds": user_ids, "organizationIds": organization_ids})
    start, after = pager.after(data.pageToken, 2)
    start = start or 0
    wanted = set(user_ids)
    budget = svc.settings.max_response_bytes
    records: list[Any] = []
    used, more = 1, False
    last: list[Any] | None = None
    scope = {"api_key_id": tenant.api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    async with svc.pool.connection() as conn:
        for index in range(start, len(KINDS)):
            kind = KINDS[index]
            # One row past what the page can take tells whether anything is left (here or in a later kind).
            rows = await kind.fetch(conn, **scope, after=after if index == start else None,
                                    limit=data.pageSize - len(records) + 1, budget=budget - used)
            for row in rows:
                blob = dumps({
                    "type": kind.type, "userIds": sorted(kind.owners(row) & wanted),
                    "record": kind.render(row, tenant.api_key_id)
                })
                if len(records) == data.pageSize or (records and used + len(blob) + 1 > budget):
                    more = True
                    break
                records.append(orjson.Fragment(blob))
                used += len(blob) + 1
                last = [index, kind.key(row)]
            # A sized fetch that left rows out for the budget: the page is full, the next one goes on from here.
            more = more or bool(rows and rows[0].get("fetched", len(rows)) > len(rows))
            if more:
                break
    token = None
    if more:
        assert last is not None  # a page that is full holds a record
        token = paging.encode(*last, keyring=pager.keyring, scope=pager.scope)
    return records, token
