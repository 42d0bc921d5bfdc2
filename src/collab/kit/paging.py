"""Opaque, tamper-proof page tokens for keyset pagination.

A token is the key of the last row served plus a MAC over it and its scope (the tenant and the
query), so a client can neither forge a position nor reuse a token on another tenant or route.
"""

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from collab.kit.crypto import Keyring
from collab.kit.errors import invalid, issue


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(*key: Any, keyring: Keyring, scope: str) -> str:
    """A token for the row after which the next page starts."""
    body = json.dumps(key, separators=(",", ":")).encode()
    return _b64(body) + "." + _b64(keyring.sign(scope.encode() + b"\n" + body))


def decode(token: str, arity: int, *, keyring: Keyring, scope: str) -> list[Any]:
    """The key inside a token; INVALID_ARGUMENT for anything this service did not issue for this scope."""
    try:
        body_text, _, mac_text = token.partition(".")
        body, mac = _unb64(body_text), _unb64(mac_text)
        if keyring.signed(scope.encode() + b"\n" + body, mac):
            key = json.loads(body)
            if isinstance(key, list) and len(key) == arity:
                return key
    except (ValueError, UnicodeDecodeError, binascii.Error):
        pass
    message = "Invalid pageToken."
    raise invalid(message, [issue(["pageToken"], message)])


def page(
    rows: list[dict[str, Any]], size: int, *key_columns: str, keyring: Keyring, scope: str
) -> tuple[list[dict[str, Any]], str | None]:
    """Cut a `size + 1` fetch to one page, with the token of the next page (None on the last)."""
    if len(rows) <= size:
        return rows, None
    rows = rows[:size]
    return rows, encode(*(rows[-1][c] for c in key_columns), keyring=keyring, scope=scope)


@dataclass(frozen=True)
class Pager:
    """Page tokens of one query for one tenant (the scope), signed with the service's keyring."""

    keyring: Keyring
    scope: str

    def after(self, token: str | None, arity: int) -> list[Any]:
        """The key a page starts after: all None for the first page."""
        return decode(token, arity, keyring=self.keyring, scope=self.scope) if token else [None] * arity

    def page(self, rows: list[dict[str, Any]], size: int, *key_columns: str) -> tuple[list[dict[str, Any]], str | None]:
        """One page of a `size + 1` fetch and the next page's token."""
        return page(rows, size, *key_columns, keyring=self.keyring, scope=self.scope)
