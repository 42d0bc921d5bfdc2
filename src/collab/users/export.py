"""Get User Data (GDPR export): users' comments, reactions, notifications, activities and recordings, paged.

collab's form (`userIds`) answers one list of typed records, paged across the features: a page walks the kinds in
a fixed order and each kind in its own key order; the page token holds the kind and the key of the last record
served, so a page may end inside one kind and the next starts right after it.

Velt's form (`userId` or `veltUserIds`) answers the records by feature, `{comments, reactions, recordings,
notifications}` (and collab's `activities`), up to 100 of each a page: each feature is paged on its own, and the
token holds every feature's place (where it stopped, or that it is done).
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


async def get(svc: Services, *, tenant: Tenant, data: UserDataGet) -> tuple[Any, str | None]:
    """A page of everything stored about the users: typed records (collab's form) or records by feature (Velt's)."""
    if data.by_feature():
        return await _by_feature(svc, tenant=tenant, data=data)
    return await _typed(svc, tenant=tenant, data=data)


# Velt's names of the features in its answer; activities are collab's addition (Velt keeps none).
FEATURE_KEYS = {
    "comment": "comments", "reaction": "reactions", "recording": "recordings", "notification": "notifications",
    "activity": "activities"
}
FEATURE_PAGE = 100  # Velt's page: up to 100 records of each feature
_DONE = "done"  # a feature's place in a token once every record of it was served


async def _by_feature(svc: Services, *, tenant: Tenant, data: UserDataGet) -> tuple[dict[str, list[Any]], str | None]:
    user_ids, organization_ids = data.users(), data.organizations()
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "users/data/by-feature",
                                   {"userIds": user_ids, "organizationIds": organization_ids})
    places = pager.after(data.pageToken, len(KINDS))  # None: from the first; _DONE; else the last key served
    size = min(FEATURE_PAGE, data.pageSize)
    budget = svc.settings.max_response_bytes
    out: dict[str, list[Any]] = {FEATURE_KEYS[kind.type]: [] for kind in KINDS}
    used = len(dumps(out))
    served = 0
    scope = {"api_key_id": tenant.api_key_id, "user_ids": user_ids, "organization_ids": organization_ids}
    async with svc.pool.connection() as conn:
        for index, kind in enumerate(KINDS):
            if places[index] == _DONE or (served and used >= budget):
                continue  # a full page leaves a feature where it was, for the next page
            rows = await kind.fetch(conn, **scope, after=places[index], limit=size + 1, budget=budget - used)
            records = out[FEATURE_KEYS[kind.type]]
            for row in rows[:size]:
                blob = dumps(kind.render(row, tenant.api_key_id))
                if served and used + len(blob) + 1 > budget:
                    break
                records.append(orjson.Fragment(blob))
                used, served = used + len(blob) + 1, served + 1
                places[index] = kind.key(row)
            # Done when every row found by key was served (a fetch of size + 1 finds one more while any is left).
            if len(records) >= (rows[0].get("fetched", len(rows)) if rows else 0):
                places[index] = _DONE
    if all(place == _DONE for place in places):
        return out, None
    return out, paging.encode(*places, keyring=pager.keyring, scope=pager.scope)


async def _typed(svc: Services, *, tenant: Tenant, data: UserDataGet) -> tuple[list[Any], str | None]:
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
