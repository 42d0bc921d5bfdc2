"""Console sessions: sign-in with the workspace credentials, a server-side session in Redis, CSRF on every form.

A session is a JSON record under `collab:console:session:{id}` (a random 32-byte id in an HttpOnly,
SameSite=Strict cookie). It lives while it is used (idle expiry, sliding), at most `console_session_max_s` after
sign-in, and while the workspace's auth token is the one it was opened with: a token reset ends every session of the
workspace.
"""

import base64
import hashlib
import hmac
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

from fastapi import Depends, Request
from redis.exceptions import RedisError
from starlette.datastructures import FormData

from collab.kit.auth import Tenant, WorkspaceCaller, workspace_auth
from collab.kit.crypto import DecryptError
from collab.kit.db import Queries, fetch_one
from collab.kit.errors import ApiError, not_found
from collab.kit.services import Services, services
from collab.workspaces import domains
from collab.workspaces import service as workspaces

log = logging.getLogger("collab.console")
q = Queries.beside(__file__)
COOKIE = "collab_console"
PATH = "/console"
_PREFIX = "collab:console:session:"
_REVEAL_AAD = "console-reveal:"


class SignInRequired(Exception):
    """No valid session: a GET goes to the sign-in page, anything else gets a 401 page."""


class CsrfRefused(Exception):
    """A change posted without this session's CSRF token: a 403 page, nothing changed."""


@dataclass
class Console:
    """One signed-in request: the workspace, its session, the session's CSRF token and the services."""

    workspace_id: str
    session_id: str
    csrf: str
    svc: Services
    flash: list[str] = field(default_factory=list)  # messages left by the previous request (shown once)
    revealed: dict | None = None  # a secret left by the previous request: {what, token}, shown once
    data: dict[str, Any] = field(default_factory=dict, repr=False)
    # A browser Origin other than this console's own (an embedding page): it must be an allowed domain of every
    # API key the request acts on (ADR 0049). None for the console itself and clients that send no Origin.
    foreign_origin: str | None = None

    @property
    def caller(self) -> WorkspaceCaller:
        return WorkspaceCaller(workspace_id=self.workspace_id)

    async def tenant(self, api_key_id: str) -> Tenant:
        """The tenant of one API key of this workspace; NOT_FOUND for any other id."""
        if not api_key_id or len(api_key_id) > 200:
            raise not_found("api_key")
        async with self.svc.pool.connection() as conn:
            params = {"api_key_id": api_key_id, "workspace_id": self.workspace_id}
            row = await fetch_one(conn, q.key_of_workspace, params)
        if row is None:
            raise not_found("api_key")
        if not domains.allows(list(row["allowed_domains"]), self.foreign_origin):
            raise ApiError("PERMISSION_DENIED", domains.REFUSED_ORIGIN)
        return Tenant(api_key_id=row["id"], workspace_id=row["workspace_id"],
                      token_key_version=row["token_key_version"])

    async def api_keys(self) -> list[dict]:
        """The workspace's API keys (id, apiKeyName, type), oldest first."""
        return await workspaces.list_api_keys(self.svc, caller=self.caller)


def _key(session_id: str) -> str:
    return _PREFIX + session_id


def _fingerprint(token_hash: bytes | None) -> str:
    # Not the hash itself: Redis never holds anything the token could be checked against.
    return hashlib.sha256(bytes(token_hash or b"")).hexdigest()[:32]


async def _token_fingerprint(svc: Services, workspace_id: str) -> str | None:
    async with svc.pool.connection() as conn:
        row = await fetch_one(conn, q.workspace_token_hash, {"workspace_id": workspace_id})
    return None if row is None else _fingerprint(row["auth_token_hash"])


async def _save(svc: Services, session_id: str, data: dict[str, Any]) -> None:
    # Redis drops a session a little after the idle limit or its lifetime even if nobody asks again (the clock
    # check decides).
    left = svc.settings.console_session_max_s - (svc.clock() - data["born"])
    ttl = int(max(1, min(svc.settings.console_idle_timeout_s, left))) + 60
    try:
        if svc.redis is None:
            raise RedisError("no Redis configured")
        await svc.redis.set(_key(session_id), json.dumps(data), ex=ttl)
    except (RedisError, OSError) as exc:
        log.warning("console session not saved, Redis unreachable: %s", exc)
        raise ApiError("UNAVAILABLE", "The session store is unavailable; retry later.") from None


async def sign_in(request: Request, svc: Services, *, workspace_id: str, token: str) -> str:
    """Check the workspace credentials exactly as workspace auth does (with its failure limits); the new session id."""
    caller = await workspace_auth(request, workspace_id=workspace_id, token=token, fallback_token=None, svc=svc)
    fingerprint = await _token_fingerprint(svc, caller.workspace_id)
    session_id = secrets.token_urlsafe(32)
    data: dict[str, Any] = {
        "ws": caller.workspace_id, "csrf": secrets.token_urlsafe(32), "ver": fingerprint, "seen": svc.clock(),
        "born": svc.clock(), "flash": []
    }
    await _save(svc, session_id, data)
    return session_id


async def sign_out(svc: Services, session_id: str) -> None:
    """End the session now."""
    try:
        if svc.redis is None:
            raise RedisError("no Redis configured")
        await svc.redis.delete(_key(session_id))
    except (RedisError, OSError) as exc:
        log.warning("console session not deleted, Redis unreachable: %s", exc)
        raise ApiError("UNAVAILABLE", "The session store is unavailable; retry later.") from None


async def load(request: Request, svc: Services) -> Console | None:
    """The request's live session (touched: idle expiry slides), or None."""
    session_id = request.cookies.get(COOKIE) or ""
    if not session_id or len(session_id) > 100 or svc.redis is None:
        return None
    try:
        raw = await svc.redis.get(_key(session_id))
    except (RedisError, OSError) as exc:
        log.warning("console session not read, Redis unreachable: %s", exc)
        raise ApiError("UNAVAILABLE", "The session store is unavailable; retry later.") from None
    if raw is None:
        return None
    data = json.loads(raw)
    now = svc.clock()
    # A session from before lifetimes were recorded has none: it ends, and its user signs in again.
    if (now - data["seen"] > svc.settings.console_idle_timeout_s
            or now - data.get("born", float("-inf")) > svc.settings.console_session_max_s):
        await sign_out(svc, session_id)
        return None
    if await _token_fingerprint(svc, data["ws"]) != data["ver"]:
        await sign_out(svc, session_id)  # the workspace token was reset (or the workspace is gone)
        return None
    flash, data["flash"], data["seen"] = data.get("flash", []), [], now
    sealed = data.pop("reveal", None)
    await _save(svc, session_id, data)
    revealed = None
    if sealed is not None:
        try:
            token = svc.keyring.decrypt(base64.b64decode(sealed["sealed"]), _REVEAL_AAD + session_id)
            revealed = {"what": sealed["what"], "token": token}
        except DecryptError:  # the service's secret changed meanwhile: the token cannot be shown; reset it again
            log.warning("a console secret to show once could not be opened")
    return Console(workspace_id=data["ws"], session_id=session_id, csrf=data["csrf"], svc=svc, flash=flash,
                   revealed=revealed, data=data)


def _own_origin(request: Request, svc: Services, origin: str) -> bool:
    """Whether an Origin is this console's (https read as http behind an untrusted TLS proxy in production)."""
    scheme, _, netloc = origin.rstrip("/").partition("://")
    same_scheme = scheme == request.url.scheme or (scheme == "https" and svc.settings.env == "production")
    return same_scheme and netloc == request.url.netloc


async def signed_in(request: Request, svc: Services = Depends(services)) -> Console:
    """FastAPI dependency: the signed-in Console; SignInRequired (redirect or 401 page) without a live session."""
    console = await load(request, svc)
    if console is None:
        raise SignInRequired()
    origin = request.headers.get("origin")
    if origin is not None and not _own_origin(request, svc, origin):
        console.foreign_origin = origin
    request.state.console = console
    return console


Signed = Depends(signed_in)


async def flash(console: Console, message: str) -> None:
    """Leave a message for the next page this session sees (after a redirect)."""
    console.data.setdefault("flash", []).append(message)
    await _save(console.svc, console.session_id, console.data)


async def reveal(console: Console, *, what: str, token: str) -> None:
    """Show a new secret once, on the next page this session sees (sealed while it waits in Redis)."""
    sealed = console.svc.keyring.encrypt(token, _REVEAL_AAD + console.session_id)
    console.data["reveal"] = {"what": what, "sealed": base64.b64encode(sealed).decode()}
    await _save(console.svc, console.session_id, console.data)


async def checked_form(request: Request, console: Console) -> FormData:
    """The posted form (urlencoded or multipart); CsrfRefused unless it carries this session's CSRF token."""
    form = await request.form()
    sent = form.get("csrf") or request.headers.get("x-csrf-token") or ""
    if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), console.csrf.encode()):
        raise CsrfRefused()
    return form
