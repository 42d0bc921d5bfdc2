"""Auth dependencies: API-key auth (the tenant) and workspace auth (the workspace owner).

Both pass the failed-authentication gate (kit.authlimit) before they touch the database.
"""

import logging
from dataclasses import dataclass, field

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader
from redis.exceptions import RedisError

from collab.kit import authlimit
from collab.kit.credentials import CHANGED_CHANNEL
from collab.kit.db import Queries, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, not_found
from collab.kit.services import Services, services

log = logging.getLogger("collab.auth")
RATE_LIMITED = "Too many requests for this API key; retry later."
q = Queries(__file__.replace("auth.py", "auth.sql"))

_api_key = APIKeyHeader(name="x-service-api-key", auto_error=False, scheme_name="apiKey")
_auth_token = APIKeyHeader(name="x-service-auth-token", auto_error=False, scheme_name="authToken")
_workspace_id = APIKeyHeader(name="x-service-workspace-id", auto_error=False, scheme_name="workspaceId")
_workspace_token = APIKeyHeader(name="x-service-workspace-auth-token", auto_error=False,
                                scheme_name="workspaceAuthToken")
# Velt's names for the same headers: a team moving off Velt keeps its client (README, "Moving from Velt"). Read off
# the request rather than declared, so the OpenAPI document names the spec's headers only; the spec's name wins
# when both are sent, and an empty one is ignored under either name.
VELT_HEADERS = {
    "x-service-api-key": "x-velt-api-key", "x-service-auth-token": "x-velt-auth-token",
    "x-service-workspace-id": "x-velt-workspace-id", "x-service-workspace-auth-token": "x-velt-workspace-auth-token"
}
# A syntactically valid hash that matches nothing, so unknown ids cost the same as wrong tokens.
_NO_HASH = b"\x00" * 32


@dataclass(frozen=True)
class Tenant:
    """The caller of an [API-key auth] endpoint: one API key of one workspace."""

    api_key_id: str
    workspace_id: str
    # The version of the key that signs this API key's user tokens (auth/generate_token); not part of identity.
    token_key_version: int = field(default=1, compare=False, repr=False)


@dataclass(frozen=True)
class WorkspaceCaller:
    """The caller of a [Workspace auth] endpoint."""

    workspace_id: str


def _header(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None  # empty headers are ignored


def _given(request: Request, value: str | None, name: str) -> str | None:
    """A header's value under the spec's name, else under Velt's (empty ignored)."""
    return _header(value) or _header(request.headers.get(VELT_HEADERS[name]))


def _address(request: Request) -> str:
    # uvicorn already resolved X-Forwarded-For for trusted proxies (COLLAB_FORWARDED_ALLOW_IPS).
    return request.client.host if request.client else "unknown"


async def api_key_auth(
    request: Request, api_key: str | None = Depends(_api_key), token: str | None = Depends(_auth_token),
    svc: Services = Depends(services)
) -> Tenant:
    """Authenticate x-service-api-key + x-service-auth-token (or Velt's names); the tenant is the API key."""
    return await authenticate(request, svc, api_key=_given(request, api_key, "x-service-api-key"),
                              token=_given(request, token, "x-service-auth-token"))


async def api_key_auth_or_none(
    request: Request, api_key: str | None = Depends(_api_key), token: str | None = Depends(_auth_token),
    svc: Services = Depends(services)
) -> Tenant | None:
    """api_key_auth where either credential header is sent (under either name); None where neither is, for a route
    that takes credentials of its own (auth/token/get's v1 body), which must then call `authenticate`."""
    api_key, token = _given(request, api_key, "x-service-api-key"), _given(request, token, "x-service-auth-token")
    if api_key is None and token is None:
        return None
    return await authenticate(request, svc, api_key=api_key, token=token)


async def authenticate(request: Request, svc: Services, *, api_key: str | None, token: str | None) -> Tenant:
    """The tenant of an API key and one of its auth tokens (either missing or empty: 401), past the rate limit."""
    api_key, token = _header(api_key), _header(token)
    if api_key is None or token is None:
        raise ApiError("UNAUTHENTICATED", "Missing x-service-api-key or x-service-auth-token header.")
    if len(api_key) > 200 or len(token) > 500:
        raise ApiError("PERMISSION_DENIED", "Invalid API key.")
    known = svc.credentials.get(api_key, token, svc.keyring)
    if known is not None:
        tenant = known.tenant  # verified by this process a moment ago, and unchanged since
    else:
        tenant = await _verify(request, svc, api_key, token)
    await svc.rate_limits.check(svc.redis, bucket=f"api-key:{tenant.api_key_id}", rate=svc.settings.rate_limit_api_key,
                                now=svc.clock(), message=RATE_LIMITED)
    request.state.tenant = tenant
    return tenant


async def _verify(request: Request, svc: Services, api_key: str, token: str) -> Tenant:
    """The tenant of credentials checked against the database (past the failed-authentication gate)."""
    generation = svc.credentials.generation
    gate = await authlimit.admit(svc, kind="api-key", address=_address(request), subject=api_key, token=token)
    async with svc.pool.connection() as conn:
        rows = await fetch_all(conn, q.tenant_tokens, {"api_key_id": api_key})
    matched = None
    # Every candidate is checked (no early exit), and an unknown key still costs one check.
    for row in rows or [{"token_hash": None}]:
        if svc.keyring.verify(token, row["token_hash"] or _NO_HASH):
            matched = row
    if matched is None:
        await authlimit.failed(svc, gate)
        raise ApiError("PERMISSION_DENIED", "Invalid API key.")
    await authlimit.succeeded(svc, gate)
    tenant = Tenant(api_key_id=matched["api_key_id"], workspace_id=matched["workspace_id"],
                    token_key_version=matched["token_key_version"])
    svc.credentials.put(api_key, token, tenant, svc.keyring, generation=generation)
    return tenant


async def credentials_changed(svc: Services, *, api_key_id: str) -> None:
    """After the commit of a change to the API key's auth tokens or token keys: every process's cached
    verification of its credentials is stale from now on (see kit/credentials.py)."""
    svc.credentials.drop(api_key_id)
    if svc.redis is None:
        return
    try:
        await svc.redis.publish(CHANGED_CHANNEL, api_key_id)
    except (RedisError, OSError) as exc:
        # Other processes clear their caches when their own link to Redis breaks; entries they made before
        # expire within COLLAB_AUTH_CACHE_TTL_S.
        log.warning("credential change of %s not announced, Redis unreachable: %s", api_key_id, exc)


async def rotate_token_key(conn: Conn, *, api_key_id: str) -> int:
    """Bump the API key's token signing key version; the new version."""
    row = await fetch_row(conn, q.rotate_token_key, {"api_key_id": api_key_id})
    return row["token_key_version"]


async def workspace_auth(
    request: Request, workspace_id: str | None = Depends(_workspace_id), token: str | None = Depends(_workspace_token),
    fallback_token: str | None = Depends(_auth_token), svc: Services = Depends(services)
) -> WorkspaceCaller:
    """Authenticate x-service-workspace-id + x-service-workspace-auth-token (or x-service-auth-token; or Velt's
    names)."""
    workspace_id = _given(request, workspace_id, "x-service-workspace-id")
    token = (_given(request, token, "x-service-workspace-auth-token")
             or _given(request, fallback_token, "x-service-auth-token"))
    if workspace_id is None:
        raise ApiError("INVALID_ARGUMENT", "Missing x-service-workspace-id header.")
    if token is None:
        raise ApiError("INVALID_ARGUMENT", "Missing x-service-workspace-auth-token header.")
    if len(workspace_id) > 200:
        svc.keyring.verify(token, _NO_HASH)  # the same work as an unknown id that was looked up
        raise not_found("workspace")
    gate = await authlimit.admit(svc, kind="workspace", address=_address(request), subject=workspace_id, token=token)
    async with svc.pool.connection() as conn:
        row = await fetch_one(conn, q.workspace_token, {"workspace_id": workspace_id})
    valid = svc.keyring.verify(token, row["auth_token_hash"] if row else _NO_HASH)
    if row is None or not valid:
        await authlimit.failed(svc, gate)
        if row is None:
            raise not_found("workspace")
        raise ApiError("UNAUTHENTICATED", "Invalid auth token for the workspace.")
    await authlimit.succeeded(svc, gate)
    request.state.workspace_id = row["id"]  # the access middleware counts the call for this workspace (kit/usage.py)
    return WorkspaceCaller(workspace_id=row["id"])
