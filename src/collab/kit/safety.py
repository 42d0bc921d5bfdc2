"""SSRF guard: a webhook target (and any other URL a tenant gives: a page, an SMTP host, a permission provider, a
model server) must be a public address, checked at registration and again at connect time.

At connect time the host is resolved once, every address is checked, and the request goes to the checked
address itself (Host header and TLS SNI/certificate name keep the URL's host), so a DNS answer that
changes between check and connect (DNS rebinding) cannot reach a private address.
"""

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Any

import httpx

from collab.kit import threads

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# Cloud metadata services (most are private or link-local anyway; named here so none slips through).
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_RESOLVE_TIMEOUT_S = 5.0
# One DNS label after IDNA encoding (letters, digits, `_`, inner `-`), and a last label that the resolver's
# inet_aton would read as a number (`0x7f.1`, `2130706433` are 127.0.0.1 to it).
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_NUMERIC = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_MAX_HOST = 253


class Refused(Exception):
    """A target the service will not connect to."""


@dataclass(frozen=True)
class Parsed:
    """A URL as the sender reads it: httpx's parse, the ASCII host the resolver gets, and the port it connects to."""

    url: httpx.URL
    host: str
    port: int


def parse(url: str) -> Parsed:
    """The URL exactly as the sender will read it; `Refused` with why when it cannot be a webhook target."""
    try:
        parsed = httpx.URL(url)
        raw_host, port = parsed.raw_host.decode("ascii"), parsed.port
        parsed.host  # decodes the IDNA labels, as building the request does: a bad A-label fails here
    except (httpx.InvalidURL, ValueError) as exc:  # IDNA and codec errors are ValueErrors
        raise Refused(f"The URL cannot be parsed ({str(exc)[:200]}).") from None
    if parsed.scheme not in ("http", "https"):
        raise Refused("The URL must use http or https.")
    if parsed.userinfo:
        raise Refused("The URL must not carry credentials (user:password@).")
    if port is not None and not 1 <= port <= 65535:
        raise Refused("The port must be between 1 and 65535.")
    host = raw_host.lower()
    if not host:
        raise Refused("The URL has no host.")
    if "%" in host and ":" in host:
        raise Refused("An IPv6 zone (%) is not allowed in the host.")
    if _literal(host) is None:
        _check_name(host)
    return Parsed(parsed, host, port or (443 if parsed.scheme == "https" else 80))


def _check_name(host: str) -> None:
    name = host[:-1] if host.endswith(".") else host
    try:
        name.encode("idna")  # what socket.getaddrinfo does to a str host: empty or long labels fail there
    except UnicodeError:
        raise Refused("The host is not a valid DNS name (an empty or over-long label).") from None
    labels = name.split(".")
    if len(name) > _MAX_HOST or not all(_LABEL.match(label) for label in labels):
        raise Refused("The host is not a valid DNS name (labels of 1-63 letters, digits, '-' or '_').")
    if _NUMERIC.match(labels[-1]):
        raise Refused("An IPv4 address must be written as four decimal numbers (a.b.c.d).")


def host_name(host: str) -> str:
    """A bare host (an SMTP server's, say) as the resolver gets it: an IP literal (IPv6 with or without brackets) or
    a DNS name (labels of 1-63 letters, digits, '-' or '_', 253 characters in all), in lower case without a final
    dot; `Refused` with why when it is neither."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if "%" in bare:
        raise Refused("An IPv6 zone (%) is not allowed in the host.")
    literal = _literal(bare)
    if literal is not None:
        return str(literal)
    name = bare.lower()
    if not name or any(c in name for c in "[]:/@"):
        raise Refused("The host is not a valid DNS name or IP address.")
    _check_name(name)
    return name[:-1] if name.endswith(".") else name


def refused_address(address: Address) -> bool:
    """Whether an address is private, loopback, link-local, reserved, multicast, unspecified or metadata."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return refused_address(address.ipv4_mapped)  # ::ffff:a.b.c.d is a.b.c.d on the wire
        embedded = address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is None and address.teredo:
            embedded = address.teredo[1]
        if embedded is not None and refused_address(embedded):
            return True
    return (address in METADATA or address.is_private or address.is_loopback or address.is_link_local
            or address.is_reserved or address.is_multicast or address.is_unspecified or not address.is_global)


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def resolve(host: str, port: int) -> list[Address]:
    """Every address the host resolves to (a literal IP is its own answer)."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    async with asyncio.timeout(_RESOLVE_TIMEOUT_S):  # a lookup past it goes on in its thread, of the dns pool only
        infos = await threads.run("dns", socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    # Drop an IPv6 scope (fe80::1%eth0) before parsing; the address is refused either way.
    # An IP family's address is a string (typeshed's sockaddr union also holds AF_PACKET's int).
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def _checked(host: str, addresses: list[Address]) -> None:
    if not addresses:
        raise Refused(f"{host} does not resolve to any address.")
    bad = [a for a in addresses if refused_address(a)]
    if bad:
        raise Refused(f"{host} resolves to a private, loopback, link-local or reserved address ({bad[0]}).")


async def check_registration(url: str, *, allow_private: bool) -> str | None:
    """Why a URL is refused as a webhook target, or None. A name that does not resolve now is checked when sent."""
    try:
        parsed = parse(url)
    except Refused as exc:
        return str(exc)
    if allow_private:
        return None
    host = parsed.host.rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is a loopback name."
    try:
        _checked(host, await resolve(host, parsed.port))
    except Refused as exc:
        return str(exc)
    except (OSError, TimeoutError):
        return None
    return None


@dataclass
class Target:
    """Where to send: the URL to request (its host pinned to a checked address) plus Host and SNI."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)


async def pin(url: str, *, allow_private: bool) -> Target:
    """Resolve, check and pin a target; `Refused` when it is not a public address."""
    checked = parse(url)  # an endpoint stored before registration parsed URLs this way is refused here
    if allow_private:
        return Target(url)  # self-hosting and tests: no check, plain name resolution
    parsed, host, port = checked.url, checked.host, checked.port
    try:
        addresses = await resolve(host, port)
    except (OSError, TimeoutError) as exc:
        raise Refused(f"{host} does not resolve: {exc}") from exc
    _checked(host, addresses)
    target = Target(str(parsed.copy_with(host=str(addresses[0]))), {"Host": parsed.netloc.decode("ascii")})
    if parsed.scheme == "https":
        target.extensions["sni_hostname"] = host  # the certificate is checked against the URL's host
    return target
