"""User invitations (velt-py's users/invite/*): an e-mail invited to an organization, a folder or a document;
accepting grants that access to the user who joins, declining or withdrawing grants nothing."""

from typing import Any

import jwt

from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db import constraints
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.permissions import profiles, tokens
from collab.permissions import repository as permissions_repo
from collab.permissions.service import grant_row
from collab.users import repository as repo
from collab.users.schemas import (
    AddInvite,
    GetInvitations,
    GetInvites,
    Invitation,
    PendingInvites,
    RespondInvite,
)

# The invited resource going away (deleted between the check and the write) answers as one that was never there.
constraints.register_missing("user_invitations_organization_fkey", "organization")
constraints.register_missing("user_invitations_folder_fkey", "folder")
constraints.register_missing("user_invitations_document_fkey", "document")

# What each invitation type grants access to, as a grant's resource type.
RESOURCE = {"org_user": "organization", "folder_user": "folder", "doc_user": "document"}


def _target(data: AddInvite | RespondInvite) -> dict[str, Any]:
    """The invitation's key beside the organization: its type, the invited resource and the (lower-cased) e-mail."""
    resource = {"org_user": data.organizationId, "folder_user": data.folderId, "doc_user": data.documentId}
    return {"type": data.type, "resource_id": resource[data.type], "email": data.email.lower()}


async def add(svc: Services, *, tenant: Tenant, data: AddInvite) -> dict[str, Any]:
    """Invite an e-mail; inviting again while pending or after acceptance answers the invitation as it stands."""
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    target = _target(data)
    with constraints.mapped():
        async with transaction(svc.pool, svc.redis) as tx:
            # A missing organization, folder or document is the insert's foreign key (NOT_FOUND through constraints).
            kind = RESOURCE[data.type]
            row = await repo.insert_invitation(
                tx.conn, **key, type=data.type, email=target["email"], id=new_id("inv_"),
                folder_id=data.folderId if kind == "folder" else None,
                document_id=data.documentId if kind == "document" else None, organization_name=data.organizationName,
                folder_name=data.folderName, document_name=data.documentName,
                invited_by=data.invitedBy.model_dump(exclude_none=True) if data.invitedBy else None, now=svc.now_ms())
            if row is None:
                row = await repo.get_invitation(tx.conn, **key, **target)
    assert row is not None  # inserted, revived, or there already
    return Invitation.wire(row)


def _check_identity(svc: Services, *, tenant: Tenant, data: RespondInvite) -> None:
    """Refuse an answer that names a user the invitation or the user's own token does not match."""
    if data.user is None:
        return
    if data.user.email is not None and data.user.email.lower() != data.email.lower():
        message = "The user's e-mail is not the invited one."
        raise invalid(message, [issue(["user", "email"], message)])
    if data.authToken is not None:
        try:
            claims = tokens.verify(svc.keyring, data.authToken, api_key_id=tenant.api_key_id,
                                   version=tenant.token_key_version, now_s=svc.now_ms() / 1000)
        except jwt.PyJWTError:
            raise ApiError("PERMISSION_DENIED", "authToken is not a valid user token of this API key.") from None
        if claims.get("sub") != data.user.userId:
            raise ApiError("PERMISSION_DENIED", "authToken belongs to another user.")


async def respond(svc: Services, *, tenant: Tenant, data: RespondInvite) -> dict[str, Any]:
    """Accept (granting the invited access, editor, to the user), decline or withdraw a pending invitation."""
    _check_identity(svc, tenant=tenant, data=data)
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    target = _target(data)
    accepted = data.status == "ACCEPTED"
    user = data.user
    async with transaction(svc.pool, svc.redis) as tx:
        row = await repo.respond_invitation(tx.conn, **key, **target, status=data.status,
                                            user_id=user.userId if accepted and user else None, now=now)
        if row is None:
            existing = await repo.get_invitation(tx.conn, **key, **target)
            if existing is None:
                raise not_found("invitation")
            raise ApiError("FAILED_PRECONDITION", f"The invitation is not pending: it was {existing['status']}.")
        if accepted and user:
            await profiles.record_user(tx.conn, api_key_id=tenant.api_key_id, id=user.userId, name=user.name,
                                       email=user.email or target["email"], now=now)
            await permissions_repo.upsert_grants(tx.conn, [
                grant_row(tenant=tenant, principal=("user", user.userId), organization_id=data.organizationId,
                          resource_type=RESOURCE[data.type], resource_id=target["resource_id"], access_role="editor",
                          expires_at=None, now=now)
            ])
    return Invitation.wire(row)


async def _page(svc: Services, *, tenant: Tenant, organization_id: str, email: str | None, status: str | None,
                type: str | None, page_size: int, page_token: str | None) -> tuple[list[Any], str | None]:
    filters = {"organizationId": organization_id, "email": email, "status": status, "type": type}
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "invitations", filters)
    after_email, after_id = pager.after(page_token, 2)
    async with svc.pool.connection() as conn:
        rows = await repo.list_invitations(conn, api_key_id=tenant.api_key_id, organization_id=organization_id,
                                           email=email, status=status, type=type, after_email=after_email,
                                           after_id=after_id, limit=page_size + 1)
    rows, token = pager.page(rows, page_size, "email", "id")
    return [Invitation.wire(r) for r in rows], token


async def get(svc: Services, *, tenant: Tenant, data: GetInvites) -> tuple[list[Any], str | None]:
    """A page of an organization's invitations by e-mail, optionally one e-mail's or only the pending ones."""
    return await _page(svc, tenant=tenant, organization_id=data.organizationId,
                       email=data.email.lower() if data.email else None,
                       status="PENDING" if data.isPendingUsersOnly else None, type=None, page_size=data.pageSize,
                       page_token=data.pageToken)


async def of_email(svc: Services, *, tenant: Tenant, data: GetInvitations) -> tuple[list[Any], str | None]:
    """A page of one e-mail's invitations in an organization, optionally of one status or type."""
    return await _page(svc, tenant=tenant, organization_id=data.organizationId, email=data.email.lower(),
                       status=data.status, type=data.type, page_size=data.pageSize, page_token=data.pageToken)


async def pending_count(svc: Services, *, tenant: Tenant, data: PendingInvites) -> dict[str, int]:
    """How many invitations of a type wait for an answer in the organization."""
    async with svc.pool.connection() as conn:
        total = await repo.count_pending_invitations(conn, api_key_id=tenant.api_key_id,
                                                     organization_id=data.organizationId, type=data.type)
    return {"count": total}
