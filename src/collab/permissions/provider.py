"""The permission provider (Velt's real-time permission provider, ADR 0051): the customer's backend says who may reach
an organization, folder or document, and its answer replaces collab's grants wherever access is decided.

collab POSTs `{"data": {"requests": [PermissionQuery]}}` with `Authorization: Bearer <authToken>` and a signature
of the body under that token, and reads `{"data": [PermissionResult], "signature"?}` back. A failure of any kind (no
answer in time, an error status, a body that is not the contract, a signature that does not verify or is missing
where one is required, a query left unanswered) denies: it fails closed. Decisions are reused for
`COLLAB_PERMISSION_PROVIDER_CACHE_S` at most.

Bounds (ADR 0051, "Bounds"): nobody waits on a provider with a database connection held (callers read, release, then
ask); one call waits `COLLAB_PERMISSION_PROVIDER_TIMEOUT_S` in all (name resolution, a free slot and every request of
it); at most `COLLAB_PERMISSION_PROVIDER_IN_FLIGHT` requests per API key are in flight in a process; a provider that
failed is not asked again for `COLLAB_PERMISSION_PROVIDER_FAILURE_S`.
"""

import asyncio
import hashlib
import hmac
import json
import logging
import ssl
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from collab.kit import safety
from collab.kit.auth import Tenant
from collab.kit.services import Services

log = logging.getLogger(__name__)

MAX_QUERIES = 500  # per request to the provider; more go in further requests, each in the call's one time budget
MAX_ANSWER_BYTES = 1024 * 1024
MAX_CACHED = 10_000  # decisions kept per API key (the oldest go first): one tenant's users cannot crowd out another's
FAILED = {"error": "The permission provider did not grant access.", "errorCode": "permission_denied"}
_ROLES = ("viewer", "editor")
_KINDS = ("organization", "folder", "document")

Query = tuple[str, str, str, str]  # (userId, type, resourceId, organizationId)

# Decisions reused by this process: API key → (user, type, resource, organization) → (entry, until epoch ms).
_decisions: dict[str, OrderedDict[Query, tuple[dict[str, Any], int]]] = {}
# API keys whose provider failed, until when (epoch ms, the service's clock): not asked again before then.
_failing: dict[str, int] = {}
# Requests in flight per API key in this process: [holders and waiters, the semaphore]; dropped when none is left.
_slots: dict[str, list[Any]] = {}

_tls: list[ssl.SSLContext] = []  # one verifying context for every request of the process, made once off the loop
_tls_made = asyncio.Lock()


async def _tls_context() -> ssl.SSLContext:
    """The certificate store loaded once, in a thread (a client made with its own loads it on the loop, ~0.3 s)."""
    async with _tls_made:
        if not _tls:
            _tls.append(await asyncio.to_thread(httpx.create_ssl_context, trust_env=False))
    return _tls[0]


@dataclass(frozen=True)
class Config:
    """An API key's enabled provider, as `decide` needs it."""

    url: str
    token: str
    require_signature: bool


def config_of(svc: Services, api_key_id: str, row: dict[str, Any] | None) -> Config | None:
    """The provider settings row (repository.provider_config) as a Config; None when no provider decides."""
    if row is None or not row["enabled"] or not row["url"]:
        return None
    token = ""
    if row["auth_token_enc"] is not None:
        token = svc.keyring.decrypt(row["auth_token_enc"], f"permission-provider:{api_key_id}")
    return Config(url=row["url"], token=token, require_signature=requires_signature(row))


def requires_signature(row: dict[str, Any] | None) -> bool:
    """Whether an answer must carry collab's signature: as set, else whenever an auth token is configured."""
    if row is None:
        return False
    if row.get("require_signature") is not None:
        return bool(row["require_signature"])
    return row["auth_token_enc"] is not None


def forget(api_key_id: str) -> None:
    """Drop an API key's reused decisions and its failure mark (its provider's settings changed)."""
    _decisions.pop(api_key_id, None)
    _failing.pop(api_key_id, None)


def canonical(results: list[dict[str, Any]]) -> bytes:
    """The bytes a provider's answer is signed over: its results sorted, as compact JSON with sorted keys."""
    ordered = sorted(results, key=lambda r: (str(r.get("userId")), str(r.get("type")), str(r.get("resourceId"))))
    return json.dumps(ordered, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _signed_bytes(api_key_id: str, payload: bytes) -> bytes:
    return b"permission-provider\0" + api_key_id.encode() + b"\0" + payload


def sign_results(svc: Services, *, api_key_id: str, results: list[dict[str, Any]]) -> str:
    """The signature of permission results for an API key (what `auth/generate_signature` returns)."""
    return svc.keyring.sign(_signed_bytes(api_key_id, canonical(results))).hex()


def request_signature(token: str, timestamp: int, body: bytes) -> str:
    """`v1=` HMAC-SHA256 of `<timestamp>.<body>` under the provider's auth token (the customer's check of collab)."""
    return "v1=" + hmac.new(token.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


class NotTheContract(ValueError):
    """A provider's answer that is not `{data: [PermissionResult], signature?}`."""


@dataclass(frozen=True)
class Answer:
    """A provider's answer that has the contract's shape: its results, its signature and the bytes it signs."""

    results: list[dict[str, Any]]
    signature: str | None
    signed: bytes


def _result(r: Any) -> dict[str, Any]:
    """One PermissionResult, checked field by field; NotTheContract names what is wrong."""
    if not isinstance(r, dict):
        raise NotTheContract("a result is not an object")
    for name in ("userId", "type", "resourceId", "organizationId"):
        if not isinstance(r.get(name), str):
            raise NotTheContract(f"a result's {name} is not a string")
    if not isinstance(r.get("hasAccess"), bool):
        raise NotTheContract("a result's hasAccess is not true or false")
    if r.get("accessRole") is not None and r["accessRole"] not in _ROLES:
        raise NotTheContract("a result's accessRole is neither viewer nor editor")
    expires = r.get("expiresAt")
    if expires is not None and (not isinstance(expires, int) or isinstance(expires, bool) or expires < 0):
        raise NotTheContract("a result's expiresAt is not a time in epoch milliseconds")
    return r


def parse_answer(raw: bytes) -> Answer:
    """The answer's results in the contract's shape (run off the event loop: the body is the customer's, up to 1 MiB,
    and nesting deep enough to exhaust the parser is its failure, not ours)."""
    try:
        answer = json.loads(raw)
        if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
            raise NotTheContract("the answer has no `data` list of results")
        results = [_result(r) for r in answer["data"]]
        signature = answer.get("signature")
        if signature is not None and not isinstance(signature, str):
            raise NotTheContract("the answer's signature is not a string")
        return Answer(results=results, signature=signature, signed=canonical(results))
    except RecursionError:
        raise NotTheContract("the answer is nested too deeply") from None
    except NotTheContract:
        raise
    except (ValueError, TypeError) as exc:  # not JSON, not UTF-8, an integer beyond Python's digits limit
        raise NotTheContract(f"the answer is not JSON: {str(exc)[:100]}") from None


def _verifies(svc: Services, api_key_id: str, answer: Answer) -> bool:
    try:
        raw = bytes.fromhex(answer.signature or "")
    except ValueError:
        return False
    return svc.keyring.signed(_signed_bytes(api_key_id, answer.signed), raw)


def _entry(result: dict[str, Any]) -> dict[str, Any]:
    """A provider's decision as effective access shows it: a role (editor unless it names viewer) or a denial."""
    if result["hasAccess"] is not True:
        return dict(FAILED)
    entry: dict[str, Any] = {"accessRole": result.get("accessRole") or "editor"}
    if result.get("expiresAt") is not None:
        entry["expiresAt"] = result["expiresAt"] // 1000  # grants' expiresAt are epoch seconds
    return entry


@asynccontextmanager
async def _slot(api_key_id: str, limit: int) -> AsyncIterator[None]:
    """One of the API key's requests in flight in this process (waits for one, within the caller's budget)."""
    held = _slots.setdefault(api_key_id, [0, asyncio.Semaphore(limit)])
    held[0] += 1
    try:
        async with held[1]:
            yield
    finally:
        held[0] -= 1
        if held[0] == 0 and _slots.get(api_key_id) is held:
            del _slots[api_key_id]


async def _ask(svc: Services, *, tenant: Tenant, config: Config, queries: list[Query],
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
    if config.token:
        now_s = svc.now_ms() // 1000
        headers |= {
            "authorization": f"Bearer {config.token}", "x-collab-timestamp": str(now_s),
            "x-collab-signature": request_signature(config.token, now_s, body)
        }
    # The caller's deadline bounds everything here, name resolution included; httpx's own timeout is a backstop.
    target = await safety.pin(config.url, allow_private=svc.settings.webhooks_allow_private_targets)
    timeout = svc.settings.permission_provider_timeout_s
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout, verify=await
                                 _tls_context()) as client:
        request = client.build_request("POST", target.url, content=body, headers={**headers, **target.headers},
                                       extensions=target.extensions)
        response = await client.send(request, stream=True)
        try:
            if response.status_code != 200:
                raise NotTheContract(f"HTTP {response.status_code}")
            chunks, size = [], 0
            async for chunk in response.aiter_raw():
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise NotTheContract(f"the answer is over {MAX_ANSWER_BYTES} bytes")
        finally:
            await response.aclose()
    answer = await asyncio.to_thread(parse_answer, b"".join(chunks))
    if answer.signature is None and config.require_signature:
        raise NotTheContract("the answer is not signed, and this API key requires signed answers")
    if answer.signature is not None and not _verifies(svc, tenant.api_key_id, answer):
        raise NotTheContract("the answer's signature does not verify")
    asked = set(queries)
    decided: dict[Query, dict[str, Any]] = {}
    for r in answer.results:
        key = (r["userId"], r["type"], r["resourceId"], r["organizationId"])
        if key in asked:  # an answer to something not asked is ignored, never trusted
            decided[key] = _entry(r)
    return decided


# Everything a provider's request can fail with; each denies (a programming error still surfaces as one).
_FAILURES = (safety.Refused, httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, OSError, TimeoutError, ValueError)


async def _batch(svc: Services, *, tenant: Tenant, config: Config, queries: list[Query], parents: dict[str, str | None],
                 deadline: float) -> dict[Query, dict[str, Any]]:
    """One batch's decisions, asked within the call's deadline; nothing (all denied) on any failure."""
    key = tenant.api_key_id
    asking = False
    try:
        async with asyncio.timeout_at(deadline):
            async with _slot(key, svc.settings.permission_provider_in_flight):
                if failing(svc, api_key_id=key):
                    return {}  # it failed moments ago (maybe while this call waited for a slot): not asked again
                asking = True
                return await _ask(svc, tenant=tenant, config=config, queries=queries, parents=parents)
    except _FAILURES as exc:
        if not asking:
            log.warning("permission provider of %s: no free request slot within the call's time budget", key)
            return {}
        reason = "no answer within the call's time budget" if isinstance(exc, TimeoutError) else str(exc)[:300]
        log.warning("permission provider of %s failed (not asked again for %ss): %s", key,
                    svc.settings.permission_provider_failure_s, reason)
        _failing[key] = svc.now_ms() + int(svc.settings.permission_provider_failure_s * 1000)
        return {}


def budget(svc: Services) -> float:
    """The deadline (event-loop time) of one call's whole wait on a provider, starting now."""
    return asyncio.get_running_loop().time() + svc.settings.permission_provider_timeout_s


def cached(svc: Services, *, api_key_id: str, queries: list[Query]) -> dict[Query, dict[str, Any]]:
    """The decisions this process may still reuse among `queries`."""
    now = svc.now_ms()
    cache = _decisions.get(api_key_id) or OrderedDict()
    decided: dict[Query, dict[str, Any]] = {}
    for q in queries:
        held = cache.get(q)
        if held is not None and held[1] > now:
            decided[q] = held[0]
    return decided


def failing(svc: Services, *, api_key_id: str) -> bool:
    """Whether the API key's provider failed within `COLLAB_PERMISSION_PROVIDER_FAILURE_S` (it is not asked now)."""
    if _failing.get(api_key_id, 0) > svc.now_ms():
        return True
    _failing.pop(api_key_id, None)
    return False


async def decide(svc: Services, *, tenant: Tenant, config: Config, queries: list[Query], parents: dict[str, str | None],
                 deadline: float | None = None) -> dict[Query, dict[str, Any]]:
    """Each query's decision by the API key's provider (reused while fresh); asked with no connection held, in
    batches that share one time budget (`deadline`, else one starting now)."""
    now = svc.now_ms()
    decided = cached(svc, api_key_id=tenant.api_key_id, queries=queries)
    missing = [q for q in dict.fromkeys(queries) if q not in decided]
    if not missing:
        return decided
    answered: dict[Query, dict[str, Any]] = {}
    if not failing(svc, api_key_id=tenant.api_key_id):
        until = budget(svc) if deadline is None else deadline
        batches = [missing[start:start + MAX_QUERIES] for start in range(0, len(missing), MAX_QUERIES)]
        for part in await asyncio.gather(
                *(_batch(svc, tenant=tenant, config=config, queries=batch, parents=parents, deadline=until)
                  for batch in batches)):
            answered |= part
    cache: OrderedDict[Query, tuple[dict[str, Any], int]] = _decisions.setdefault(tenant.api_key_id, OrderedDict())
    keep_ms = int(svc.settings.permission_provider_cache_s * 1000)
    for q in missing:
        entry = answered.get(q, dict(FAILED))
        if entry.get("expiresAt", now) * 1000 <= now:  # granted until a time already past: not granted
            entry = dict(FAILED)
        decided[q] = entry
        if q in answered:  # only answers are kept; a failure is remembered per key, above
            kept = now + keep_ms
            if "expiresAt" in entry:
                kept = min(kept, entry["expiresAt"] * 1000)
            cache[q] = (entry, kept)
            cache.move_to_end(q)
    while len(cache) > MAX_CACHED:
        cache.popitem(last=False)
    return decided
