"""Opaque, tamper-proof page tokens for keyset pagination, and pages cut by bytes as well as by count.

A token is the key of the last row served plus a MAC over it and its scope (the tenant and the
query, filters and order included when built with `Pager.for_query`), so a client can neither forge a
position nor reuse a token on another tenant, route or query.
"""

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import orjson

from collab.kit.crypto import Keyring
from collab.kit.envelope import dumps
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


def page(rows: list[dict[str, Any]], size: int, *key_columns: str, keyring: Keyring,
         scope: str) -> tuple[list[dict[str, Any]], str | None]:
    """Cut a `size + 1` fetch to one page, with the token of the next page (None on the last)."""
    if len(rows) <= size:
        return rows, None
    rows = rows[:size]
    return rows, encode(*(rows[-1][c] for c in key_columns), keyring=keyring, scope=scope)


def _canonical(value: Any) -> Any:
    # Filters are sets of conditions: a list's order, duplicates and absent (None) keys never change the rows.
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple, set, frozenset)):
        unique = {json.dumps(i, sort_keys=True, default=str): i for i in (_canonical(v) for v in value)}
        return [unique[k] for k in sorted(unique)]
    return value


def query_digest(filters: Mapping[str, Any]) -> str:
    """A stable hash of a query's filters and order (lists compared as sets, None as absent)."""
    text = json.dumps(_canonical(filters), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fit(records: Iterable[Any], budget: int) -> list[bytes]:
    """The JSON of the leading records that fit in `budget` bytes as one array; at least one, so every page moves
    on. Each record is rendered once, and none after the first that does not fit."""
    rendered: list[bytes] = []
    used = 1  # the array's opening bracket
    for record in records:
        blob = dumps(record)
        used += len(blob) + 1  # the comma or closing bracket after it
        if rendered and used > budget:
            break
        rendered.append(blob)
    return rendered


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

    @classmethod
    def for_query(cls, keyring: Keyring, tenant: str, name: str, filters: Mapping[str, Any]) -> "Pager":
        """Tokens valid only for this tenant, query name and these filters (order included): pass every
        request field that changes which rows come or in what order, and not the page size or token."""
        return cls(keyring, f"{tenant}:{name}:{query_digest(filters)}")

    def cut(self, rows: list[dict[str, Any]], size: int, *key_columns: str, render: Callable[[dict[str, Any]], Any],
            budget: int) -> tuple[list[Any], str | None]:
        """Records of a `size + 1` fetch, cut at `size` records or `budget` bytes of JSON (at least one), and the
        next page's token. A query that leaves rows out itself (by a size estimate) says in each row's `fetched`
        how many rows it found by key. Records come rendered (orjson fragments), so a response writes each once."""
        found = rows[0].get("fetched", len(rows)) if rows else 0
        records = [orjson.Fragment(blob) for blob in fit((render(row) for row in rows[:size]), budget)]
        if len(records) >= found:
            return records, None
        last = rows[len(records) - 1]
        return records, encode(*(last[c] for c in key_columns), keyring=self.keyring, scope=self.scope)
