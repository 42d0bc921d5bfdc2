"""Permissions: grant and revoke roles (for a user or a group), read effective access, issue user tokens."""

from collections.abc import Sequence
from dataclasses import dataclass, field
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


def _asks(entry: dict[str, Any]) -> bool:
    """Whether the provider decides this entry: collab's own switches (missing, disabled) win over any answer."""
    return entry.get("errorCode") != "does_not_exist" and entry not in (access.DISABLED, access.DOCUMENT_DISABLED)


_SECTIONS = (("organization", "organization"), ("folders", "folder"), ("documents", "document"))


@dataclass
class Pending:
    """Effective access as the grants give it, and what the API key's provider (when one decides) must be asked."""

    tenant: Tenant
    organization_id: str
    answers: dict[str, Any]
    config: provider.Config | None = None
    queries: list[provider.Query] = field(default_factory=list)
    parents: dict[str, str | None] = field(default_factory=dict)
    types: dict[str, dict[str, str]] = field(default_factory=dict)  # effective access types, by section and id


async def read_access(conn: Conn, svc: Services, *, tenant: Tenant, organization_id: str, user_ids: list[str],
                      folder_ids: list[str] | None, document_ids: list[str] | None,
                      fields: Sequence[Sequence[str]] = ()) -> Pending:
    """The database's part of effective access (no callout: the caller may hold a transaction). INVALID_ARGUMENT,
    naming `fields`, when the provider would be asked more than `COLLAB_PERMISSION_PROVIDER_MAX_DECISIONS`."""
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
    types = (access.types_of(folders=folders, documents=documents, folder_types=folder_types)
             if organization is not None else {})
    pending = Pending(tenant=tenant, organization_id=organization_id, answers=answers, types=types)
    if not found["provider"]:  # read in the same statement: a tenant without one pays no round trip
        return pending
    pending.config = provider.config_of(svc, tenant.api_key_id, await
                                        repo.provider_config(conn, api_key_id=tenant.api_key_id))
    if pending.config is None:  # turned off since the statement above
        return pending
    pending.queries = list(
        dict.fromkeys((user, kind, ident, organization_id) for user, answer in answers.items()
                      for section, kind in _SECTIONS for ident, entry in answer[section].items() if _asks(entry)))
    pending.parents = {d: row.get("folder") for d, row in documents.items()}
    cap = svc.settings.permission_provider_max_decisions
    if len(pending.queries) > cap:
        message = (f"With the API key's permission provider on, one call asks it about at most {cap} decisions "
                   f"(each user's organization, folders and documents); this one needs {len(pending.queries)}. "
                   "Ask about fewer users or resources at a time.")
        raise invalid(message, [issue(path, message, "too_big") for path in fields] or None)
    return pending


def overlay(pending: Pending, decided: dict[provider.Query, dict[str, Any]]) -> dict[str, Any]:
    """Effective access: the provider's decisions in place of what grants gave (a decision missing denies); what
    the provider does not decide stays as it was."""
    if pending.config is None:
        return pending.answers
    for user, answer in pending.answers.items():
        for section, kind in _SECTIONS:
            for ident, entry in answer[section].items():
                if _asks(entry):
                    answer[section][ident] = decided.get((user, kind, ident, pending.organization_id),
                                                         dict(provider.FAILED))
    return pending.answers


async def settle(svc: Services, pending: Pending, *, deadline: float | None = None) -> dict[str, Any]:
    """Effective access, the provider asked (with no connection held: call it after releasing the one that read
    `pending`) within one time budget (`deadline`, else one starting now)."""
    if pending.config is None or not pending.queries:
        return overlay(pending, {})
    decided = await provider.decide(svc, tenant=pending.tenant, config=pending.config, queries=pending.queries,
                                    parents=pending.parents, deadline=deadline)
    return overlay(pending, decided)


async def effective(svc: Services, *, tenant: Tenant, organization_id: str, user_ids: list[str],
                    folder_ids: list[str] | None, document_ids: list[str] | None,
                    fields: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
    """Each user's effective access in one organization now; without ids, to what they hold grants on. The API key's
    permission provider, when it has one enabled, decides in place of the grants (asked once the pooled connection
    that read the rest is back in the pool)."""
    async with svc.pool.connection() as conn:
        pending = await read_access(conn, svc, tenant=tenant, organization_id=organization_id, user_ids=user_ids,
                                    folder_ids=folder_ids, document_ids=document_ids, fields=fields)
    return await settle(svc, pending)


async def get(svc: Services, *, tenant: Tenant, data: GetPermissions) -> dict[str, Any]:
    """Effective access keyed by userId: organization, folders and documents, each folder and document entry with
    its effective `accessType` (Velt's), allowed or denied."""
    asked = [["userIds"]] + [[name] for name in ("folderIds", "documentIds") if getattr(data, name) is not None]
    async with svc.pool.connection() as conn:
        pending = await read_access(conn, svc, tenant=tenant, organization_id=data.organizationId,
                                    user_ids=data.userIds, folder_ids=data.folderIds, document_ids=data.documentIds,
                                    fields=asked)
    answers = await settle(svc, pending)
    return access.with_types(answers, pending.types) if pending.types else answers


async def generate_token(svc: Services, *, tenant: Tenant, data: GenerateToken) -> dict[str, str]:
    """Grant the listed resources, then sign a 48-hour token with the user and their effective access to them (the
    grants are written first; the provider, when one decides, is asked after that transaction, holding nothing)."""
    now = svc.now_ms()
    resources = data.permissions.resources if data.permissions else []
    props = data.userProperties
    by_organization = {
        organization_id: list(grouped)
        for organization_id, grouped in groupby(sorted(resources, key=lambda r: r.organizationId),
                                                lambda r: r.organizationId)
    }
    path = [["permissions", "resources"]]
    async with transaction(svc.pool, svc.redis) as tx:
        await _refuse_missing(tx.conn, tenant=tenant, resources=resources, path=path[0])
        await profiles.record_user(tx.conn, api_key_id=tenant.api_key_id, id=data.userId, now=now,
                                   name=props.name if props else None, email=props.email if props else None)
        await _grant(tx.conn, tenant=tenant, principal=("user", data.userId), resources=resources, now=now)
        asks = {(r.type, r.id, r.organizationId) for r in resources} | {("organization", o, o) for o in by_organization}
        cap = svc.settings.permission_provider_max_decisions
        if len(asks) > cap and provider.config_of(svc, tenant.api_key_id, await repo.provider_config(
                tx.conn, api_key_id=tenant.api_key_id)) is not None:  # refused: the transaction grants nothing
            message = (f"With the API key's permission provider on, one token asks it about at most {cap} decisions "
                       f"(each resource and its organization); this one needs {len(asks)}. Grant fewer resources in "
                       "one token.")
            raise invalid(message, [issue(path[0], message, "too_big")])
    pending = []
    async with svc.pool.connection() as conn:
        for organization_id, group in by_organization.items():
            pending.append(await
                           read_access(conn, svc, tenant=tenant, organization_id=organization_id,
                                       user_ids=[data.userId], folder_ids=[r.id for r in group if r.type == "folder"],
                                       document_ids=[r.id for r in group if r.type == "document"], fields=path))
    deadline = provider.budget(svc)  # one budget for the whole token, whatever the number of organizations
    granted = []
    for (organization_id, group), read in zip(by_organization.items(), pending, strict=True):
        answer = (await settle(svc, read, deadline=deadline))[data.userId]
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
