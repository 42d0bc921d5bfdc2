"""Who may open a room: the user token names the tenant and the user; the permissions model decides the role."""

import re
from dataclasses import dataclass
from typing import Any

import jwt

from collab.crdt import repository as crdt_repo
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import not_found_message
from collab.kit.services import Services
from collab.permissions import service as permissions
from collab.permissions import tokens
from collab.realtime import protocol
from collab.realtime import repository as repo
from collab.workspaces import domains


class Refused(Exception):
    """A connection that may not open (or stay open): its close code and a short reason."""

    def __init__(self, code: int, reason: str):
        super().__init__(reason)
        self.code, self.reason = code, reason


@dataclass(frozen=True)
class User:
    """The verified caller of a socket: their tenant, id, profile and when their token expires (epoch s)."""

    tenant: Tenant
    user_id: str
    name: str | None
    email: str | None
    expires_s: float


def valid_id(value: str) -> bool:
    """An id a socket may name (URL ids, a token's `aud`): 1-200 characters, none of them a control character (NUL
    among them: Postgres text cannot hold it)."""
    return 0 < len(value) <= 200 and _CONTROL.search(value) is None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def audience(token: str | None) -> str:
    """The API key id a token names, unverified (the signature is checked with that key's keys); 4401 when none."""
    if not token or len(token) > 8192:
        raise Refused(protocol.BAD_TOKEN, "A user token (the token query parameter) is required.")
    try:
        api_key_id = jwt.decode(token, options={"verify_signature": False}).get("aud")
    except jwt.InvalidTokenError:
        raise Refused(protocol.BAD_TOKEN, "The token is not a valid user token.") from None
    if not isinstance(api_key_id, str) or not valid_id(api_key_id):
        raise Refused(protocol.BAD_TOKEN, "The token is not a valid user token.")
    return api_key_id


async def authenticate(svc: Services, conn: Conn, token: str | None, origin: str | None = None) -> User:
    """The user a token names, verified with its API key's signing keys (4401 otherwise), from a browser Origin the
    key allows (4403 otherwise: its allowed domains, ADR 0049; no Origin is a server-side client)."""
    api_key_id = audience(token)
    assert token is not None  # audience() refused a missing one
    key = await repo.api_key(conn, api_key_id=api_key_id)
    if key is None:
        raise Refused(protocol.BAD_TOKEN, "The token is not a valid user token.")
    try:
        claims = tokens.verify(svc.keyring, token, api_key_id=api_key_id, version=key["token_key_version"],
                               now_s=svc.clock())
    except jwt.InvalidTokenError as exc:
        expired = isinstance(exc, jwt.ExpiredSignatureError)
        raise Refused(protocol.BAD_TOKEN, "The token has expired." if expired else "The token is not valid.") from None
    # After the token: who has none learns nothing of a key's domains, and the key's row is read once for both.
    if not domains.allows(list(key["allowed_domains"]), origin):
        raise Refused(protocol.NO_ACCESS, domains.REFUSED_ORIGIN)
    user: dict[str, Any] = claims.get("user") or {}
    tenant = Tenant(api_key_id=key["api_key_id"], workspace_id=key["workspace_id"],
                    token_key_version=key["token_key_version"])
    return User(tenant=tenant, user_id=claims["sub"], name=user.get("name"), email=user.get("email"),
                expires_s=claims["exp"])


async def roles(svc: Services, conn: Conn | None, *, tenant: Tenant, organization_id: str, document_ids: list[str],
                user_ids: list[str]) -> dict[str, dict[str, str | Refused]]:
    """Each user's role on each document now (`editor` or `viewer`), or why they have none. The access rows are read
    on `conn`, or on a pooled connection of its own when None; the API key's permission provider, when one decides,
    is asked after that: a caller passes None rather than a connection it holds, so nothing is held while the
    customer's backend answers."""
    answer: dict[str, Any] = {}
    cap = svc.settings.permission_provider_max_decisions
    # Users (and, past the cap, documents) in parts small enough for one call each: a recheck of a large organization
    # is asked in several calls rather than refused.
    part = max(min(len(document_ids), cap - 1), 1)  # documents per call: with the organization, one user fits
    doc_parts = [document_ids[i:i + part] for i in range(0, len(document_ids), part)] or [[]]
    users_per_call = max(cap // (1 + part), 1)
    for i in range(0, len(user_ids), users_per_call):
        users = user_ids[i:i + users_per_call]
        for docs in doc_parts:
            if conn is None:
                async with svc.pool.connection() as own:
                    pending = await permissions.read_access(own, svc, tenant=tenant, organization_id=organization_id,
                                                            user_ids=users, folder_ids=[], document_ids=docs)
            else:
                pending = await permissions.read_access(conn, svc, tenant=tenant, organization_id=organization_id,
                                                        user_ids=users, folder_ids=[], document_ids=docs)
            for user_id, entry in (await permissions.settle(svc, pending)).items():
                held = answer.setdefault(user_id, {"organization": entry["organization"], "documents": {}})
                held["documents"].update(entry["documents"])
    out: dict[str, dict[str, str | Refused]] = {}
    for user_id, entry in answer.items():
        organization = entry["organization"][organization_id]
        out[user_id] = {}
        for document_id in document_ids:
            document = entry["documents"][document_id]
            if organization.get("errorCode") == "does_not_exist":
                # The token's tenant has no such organization: the token belongs to another tenant (or is wrong).
                role: str | Refused = Refused(protocol.BAD_TOKEN,
                                              "This token does not open rooms of this organization.")
            elif document.get("errorCode") == "does_not_exist":
                role = Refused(protocol.UNKNOWN, not_found_message("document"))
            elif "accessRole" not in document:
                role = Refused(protocol.NO_ACCESS, document.get("error") or "No access to this document.")
            else:
                role = document["accessRole"]
            out[user_id][document_id] = role
    return out


async def editor_kind(conn: Conn, *, tenant: Tenant, organization_id: str, document_id: str,
                      editor_id: str) -> dict[str, Any]:
    """The editor's type and content key; 4404 when it has no CRDT document (crdt/add makes one)."""
    kind = await crdt_repo.kind(conn, api_key_id=tenant.api_key_id, organization_id=organization_id,
                                document_id=document_id, editor_id=editor_id)
    if kind is None:
        raise Refused(protocol.UNKNOWN, not_found_message("crdt", "editor"))
    return kind
