"""Who may write comments: the organization must exist and be enabled; with verifyUserPermissions, the user's
access to the document decides (editors write; viewers react and mark read), and a restricted thread exists only
for those who may see it."""

from typing import Any

from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, not_found
from collab.kit.services import Services
from collab.organizations import repository as organizations_repo
from collab.permissions import repository as permissions_repo
from collab.permissions.service import effective

DISABLED = "Organization access is disabled."


def may_see(row: dict[str, Any], user_id: str) -> bool:
    """Whether a user may see a thread: public, or restricted to them (its creator always may)."""
    return row["visibility"] == "public" or row["from_id"] == user_id or user_id in (row["visible_user_ids"] or [])


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


async def verify(conn: Conn, *, tenant: Tenant, organization_id: str, document_id: str, user_ids: set[str], role: str,
                 svc: Services) -> None:
    """PERMISSION_DENIED unless every user holds at least `role` (viewer or editor) on the document (the API key's
    permission provider decides when it has one)."""
    ranks = {"viewer": 1, "editor": 2}
    access = await effective(conn, svc, tenant=tenant, organization_id=organization_id, user_ids=sorted(user_ids),
                             folder_ids=[], document_ids=[document_id])
    for user_id in sorted(user_ids):
        entry = access[user_id]["documents"][document_id]
        if ranks.get(entry.get("accessRole"), 0) < ranks[role]:
            needed = "edit access" if role == "editor" else "access"
            raise ApiError("PERMISSION_DENIED", f"User {user_id} does not have {needed} to this document.")


def require_visible(thread: dict, user_ids: set[str]) -> None:
    """NOT_FOUND, as for a thread that never existed (reads hide it alike), unless every user may see the thread."""
    if not all(may_see(thread, user_id) for user_id in user_ids):
        raise not_found("annotation")
