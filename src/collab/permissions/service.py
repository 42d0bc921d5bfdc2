"""Permissions: grant and revoke roles (for a user or a group), read effective access, issue user tokens."""

from itertools import groupby
from typing import Any

from collab.kit import auth
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import invalid, issue, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.permissions import access, profiles, provider, tokens
from collab.permissions import repository as repo
from collab.permissions.schemas import AddPermissions, GenerateToken, GetPermissions, RemovePermissions, Resource


async def _refuse_missing(conn: Conn, *, tenant: Tenant, resources: list[Resource], path: list[str],
                          organization_id: str | None = None) -> None:
    """INVALID_ARGUMENT naming every resource that does not exist (or lies outside the group's organization)."""
    problems = [
        issue([*path, i, "organizationId"], "Must be the group's organization.") for i, r in enumerate(resources)
        if organization_id is not None and r.organizationId != organization_id
    ]
    if not problems:
        missing = await repo.missing_resources(conn, api_key_id=tenant.api_key_id,
                                               resources=[(r.type, r.id, r.organizationId) for r in resources])
        problems = [issue([*path, i, "id"], not_found_message(resources[i].type, "permissions")) for i in missing]
    if problems:
        raise invalid(problems[0]["message"] if len(problems) == 1 else "Some resources do not exist.", problems)


def grant_row(*, tenant: Tenant, principal: tuple[str, str], organization_id: str, resource_type: str, resource_id: str,
              access_role: str, expires_at: float | None, now: int) -> dict[str, Any]:
    """One row of `grants`, as permissions/add, users/add and token generation write it."""
    return {
        "api_key_id": tenant.api_key_id, "organization_id": organization_id, "principal_type": principal[0],
        "principal_id": principal[1], "resource_type": resource_type, "resource_id": resource_id,
        "access_role": access_role, "expires_at": int(expires_at) if expires_at is not None else None, "now": now
    }


async def _grant(conn: Conn, *, tenant: Tenant, principal: tuple[str, str], resources: list[Resource],
                 now: int) -> None:
    await repo.upsert_grants(conn, [
        grant_row(tenant=tenant, principal=principal, organization_id=r.organizationId, resource_type=r.type,
                  resource_id=r.id, access_role=r.accessRole, expires_at=r.expiresAt, now=now) for r in resources
    ])


async def add(svc: Services, *, tenant: Tenant, data: AddPermissions) -> None:
    """Grant roles on several resources to a user, or to every member of a group; all or nothing."""
    resources = data.permissions.resources
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        if data.group is not None:
            group = data.group
            if not await repo.group_exists(tx.conn, api_key_id=tenant.api_key_id, organization_id=group.organizationId,
                                           id=group.organizationUserGroupId):
                message = not_found_message("group")
                raise invalid(message, [issue(["group", "organizationUserGroupId"], message)])
            await _refuse_missing(tx.conn, tenant=tenant, resources=resources, path=["permissions", "resources"],
                                  organization_id=group.organizationId)
            principal = ("group", group.organizationUserGroupId)
        else:
            await _refuse_missing(tx.conn, tenant=tenant, resources=resources, path=["permissions", "resources"])
            await profiles.record_user(tx.conn, api_key_id=tenant.api_key_id, id=data.user.userId, now=now)
            principal = ("user", data.user.userId)
        await _grant(tx.conn, tenant=tenant, principal=principal, resources=resources, now=now)


async def remove(svc: Services, *, tenant: Tenant, data: RemovePermissions) -> int:
    """Revoke a user's (or a group's) grants on resources; the number revoked."""
    principal = ("user", data.userId) if data.userId else ("group", data.group.organizationUserGroupId)
    removed = 0
    async with transaction(svc.pool, svc.redis) as tx:
        for r in data.permissions.resources:
            if data.group is not None and r.organizationId != data.group.organizationId:
                continue  # a group only holds grants in its own organization
            removed += await repo.delete_grant(tx.conn, api_key_id=tenant.api_key_id, organization_id=r.organizationId,
                                               principal_type=principal[0], principal_id=principal[1],
                                               resource_type=r.type, resource_id=r.id)
    return removed


def _overlay(answers: dict[str, Any], decided: dict[provider.Query, dict[str, Any]], organization_id: str) -> None:
    """Put the provider's decisions in place of what grants gave; what is missing or disabled stays as it was."""
    sections = {"organization": "organization", "folders": "folder", "documents": "document"}
    for user, answer in answers.items():
        for section, kind in sections.items():
            for ident, entry in answer[section].items():
                if entry.get("errorCode") == "does_not_exist" or entry in (access.DISABLED, access.DOCUMENT_DISABLED):
                    continue
                answer[section][ident] = decided[(user, kind, ident, organization_id)]


async def effective(conn: Conn, svc: Services, *, tenant: Tenant, organization_id: str, user_ids: list[str],
                    folder_ids: list[str] | None, document_ids: list[str] | None) -> dict[str, Any]:
    """Each user's effective access in one organization now; without ids, to what they hold grants on. The API key's
    permission provider, when it has one enabled, decides in place of the grants."""
    found = await repo.access_inputs(conn, api_key_id=tenant.api_key_id, organization_id=organization_id,
                                     user_ids=user_ids, document_ids=document_ids or [], now_ms=svc.now_ms())
    organization, grants, folders, documents, folder_types = (found[k] for k in ("organization", "grants", "folders",
                                                                                 "documents", "folder_types"))
    by_user = {u: [g for g in grants if g["user_id"] == u] for u in user_ids}

    def granted(user: str, kind: str) -> list[str]:
        return sorted({g["resource_id"] for g in by_user[user] if g["resource_type"] == kind})

    answers = {
        user: access.resolve(organization_id=organization_id, organization=organization, grants=by_user[user],
                             folders=folders, documents=documents, folder_types=folder_types,
                             folder_ids=folder_ids if folder_ids is not None else granted(user, "folder"),
                             document_ids=document_ids if document_ids is not None else granted(user, "document"))
        for user in user_ids
    }
    if found["provider"]:  # read in the same statement: a tenant without one pays no round trip
        queries = [(user, kind, ident, organization_id) for user, answer in answers.items()
                   for section, kind in (("organization", "organization"), ("folders", "folder"),
                                         ("documents", "document")) for ident in answer[section]]
        parents = {d: row.get("folder") for d, row in documents.items()}
        decided = await provider.decide(conn, svc, tenant=tenant, queries=queries, parents=parents)
        if decided is not None:  # None: turned off since the statement above
            _overlay(answers, decided, organization_id)
    return answers


async def get(svc: Services, *, tenant: Tenant, data: GetPermissions) -> dict[str, Any]:
    """Effective access keyed by userId: organization, folders and documents."""
    async with svc.pool.connection() as conn:
        return await effective(conn, svc, tenant=tenant, organization_id=data.organizationId, user_ids=data.userIds,
                               folder_ids=data.folderIds, document_ids=data.documentIds)


async def generate_token(svc: Services, *, tenant: Tenant, data: GenerateToken) -> dict[str, str]:
    """Grant the listed resources, then sign a 48-hour token with the user and their effective access to them."""
    now = svc.now_ms()
    resources = data.permissions.resources if data.permissions else []
    props = data.userProperties
    async with transaction(svc.pool, svc.redis) as tx:
        await _refuse_missing(tx.conn, tenant=tenant, resources=resources, path=["permissions", "resources"])
        await profiles.record_user(tx.conn, api_key_id=tenant.api_key_id, id=data.userId, now=now,
                                   name=props.name if props else None, email=props.email if props else None)
        await _grant(tx.conn, tenant=tenant, principal=("user", data.userId), resources=resources, now=now)
        granted = []
        for organization_id, grouped in groupby(sorted(resources, key=lambda r: r.organizationId),
                                                lambda r: r.organizationId):
            group = list(grouped)
            answer = (await effective(tx.conn, svc, tenant=tenant, organization_id=organization_id,
                                      user_ids=[data.userId], folder_ids=[r.id for r in group if r.type == "folder"],
                                      document_ids=[r.id for r in group if r.type == "document"]))[data.userId]
            sections = {
                "organization": answer["organization"], "folder": answer["folders"], "document": answer["documents"]
            }
            for r in group:
                entry = sections[r.type][r.id]
                if "accessRole" in entry:  # denied (a disabled organization) or expired: not in the token
                    granted.append({"type": r.type, "id": r.id, "organizationId": organization_id, **entry})
    user = {"userId": data.userId, "isAdmin": bool(props and props.isAdmin)}
    if props and props.name is not None:
        user["name"] = props.name
    if props and props.email is not None:
        user["email"] = props.email
    claims = {"sub": data.userId, "apiKey": tenant.api_key_id, "user": user, "permissions": {"resources": granted}}
    key = svc.keyring.token_key(tenant.api_key_id, tenant.token_key_version)
    return {"token": tokens.issue(key, claims=claims, audience=tenant.api_key_id, now_s=now // 1000)}


def token_keys(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The JWKS that verifies the API key's user tokens (no secret needed to verify)."""
    return tokens.jwks(svc.keyring, api_key_id=tenant.api_key_id, version=tenant.token_key_version)


async def rotate_token_keys(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """Sign the API key's user tokens with a new key from now on; tokens of the key before still verify."""
    async with transaction(svc.pool, svc.redis) as tx:
        version = await auth.rotate_token_key(tx.conn, api_key_id=tenant.api_key_id)
    await auth.credentials_changed(svc, api_key_id=tenant.api_key_id)  # cached tenants carry the old version
    return tokens.jwks(svc.keyring, api_key_id=tenant.api_key_id, version=version)
