"""Who may write comments: the organization must exist and be enabled; with verifyUserPermissions, the user's
access to the document decides (editors write; viewers react and mark read), and a restricted thread exists only
for those who may see it."""

import functools
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar, cast

from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, not_found
from collab.kit.services import Services
from collab.organizations import repository as organizations_repo
from collab.permissions import provider
from collab.permissions import repository as permissions_repo
from collab.permissions.provider import Query
from collab.permissions.service import Pending, overlay, read_access

DISABLED = "Organization access is disabled."


def may_see(row: dict[str, Any], user_id: str) -> bool:
    """Whether a user may see a thread: public or organizationPrivate (every read is within the thread's own
    organization), or restricted to them (its creator always may)."""
    return (row["visibility"] != "restricted" or row["from_id"] == user_id
            or user_id in (row["visible_user_ids"] or []))


async def writable(conn: Conn, *, tenant: Tenant, organization_id: str, create: bool = False, now: int = 0) -> None:
    """Refuse a write to a missing (NOT_FOUND) or disabled (PERMISSION_DENIED) organization."""
    if create:
        await organizations_repo.insert(conn, api_key_id=tenant.api_key_id, id=organization_id, name=None, now=now)
    organization = await organizations_repo.get(conn, api_key_id=tenant.api_key_id, id=organization_id)
    if organization is None:
        raise not_found("organization")
    if organization["disabled"]:
        raise ApiError("PERMISSION_DENIED", DISABLED)


async def document_exists(conn: Conn, *, tenant: Tenant, organization_id: str, document_id: str) -> bool:
    found = await permissions_repo.document_folders(conn, api_key_id=tenant.api_key_id, organization_id=organization_id,
                                                    ids=[document_id])
    return document_id in found


class AskFirst(ApiError):
    """`verify`, inside a transaction, needs decisions of the API key's permission provider that this process does not
    hold: the transaction is dropped and the provider asked with nothing held (`asks_provider`). Reaching a client
    (a service not wrapped) it is a 503 to retry, never a wait on the customer's backend inside a transaction."""

    def __init__(self, pending: Pending):
        super().__init__("UNAVAILABLE", "The permission provider's answer was needed first; retry.")
        self.pending = pending


# The provider's answers for the run `asks_provider` repeats once it asked (None: the first run).
_answers: ContextVar[dict[Query, dict[str, Any]] | None] = ContextVar("comment_provider_answers", default=None)
Service = TypeVar("Service", bound=Callable[..., Awaitable[Any]])


def asks_provider(fn: Service) -> Service:
    """A comment service whose transaction verifies permissions: when the API key's provider must be asked, the
    transaction rolls back, the provider is asked (no connection held, one time budget) and the service runs once
    more with its answers (a decision still missing then denies)."""

    @functools.wraps(fn)
    async def run(svc: Services, **kwargs: Any) -> Any:
        try:
            return await fn(svc, **kwargs)
        except AskFirst as ask:
            pending = ask.pending
        assert pending.config is not None  # AskFirst is raised only for a provider that decides
        decided = await provider.decide(svc, tenant=pending.tenant, config=pending.config, queries=pending.queries,
                                        parents=pending.parents)
        token = _answers.set(decided)
        try:
            return await fn(svc, **kwargs)
        finally:
            _answers.reset(token)

    return cast(Service, run)


async def verify(conn: Conn, *, tenant: Tenant, organization_id: str, document_id: str, user_ids: set[str], role: str,
                 svc: Services) -> None:
    """PERMISSION_DENIED unless every user holds at least `role` (viewer or editor) on the document (the API key's
    permission provider decides when it has one: from the decisions at hand, else AskFirst, never a request from
    inside the caller's transaction)."""
    ranks = {"viewer": 1, "editor": 2}
    pending = await read_access(conn, svc, tenant=tenant, organization_id=organization_id, user_ids=sorted(user_ids),
                                folder_ids=[], document_ids=[document_id])
    decided: dict[Query, dict[str, Any]] = {}
    if pending.config is not None and pending.queries:
        decided = provider.cached(svc, api_key_id=tenant.api_key_id, queries=pending.queries)
        given = _answers.get()
        if given is not None:
            decided |= given
        elif any(q not in decided for q in pending.queries) and not provider.failing(svc, api_key_id=tenant.api_key_id):
            raise AskFirst(pending)
    access = overlay(pending, decided)
    for user_id in sorted(user_ids):
        entry = access[user_id]["documents"][document_id]
        if ranks.get(entry.get("accessRole"), 0) < ranks[role]:
            needed = "edit access" if role == "editor" else "access"
            raise ApiError("PERMISSION_DENIED", f"User {user_id} does not have {needed} to this document.")


def require_visible(thread: dict, user_ids: set[str]) -> None:
    """NOT_FOUND, as for a thread that never existed (reads hide it alike), unless every user may see the thread."""
    if not all(may_see(thread, user_id) for user_id in user_ids):
        raise not_found("annotation")
