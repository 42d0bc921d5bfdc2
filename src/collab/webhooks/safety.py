"""SSRF guard: a webhook target must be a public address, checked at registration and again at connect time.

At connect time the host is resolved once, every address is checked, and the request goes to the checked
address itself (Host header and TLS SNI/certificate name keep the URL's host), so a DNS answer that
changes between check and connect (DNS rebinding) cannot reach a private address.
"""

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Any

import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# Cloud metadata services (most are private or link-local anyway; named here so none slips through).
METADATA = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "192.0.0.192", "fd00:ec2::254",
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_RESOLVE_TIMEOUT_S = 5.0


class Refused(Exception):
    """A target the service will not connect to."""


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
    return (
        address in METADATA or address.is_private or address.is_loopback or address.is_link_local
        or address.is_reserved or address.is_multicast or address.is_unspecified or not address.is_global
    )


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
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(_RESOLVE_TIMEOUT_S):
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # Drop an IPv6 scope (fe80::1%eth0) before parsing; the address is refused either way.
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


def _checked(host: str, addresses: list[Address]) -> None:
    if not addresses:
        raise Refused(f"{host} does not resolve to any address.")
    bad = [a for a in addresses if refused_address(a)]
    if bad:
        raise Refused(f"{host} resolves to a private, loopback, link-local or reserved address ({bad[0]}).")


async def check_registration(url: str, *, allow_private: bool) -> str | None:
    """Why a URL is refused as a webhook target, or None. A name that does not resolve now is checked when sent."""
    if allow_private:
        return None
    parsed = httpx.URL(url)
    host = parsed.host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is a loopback name."
    try:
        _checked(host, await resolve(host, parsed.port or (443 if parsed.scheme == "https" else 80)))
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
    if allow_private:
        return Target(url)  # self-hosting and tests: no check, plain name resolution
    parsed = httpx.URL(url)
    host = parsed.host
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        addresses = await resolve(host, port)
    except (OSError, TimeoutError) as exc:
        raise Refused(f"{host} does not resolve: {exc}") from exc
    _checked(host, addresses)
    target = Target(str(parsed.copy_with(host=str(addresses[0]))), {"Host": parsed.netloc.decode("ascii")})
    if parsed.scheme == "https":
        target.extensions["sni_hostname"] = host  # the certificate is checked against the URL's host
    return target
