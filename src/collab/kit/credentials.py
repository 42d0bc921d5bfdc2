"""API-key credentials this process verified a moment ago, and how their changes reach every process."""

from dataclasses import dataclass
from time import monotonic
from typing import Any

# Where a change to an API key's credentials is announced: the message is the API key id.
CHANGED_CHANNEL = "collab:auth:changed"


@dataclass(frozen=True)
class _Verified:
    tenant: Any  # kit.auth.Tenant
    expires: float
    keyring: object  # the keyring that verified them: a process whose secret changed verifies again


class CredentialCache:
    """API-key credentials this process verified a moment ago, so that a request that presents them again costs
    no database round trip, no MAC and no Redis call.

    Entries are used only while this process is subscribed to CHANGED_CHANNEL (`live`): every process announces
    a token reset or key rotation there after its commit, and each listener drops the key's entries as the
    message arrives (kit/listener.py), before a request that came after it runs. A link lost or a Redis that
    stops answering clears the cache until subscribed again; `ttl_s` bounds an entry whose change announcement
    was lost (Redis unreachable at that moment).
    """

    def __init__(self, *, ttl_s: float, max_entries: int = 10_000):
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.live = False
        self.generation = 0  # bumped by every drop: a verification that began before one is not remembered
        self._keys: dict[str, dict[str, _Verified]] = {}  # api key id → token → entry
        self._count = 0

    def get(self, api_key: str, token: str, keyring: object) -> _Verified | None:
        entry = self._keys.get(api_key, {}).get(token) if self.live else None
        if entry is None or entry.expires <= monotonic() or entry.keyring is not keyring:
            return None
        return entry

    def put(self, api_key: str, token: str, tenant: Any, keyring: object, *, generation: int) -> None:
        """Remember a verification that began at `generation` (skipped when a drop came since, or not live)."""
        if self.ttl_s <= 0 or not self.live or generation != self.generation:
            return
        tokens = self._keys.get(api_key)
        if tokens is None:
            if self._count >= self.max_entries:
                self._count -= len(self._keys.pop(next(iter(self._keys))))  # the oldest key's entries
            tokens = self._keys[api_key] = {}
        self._count += token not in tokens
        tokens[token] = _Verified(tenant, monotonic() + self.ttl_s, keyring)

    def drop(self, api_key: str) -> None:
        """Forget every verification of the key's credentials."""
        self.generation += 1
        self._count -= len(self._keys.pop(api_key, {}))

    def clear(self) -> None:
        self.generation += 1
        self._keys.clear()
        self._count = 0

    def changed(self, message: bytes) -> None:
        """A CHANGED_CHANNEL message: the API key id whose credentials changed."""
        self.drop(message.decode(errors="replace"))

    def set_live(self, live: bool) -> None:
        """Subscribed (True), or messages may have been missed (False: nothing cached is trusted)."""
        self.clear()
        self.live = live
