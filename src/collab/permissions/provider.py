"""The permission provider (Velt's real-time permission provider, ADR 0051): the customer's backend says who may reach
an organization, folder or document, and its answer replaces collab's grants wherever access is decided.

collab POSTs `{"data": {"requests": [PermissionQuery]}}` with `Authorization: Bearer <authToken>` and a signature
of the body under that token, and reads `{"data": [PermissionResult], "signature"?}` back. A failure of any kind (no
answer in time, an error status, a body that is not the contract, a signature that does not verify, a query left
unanswered) denies: it fails closed. Decisions are reused for `COLLAB_PERMISSION_PROVIDER_CACHE_S` at most.
"""

import asyncio
import hashlib
import hmac
import json
import logging
from collections import OrderedDict
from typing import Any

import httpx

from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.services import Services
from collab.permissions import repository as repo
from collab.webhooks import safety

log = logging.getLogger(__name__)

MAX_QUERIES = 500  # per request to the provider; more go in further requests
MAX_ANSWER_BYTES = 1024 * 1024
MAX_CACHED = 10_000  # decisions kept per API key (the oldest go first): one tenant's users cannot crowd out another's
FAILED = {"error": "The permission provider did not grant access.", "errorCode": "permission_denied"}
# Decisions reused by this process: API key → (user, type, resource, organization) → (entry, until epoch ms).
_decisions: dict[str, OrderedDict[tuple[str, str, str, str], tuple[dict[str, Any], int]]] = {}

Query = tuple[str, str, str, str]  # (userId, type, resourceId, organizationId)


def forget(api_key_id: str) -> None:
    """Drop an API key's reused decisions (its provider's settings changed)."""
    _decisions.pop(api_key_id, None)


def canonical(results: list[dict[str, Any]]) -> bytes:
    """The bytes a provider's answer is signed over: its results sorted, as compact JSON with sorted keys."""
    ordered = sorted(results, key=lambda r: (str(r.get("userId")), str(r.get("type")), str(r.get("resourceId"))))
    return json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign_results(svc: Services, *, api_key_id: str, results: list[dict[str, Any]]) -> str:
    """The signature of permission results for an API key (what `auth/generate_signature` returns)."""
    return svc.keyring.sign(b"permission-provider\0" + api_key_id.encode() + b"\0" + canonical(results)).hex()


def _signed(svc: Services, api_key_id: str, results: list[dict[str, Any]], signature: Any) -> bool:
    try:
        raw = bytes.fromhex(signature) if isinstance(signature, str) else b""
    except ValueError:
        return False
    return svc.keyring.signed(b"permission-provider\0" + api_key_id.encode() + b"\0" + canonical(results), raw)


def request_signature(token: str, timestamp: int, body: bytes) -> str:
    """`v1=` HMAC-SHA256 of `<timestamp>.<body>` under the provider's auth token (the customer's check of collab)."""
    return "v1=" + hmac.new(token.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def _entry(result: dict[str, Any]) -> dict[str, Any]:
    """A provider's decision as effective access shows it: a role (editor unless it names viewer) or a denial."""
    if result.get("hasAccess") is not True:
        return dict(FAILED)
    role = result.get("accessRole") if result.get("accessRole") in ("viewer", "editor") else "editor"
    entry: dict[str, Any] = {"accessRole": role}
    if isinstance(result.get("expiresAt"), int) and not isinstance(result.get("expiresAt"), bool):
        entry["expiresAt"] = result["expiresAt"] // 1000  # grants' expiresAt are epoch seconds
    return entry


async def _ask(svc: Services, *, tenant: Tenant, url: str, token: str, queries: list[Query],
               parents: dict[str, str | None]) -> dict[Query, dict[str, Any]]:
    """One request to the provider; each query's decision (a query left unanswered is missing)."""
    requests = []
    for user, kind, ident, org in queries:
        resource: dict[str, Any] = {"id": ident, "type": kind, "source": "collab", "organizationId": org}
        if kind == "document" and parents.get(ident):
            resource["parentFolderId"] = parents[ident]
        requests.append({"userId": user, "resource": resource})
    body = json.dumps({"data": {"requests": requests}}, separators=(",", ":")).encode()
    headers = {"content-type": "application/json"}
    if token:
        now_s = svc.now_ms() // 1000
        headers |= {
            "authorization": f"Bearer {token}", "x-collab-timestamp": str(now_s),
            "x-collab-signature": request_signature(token, now_s, body)
        }
    timeout = svc.settings.permission_provider_timeout_s
    target = await safety.pin(url, allow_private=svc.settings.webhooks_allow_private_targets)
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout) as client:
        async with asyncio.timeout(timeout):
            request = client.build_request("POST", target.url, content=body, headers={**headers, **target.headers},
                                           extensions=target.extensions)
            response = await client.send(request, stream=True)
            try:
                raw = b""
                async for chunk in response.aiter_raw():
                    raw += chunk
                    if len(raw) > MAX_ANSWER_BYTES:
                        raise ValueError(f"the answer is over {MAX_ANSWER_BYTES} bytes")
            finally:
                await response.aclose()
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}")
    answer = json.loads(raw)
    results = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError("the answer has no `data` list of results")
    if "signature" in answer and not _signed(svc, tenant.api_key_id, results, answer["signature"]):
        raise ValueError("the answer's signature does not verify")
    asked = set(queries)
    decided: dict[Query, dict[str, Any]] = {}
    for r in results:
        key = (r.get("userId"), r.get("type"), r.get("resourceId"), r.get("organizationId"))
        if key in asked:  # an answer to something not asked is ignored, never trusted
            decided[key] = _entry(r)
    return decided


async def decide(conn: Conn, svc: Services, *, tenant: Tenant, queries: list[Query],
                 parents: dict[str, str | None]) -> dict[Query, dict[str, Any]] | None:
    """Each query's decision by the API key's provider (reused while fresh), or None when it has none enabled."""
    config = await repo.provider_config(conn, api_key_id=tenant.api_key_id)
    if config is None or not config["enabled"] or not config["url"]:
        return None
    now = svc.now_ms()
    cache = _decisions.setdefault(tenant.api_key_id, OrderedDict())
    decided: dict[Query, dict[str, Any]] = {}
    for q in queries:
        held = cache.get(q)
        if held is not None and held[1] > now:
            decided[q] = held[0]
    missing = [q for q in dict.fromkeys(queries) if q not in decided]
    token = ""
    if config["auth_token_enc"] is not None:
        token = svc.keyring.decrypt(config["auth_token_enc"], f"permission-provider:{tenant.api_key_id}")
    keep_ms = int(svc.settings.permission_provider_cache_s * 1000)
    for start in range(0, len(missing), MAX_QUERIES):
        batch = missing[start:start + MAX_QUERIES]
        try:
            answered = await _ask(svc, tenant=tenant, url=config["url"], token=token, queries=batch, parents=parents)
        except (safety.Refused, httpx.HTTPError, OSError, TimeoutError, ValueError) as exc:
            log.warning("permission provider of %s failed: %s", tenant.api_key_id, str(exc)[:300])
            answered = {}  # fail closed: nothing granted, nothing kept (the next decision asks again)
        for q in batch:
            entry = answered.get(q, dict(FAILED))
            if entry.get("expiresAt", now) * 1000 <= now:  # granted until a time already past: not granted
                entry = dict(FAILED)
            decided[q] = entry
            if q in answered:
                until = now + keep_ms
                if "expiresAt" in entry:
                    until = min(until, entry["expiresAt"] * 1000)
                cache[q] = (entry, until)
                cache.move_to_end(q)
    while len(cache) > MAX_CACHED:
        cache.popitem(last=False)
    return decided
