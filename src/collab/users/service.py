"""Users of an organization, a folder or a document: add, update, list, remove."""

from typing import Any

from collab.documents import repository as documents_repo
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.db import constraints
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations import repository as organizations_repo
from collab.permissions import profiles
from collab.permissions import repository as permissions_repo
from collab.permissions.service import grant_row
from collab.users import repository as repo
from collab.users.schemas import (
    AddUsers,
    CountUsers,
    DeleteUsers,
    DocUser,
    DocUsers,
    GetUsers,
    UpdateUsers,
    UserWithAccess,
)
from collab.workspaces.config import require_advanced_queries

# An organization deleted between the check and the write (users/add) answers as one that was never there.
constraints.register_missing("grants_api_key_id_organization_id_fkey", "organization")


def scope_of(data: Any) -> dict[str, str]:
    """The resource a users call is about: the document, the folder, or the organization itself."""
    if data.documentId is not None:
        return {"resource_type": "document", "resource_id": data.documentId}
    if data.folderId is not None:
        return {"resource_type": "folder", "resource_id": data.folderId}
    return {"resource_type": "organization", "resource_id": data.organizationId}


async def _missing_scope(conn: Conn, *, tenant: Tenant, data: Any) -> str | None:
    """Why every item of the call fails (no such organization, document or folder), or None."""
    if await organizations_repo.get(conn, api_key_id=tenant.api_key_id, id=data.organizationId) is None:
        return not_found_message("organization")
    scope = scope_of(data)
    if scope["resource_type"] != "organization" and not await permissions_repo.resource_exists(
            conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId, **scope):
        return not_found_message(scope["resource_type"])
    return None


async def _create_scope(conn: Conn, *, tenant: Tenant, data: AddUsers, now: int) -> str | None:
    """Create what the call's create flags name and does not exist yet; why every item fails, or None."""
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    if data.createOrganization:
        await organizations_repo.insert(conn, api_key_id=tenant.api_key_id, id=data.organizationId, name=None, now=now)
    if not (data.createFolder or data.createDocument) or await organizations_repo.get(
            conn, api_key_id=tenant.api_key_id, id=data.organizationId) is None:
        return None  # nothing to create, or nowhere to create it (the scope check says which)
    if data.createFolder and data.folderId is not None:
        parent = data.parentFolderId
        if parent is not None and not await documents_repo.folder_exists(conn, **key, id=parent):
            return not_found_message("parent_folder")
        await documents_repo.insert_folder(conn, **key, id=data.folderId, name=None, parent_id=parent, now=now)
    if data.createDocument and data.documentId is not None:
        await documents_repo.insert(conn, **key, id=data.documentId, name=None, folder_id=None, now=now)
    return None


async def add(svc: Services, *, tenant: Tenant, data: AddUsers) -> dict[str, Any]:
    """Give users a role (default editor) on the organization, a folder or a document, creating those first when
    asked to; keyed by userId."""
    now = svc.now_ms()
    scope = scope_of(data)
    try:
        # The check answers the common case; the organization's foreign key answers one deleted after it.
        with constraints.mapped():
            async with transaction(svc.pool, svc.redis) as tx:
                missing = (await _create_scope(tx.conn, tenant=tenant, data=data, now=now)
                           or await _missing_scope(tx.conn, tenant=tenant, data=data))
                if missing:
                    return {u.userId: {"success": False, "id": u.userId, "message": missing} for u in data.users}
                for user in data.users:
                    await profiles.record_user(tx.conn, api_key_id=tenant.api_key_id, id=user.userId, name=user.name,
                                               email=user.email, now=now)
                await permissions_repo.upsert_grants(tx.conn, [
                    grant_row(tenant=tenant, principal=("user", u.userId), organization_id=data.organizationId,
                              access_role=u.accessRole or "editor", expires_at=None, now=now, **scope)
                    for u in data.users
                ])
    except ApiError as exc:
        if exc.code != "NOT_FOUND":
            raise
        return {u.userId: {"success": False, "id": u.userId, "message": exc.message} for u in data.users}
    return {u.userId: {"success": True, "id": u.userId, "message": "User added."} for u in data.users}


async def update(svc: Services, *, tenant: Tenant, data: UpdateUsers) -> dict[str, Any]:
    """Change users' names, e-mails and role at the scope; users without access there do not exist."""
    scope = scope_of(data)
    async with svc.pool.connection() as conn:  # one statement: atomic without a transaction of its own
        updated = await repo.update_users(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                          users=[u.model_dump(exclude_none=True) for u in data.users], now=svc.now_ms(),
                                          **scope)
    # A user without a grant of their own there, or in a scope that does not exist, is a missing user.
    return {
        u.userId: {"success": True, "id": u.userId, "message": "User updated."}
        if u.userId in updated else {"success": False, "id": u.userId, "message": not_found_message("user")}
        for u in data.users
    }


async def get(svc: Services, *, tenant: Tenant, data: GetUsers) -> tuple[Any, str | None]:
    """A page of the users with access at the scope (or on every document), optionally grouped by document."""
    await require_advanced_queries(svc, tenant=tenant)
    scope = {"resource_type": "document", "resource_id": None} if data.allDocuments else scope_of(data)
    pager = paging.Pager(svc.keyring, f"{tenant.api_key_id}:users:{data.organizationId}:{scope}")
    after_resource, after_user = pager.after(data.pageToken, 2)
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                    user_ids=data.userIds, group_ids=data.organizationUserGroupIds,
                                    after_resource=after_resource, after_user=after_user, now_ms=svc.now_ms(),
                                    limit=data.pageSize + 1, **scope)
    rows, token = pager.page(rows, data.pageSize, "resource_id", "user_id")
    if data.groupByDocumentId:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            grouped.setdefault(row["resource_id"], []).append(UserWithAccess.wire(row))
        return grouped, token
    return [UserWithAccess.wire(r) for r in rows], token


async def delete(svc: Services, *, tenant: Tenant, data: DeleteUsers) -> dict[str, Any]:
    """Remove users from the organization (all its access and groups), a folder or a document."""
    scope = scope_of(data)
    async with transaction(svc.pool, svc.redis) as tx:
        if scope["resource_type"] == "organization":
            removed = await repo.delete_user_grants(tx.conn, api_key_id=tenant.api_key_id, user_ids=data.userIds,
                                                    organization_ids=[data.organizationId])
        else:
            removed = set()
            for user_id in data.userIds:
                if await repo.delete_scope_grant(tx.conn, api_key_id=tenant.api_key_id,
                                                 organization_id=data.organizationId, user_id=user_id, **scope):
                    removed.add(user_id)
    return {
        u: {"success": u in removed, "message": "User removed." if u in removed else not_found_message("user")}
        for u in data.userIds
    }


async def count(svc: Services, *, tenant: Tenant, data: CountUsers) -> dict[str, int]:
    """How many users have access at the scope (or on any document), directly or through a group."""
    await require_advanced_queries(svc, tenant=tenant)
    scope = {"resource_type": "document", "resource_id": None} if data.allDocuments else scope_of(data)
    async with svc.pool.connection() as conn:
        total = await repo.count_users(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                       user_id=data.userId, now_ms=svc.now_ms(), **scope)
    return {"count": total}


async def document_users(svc: Services, *, tenant: Tenant, data: DocUsers) -> tuple[list[Any], str | None]:
    """A page of the users with access to any of the organization's documents, by userId, with how many (and,
    when asked, which) documents."""
    await require_advanced_queries(svc, tenant=tenant)
    pager = paging.Pager.for_query(
        svc.keyring, tenant.api_key_id, "users/doc", {
            "organizationId": data.organizationId, "userIds": data.userIds,
            "includeInvolvedDocuments": data.includeInvolvedDocuments
        })
    (after_user, ) = pager.after(data.pageToken, 1)
    async with svc.pool.connection() as conn:
        rows = await repo.document_users(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                         user_ids=data.userIds, involved=data.includeInvolvedDocuments,
                                         after_user=after_user, limit=data.pageSize + 1, now_ms=svc.now_ms())
    rows, token = pager.page(rows, data.pageSize, "user_id")
    return [DocUser.wire(r, involved=data.includeInvolvedDocuments) for r in rows], token
