"""Opaque page tokens for keyset pagination."""

import base64
import json
from typing import Any

from collab.kit.errors import invalid, issue


def encode(*key: Any) -> str:
    """A token for the row after which the next page starts."""
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode().rstrip("=")


def decode(token: str, arity: int) -> list[Any]:
    """The key inside a token; INVALID_ARGUMENT for anything this service did not issue."""
    try:
        key = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if isinstance(key, list) and len(key) == arity:
            return key
    except (ValueError, UnicodeDecodeError):
        pass
    message = "Invalid pageToken."
    raise invalid(message, [issue(["pageToken"], message)])


def page(rows: list[dict[str, Any]], size: int, *key_columns: str) -> tuple[list[dict[str, Any]], str | None]:
    """Cut a `size + 1` fetch to one page, with the token of the next page (None on the last)."""
    if len(rows) <= size:
        return rows, None
    rows = rows[:size]
    return rows, encode(*(rows[-1][c] for c in key_columns))
