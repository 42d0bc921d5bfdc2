"""Workspaces, their API keys and auth tokens."""

from typing import Any

from disposable_email_domains import blocklist

from collab.kit import auth
from collab.kit.auth import WorkspaceCaller
from collab.kit.crypto import new_id, new_token
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.ratelimit import check
from collab.kit.services import Services
from collab.workspaces import basic_webhooks, domains
from collab.workspaces import repository as repo
from collab.workspaces.schemas import (
    ApiKeyEntry,
    BasicWebhookConfigUpdate,
    CopyApiKey,
    CreateApiKey,
    CreateWorkspace,
    UpdateApiKey,
    Workspace,
)

DEFAULT_TOKEN_NAME = "Default Auth Token"
MAX_API_KEYS = 100


def _is_disposable(email: str) -> bool:
    domain = email.rsplit("@", 1)[1].lower().rstrip(".")
    labels = domain.split(".")
    # A subdomain of a disposable domain is disposable too.
    return any(".".join(labels[i:]) in blocklist for i in range(len(labels) - 1))


def _key_name(email: str, kind: str) -> str:
    local = email.split("@", 1)[0]
    label = {"testing": "Test", "production": "Production"}[kind]
    return f"{local[:1].upper()}{local[1:]} {label} API Key"


def _ws_token_aad(workspace_id: str) -> str:
    return f"workspace-token:{workspace_id}"


def _key_token_aad(api_key_id: str) -> str:
    return f"auth-token:{api_key_id}"


async def _add_auth_token(svc: Services, conn: Conn, *, api_key_id: str) -> dict[str, Any]:
    token = new_token()
    await repo.insert_auth_token(conn, api_key_id=api_key_id, name=DEFAULT_TOKEN_NAME, domains=[],
                                 token_hash=svc.keyring.hash(token),
                                 token_enc=svc.keyring.encrypt(token, _key_token_aad(api_key_id)))
    return {"token": token, "name": DEFAULT_TOKEN_NAME, "domains": []}


async def _add_api_key(svc: Services, conn: Conn, *, workspace_id: str, owner_email: str, kind: str, name: str | None,
                       with_token: bool) -> str:
    api_key_id = new_id("key_")
    await repo.insert_api_key(conn, id=api_key_id, workspace_id=workspace_id, name=name or _key_name(owner_email, kind),
                              type=kind, owner_email=owner_email)
    if with_token:
        await _add_auth_token(svc, conn, api_key_id=api_key_id)
    return api_key_id


async def create_workspace(svc: Services, *, data: CreateWorkspace, client_ip: str) -> dict[str, Any]:
    """Create a workspace with one testing API key (and its auth token) for the owner e-mail."""
    await check(svc.redis, bucket=f"workspace-create:{client_ip}", rate=svc.settings.rate_limit_workspace_create,
                now=svc.clock(), message="Too many workspaces created from this address; retry later.")
    email = data.ownerEmail
    if _is_disposable(email):
        message = "Disposable e-mail domains are not allowed."
        raise invalid(message, [issue(["ownerEmail"], message)])
    name = data.name or email
    workspace_name = data.workspaceName or f"{name} workspace"
    workspace_id = new_id("ws_")
    token = new_token()
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.lock_email(tx.conn, email=email)
        owned = await repo.workspaces_of_email(tx.conn, email=email)
        if any(w["name"].lower() == workspace_name.lower() for w in owned):
            raise ApiError("ALREADY_EXISTS", "A workspace with this name already exists for this e-mail.")
        root = next((w for w in owned if w["is_root"]), None)
        if root is not None and root["plan"] != "paid":
            raise ApiError("PERMISSION_DENIED",
                           "An additional workspace requires the root workspace to be on a paid plan.")
        if len(owned) >= svc.settings.max_workspaces_per_email:
            raise ApiError("RESOURCE_EXHAUSTED", "This e-mail already owns the maximum number of workspaces.")
        await repo.insert_workspace(tx.conn, id=workspace_id, name=workspace_name, owner_email=email,
                                    owner_id=root["owner_id"] if root else new_id("usr_"), owner_name=name,
                                    owner_avatar=data.avatar or "", auth_token_hash=svc.keyring.hash(token),
                                    auth_token_enc=svc.keyring.encrypt(token,
                                                                       _ws_token_aad(workspace_id)), is_root=not root)
        await _add_api_key(svc, tx.conn, workspace_id=workspace_id, owner_email=email, kind="testing", name=None,
                           with_token=True)
        return await _workspace_object(svc, tx.conn, workspace_id=workspace_id)


async def _workspace_object(svc: Services, conn: Conn, *, workspace_id: str) -> dict[str, Any]:
    row = await repo.get_workspace(conn, workspace_id=workspace_id)
    if row is None:
        raise not_found("workspace")
    keys = await repo.api_keys_of_workspace(conn, workspace_id=workspace_id)
    return Workspace.wire(row, keys, svc.keyring.decrypt(row["auth_token_enc"], _ws_token_aad(workspace_id)))


async def get_workspace(svc: Services, *, caller: WorkspaceCaller) -> dict[str, Any]:
    """The caller's workspace object, rate limited per workspace."""
    await check(svc.redis, bucket=f"workspace-get:{caller.workspace_id}", rate=svc.settings.rate_limit_workspace_get,
                now=svc.clock(), message="Rate limit exceeded; retry after 1 minute.")
    async with svc.pool.connection() as conn:
        return await _workspace_object(svc, conn, workspace_id=caller.workspace_id)


async def _own_key(conn: Conn, *, caller: WorkspaceCaller, api_key_id: str) -> None:
    if not await repo.api_key_belongs(conn, api_key_id=api_key_id, workspace_id=caller.workspace_id):
        raise not_found("api_key")


async def reset_auth_token(svc: Services, *, caller: WorkspaceCaller, api_key_id: str) -> dict[str, Any]:
    """Replace every auth token of the API key with one new token; the old ones stop working at once."""
    async with transaction(svc.pool, svc.redis) as tx:
        await _own_key(tx.conn, caller=caller, api_key_id=api_key_id)
        await repo.delete_auth_tokens(tx.conn, api_key_id=api_key_id)
        new = await _add_auth_token(svc, tx.conn, api_key_id=api_key_id)
    await auth.credentials_changed(svc, api_key_id=api_key_id)  # other processes stop trusting the old ones now
    return {"apiKey": api_key_id, "newAuthToken": new}


async def list_auth_tokens(svc: Services, *, caller: WorkspaceCaller, api_key_id: str) -> dict[str, Any]:
    """The auth tokens of one API key of the workspace, shown to its owner."""
    async with svc.pool.connection() as conn:
        await _own_key(conn, caller=caller, api_key_id=api_key_id)
        rows = await repo.auth_tokens_of_key(conn, api_key_id=api_key_id)
    tokens = [{
        "token": svc.keyring.decrypt(r["token_enc"], _key_token_aad(api_key_id)), "name": r["name"],
        "domains": list(r["domains"])
    } for r in rows]
    return {"apiKey": api_key_id, "authTokens": tokens}


async def create_api_key(svc: Services, *, caller: WorkspaceCaller, data: CreateApiKey) -> dict[str, Any]:
    """Add an API key (a new tenant) to the workspace, by default with one auth token, with Velt's allowed domains
    and basic webhook service when sent."""
    local = domains.LOCALHOST if data.addLocalHostToAllowedDomains else ()
    allowed = list(dict.fromkeys([*(data.allowedDomains or []), *local]))
    # Its URLs are checked when sent to (kit/safety.py pins every target), as this floor cannot check them now.
    webhooks = data.model_dump(include={"useWebhookService", "webhookServiceConfig"}, exclude_unset=True)
    async with transaction(svc.pool, svc.redis) as tx:
        keys = await repo.api_keys_of_workspace(tx.conn, workspace_id=caller.workspace_id)
        if len(keys) >= MAX_API_KEYS:
            raise ApiError("RESOURCE_EXHAUSTED", f"A workspace holds at most {MAX_API_KEYS} API keys.")
        api_key_id = await _add_api_key(svc, tx.conn, workspace_id=caller.workspace_id, owner_email=data.ownerEmail,
                                        kind=data.type, name=data.apiKeyName, with_token=data.createAuthToken)
        if allowed:
            await repo.set_allowed_domains(tx.conn, api_key_id=api_key_id, domains=allowed)
        if webhooks:
            tenant = auth.Tenant(api_key_id=api_key_id, workspace_id=caller.workspace_id)
            await basic_webhooks.apply(svc, tx.conn, tenant=tenant, data=BasicWebhookConfigUpdate(**webhooks))
    return {"apiKey": api_key_id}


async def update_api_key(svc: Services, *, caller: WorkspaceCaller, data: UpdateApiKey) -> None:
    """Rename an API key of the workspace."""
    async with transaction(svc.pool, svc.redis) as tx:
        if not await repo.rename_api_key(tx.conn, api_key_id=data.apiKey, workspace_id=caller.workspace_id,
                                         name=data.apiKeyName.strip()):
            raise not_found("api_key")


async def copy_api_key(svc: Services, *, caller: WorkspaceCaller, data: CopyApiKey) -> dict[str, Any]:
    """Give a second key of the workspace the first one's feature configs, webhook services and allowed domains;
    secrets stay with the key they were given to (auth tokens, AI provider keys, endpoints and their secrets)."""
    if data.sourceApiKey == data.targetApiKey:
        message = "sourceApiKey and targetApiKey must differ."
        raise invalid(message, [issue(["targetApiKey"], message)])
    async with transaction(svc.pool, svc.redis) as tx:
        for api_key_id in (data.sourceApiKey, data.targetApiKey):
            await _own_key(tx.conn, caller=caller, api_key_id=api_key_id)
        await repo.copy_api_key_config(tx.conn, source=data.sourceApiKey, target=data.targetApiKey,
                                       workspace_id=caller.workspace_id)
        await basic_webhooks.copy(svc, tx.conn, source=data.sourceApiKey, target=data.targetApiKey)
    return {}


async def ensure_workspace_token(svc: Services, *, caller: WorkspaceCaller) -> dict[str, Any]:
    """The workspace's auth token (every collab workspace has one from its creation, so ensuring never mints)."""
    async with svc.pool.connection() as conn:
        row = await repo.get_workspace(conn, workspace_id=caller.workspace_id)
    if row is None:
        raise not_found("workspace")
    return {"authToken": svc.keyring.decrypt(row["auth_token_enc"], _ws_token_aad(caller.workspace_id))}


async def list_api_keys(svc: Services, *, caller: WorkspaceCaller) -> list[dict[str, Any]]:
    """The workspace's API keys."""
    async with svc.pool.connection() as conn:
        keys = await repo.api_keys_of_workspace(conn, workspace_id=caller.workspace_id)
    return [ApiKeyEntry.wire(k) for k in keys]


async def set_plan(svc: Services, *, workspace_id: str, plan: str) -> None:
    """Set a workspace's plan (operators, through the CLI)."""
    async with transaction(svc.pool, svc.redis) as tx:
        if not await repo.set_plan(tx.conn, workspace_id=workspace_id, plan=plan):
            raise not_found("workspace")


async def reset_workspace_token(svc: Services, *, caller: WorkspaceCaller) -> dict[str, Any]:
    """Replace the workspace's own auth token (the console's reset); the old one stops working at once."""
    token = new_token()
    async with transaction(svc.pool, svc.redis) as tx:
        changed = await repo.set_workspace_token(
            tx.conn, workspace_id=caller.workspace_id, auth_token_hash=svc.keyring.hash(token),
            auth_token_enc=svc.keyring.encrypt(token, _ws_token_aad(caller.workspace_id)))
        if not changed:
            raise not_found("workspace")
    return {"authToken": token}
