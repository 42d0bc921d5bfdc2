"""An API key's allowed domains (Velt's `workspace/domains/*`): stored bare, and checked against browser origins on
realtime sockets and console pages (ADR 0049)."""

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.workspaces import repository as repo

MAX_PER_REQUEST = 100  # Velt's documented cap per add or delete
MAX_PER_KEY = 1000
MAX_RAW_CHARS = 2000  # a full URL may be sent; only its host is kept
LOCALHOST = ("localhost", "127.0.0.1")  # what addLocalHostToAllowedDomains adds
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_PORT = re.compile(r":\d{0,5}$")
REFUSED_ORIGIN = "This origin is not an allowed domain of the API key (workspace/domains/add)."


def normalise(raw: str) -> str:
    """The bare domain Velt stores for an entry: scheme, `www.`, port and path dropped, lower case, IDN as
    punycode; `*.` only as a whole leading label of a name of two labels or more. ValueError with why otherwise."""
    value = raw.strip().lower()
    if not value or len(value) > MAX_RAW_CHARS or any(c.isspace() or ord(c) < 32 or c == "\x7f" for c in value):
        raise ValueError("Must be a domain or URL without spaces or control characters")
    if "://" in value:
        scheme, value = value.split("://", 1)
        if scheme not in ("http", "https", "ws", "wss"):
            raise ValueError("A URL must use http(s) or ws(s)")
    value = re.split(r"[/?#]", value, maxsplit=1)[0]
    if "@" in value:
        raise ValueError("Must not carry credentials (user@)")
    if value.startswith("["):  # an IPv6 literal, with or without a port after it
        host, _, rest = value[1:].partition("]")
        if rest and not _PORT.fullmatch(rest):
            raise ValueError("Not a valid IPv6 address")
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise ValueError("Not a valid IPv6 address") from None
    value = _strip_www(_PORT.sub("", value).rstrip("."))
    wildcard = value.startswith("*.")
    name = value[2:] if wildcard else value
    try:
        return ("*." if wildcard else "") + _host(name, wildcard=wildcard)
    except UnicodeError:
        raise ValueError("Not a valid domain name") from None


def _host(name: str, *, wildcard: bool) -> str:
    try:
        address = ipaddress.IPv4Address(name)
    except ValueError:
        address = None
    if address is not None:
        if wildcard:
            raise ValueError("A wildcard needs a domain name, not an IP address")
        return str(address)
    name = name.encode("idna").decode("ascii")  # UnicodeError for empty or over-long labels
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.match(label) for label in labels):
        raise ValueError("Not a valid domain name (labels of 1-63 letters, digits or inner '-')")
    if wildcard and len(labels) < 2:
        raise ValueError("A wildcard must name a domain of two labels or more (*.example.com, not *.com)")
    return name


def _strip_www(host: str) -> str:
    """`www.example.com` is example.com; `www.com` stays itself (a name needs two labels left)."""
    rest = host.removeprefix("www.")
    return rest if "." in rest else host


def origin_host(origin: str, *, keep_www: bool = False) -> str | None:
    """The host of a browser Origin header (`https://app.example.com:8443`), or None for `null` or garbage; `www.`
    dropped as stored domains drop it, unless `keep_www`."""
    try:
        parts = urlsplit(origin.strip())
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    host = host.rstrip(".") if keep_www else _strip_www(host.rstrip("."))
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def allows(domains: list[str], origin: str | None) -> bool:
    """Whether a key with these allowed domains accepts a request presenting this Origin. No list allows every
    origin; no Origin header (a server-side client: browsers always send one) is allowed; `null` never matches."""
    if not domains or origin is None:
        return True
    host, full = origin_host(origin), origin_host(origin, keep_www=True)
    if host is None or full is None:
        return False
    # `*.example.com` takes every subdomain at any depth (www. included), not example.com itself (list that too).
    return any(host == d or (d.startswith("*.") and full.endswith(d[1:])) for d in domains)


async def _domains(conn: Conn, *, api_key_id: str) -> list[str]:
    return list((await repo.allowed_domains(conn, api_key_id=api_key_id)) or [])


async def get(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The key's allowed domains, in the order they were added."""
    async with svc.pool.connection() as conn:
        return {"allowedDomains": await _domains(conn, api_key_id=tenant.api_key_id)}


async def add(svc: Services, *, tenant: Tenant, domains: list[str]) -> dict[str, Any]:
    """Add the (normalised) domains; those already listed are skipped and named."""
    async with transaction(svc.pool, svc.redis) as tx:
        stored = list(await repo.allowed_domains(tx.conn, api_key_id=tenant.api_key_id, for_update=True) or [])
        added = [d for d in dict.fromkeys(domains) if d not in stored]
        skipped = [d for d in dict.fromkeys(domains) if d in stored]
        if len(stored) + len(added) > MAX_PER_KEY:
            raise ApiError("RESOURCE_EXHAUSTED", f"An API key holds at most {MAX_PER_KEY} allowed domains.")
        await repo.set_allowed_domains(tx.conn, api_key_id=tenant.api_key_id, domains=stored + added)
    return {"domainsAdded": added, **({"skippedDomains": skipped} if skipped else {})}


async def delete(svc: Services, *, tenant: Tenant, domains: list[str]) -> dict[str, Any]:
    """Remove the (normalised) domains; those not listed are skipped and named."""
    wanted = list(dict.fromkeys(domains))
    async with transaction(svc.pool, svc.redis) as tx:
        stored = list(await repo.allowed_domains(tx.conn, api_key_id=tenant.api_key_id, for_update=True) or [])
        removed, skipped = [d for d in wanted if d in stored], [d for d in wanted if d not in stored]
        await repo.set_allowed_domains(tx.conn, api_key_id=tenant.api_key_id,
                                       domains=[d for d in stored if d not in removed])
    return {"domainsRemoved": removed, **({"skippedDomains": skipped} if skipped else {})}
