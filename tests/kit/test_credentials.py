"""API-key verification cached per process (kit/credentials.py): a token reset or key rotation still takes
effect at once in every process."""

import httpx
import pytest

from collab.kit.auth import Tenant
from collab.kit.credentials import CredentialCache
from collab.testing.live import Live
from support.helpers import error, new_tenant, post, result

CONFIG_GET = "/v2/workspace/activityconfig/get"


@pytest.fixture
def second(live):
    """A second API process on the same Postgres and Redis (its own pool, Redis client and credential cache)."""
    other = Live(live.settings, worker=False).start()
    with httpx.Client(base_url=other.url, timeout=30) as c:
        yield c
    other.stop()


def _kids(jwks: dict) -> set[str]:
    return {key["kid"] for key in jwks["keys"]}


def test_a_token_reset_takes_effect_at_once_in_every_process(client, second):
    tenant = new_tenant(client)
    for c in (client, second, client, second):  # both processes have verified (and remembered) the token
        result(post(c, CONFIG_GET, {}, tenant.headers))
    new = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": tenant.api_key}, tenant.workspace_headers))
    for c in (second, client):
        error(post(c, CONFIG_GET, {}, tenant.headers), "PERMISSION_DENIED")
    headers = {"x-service-api-key": tenant.api_key, "x-service-auth-token": new["newAuthToken"]["token"]}
    for c in (second, client, second):
        result(post(c, CONFIG_GET, {}, headers))


def test_a_token_key_rotation_is_seen_at_once_by_every_process(client, second):
    tenant = new_tenant(client)
    before = _kids(result(post(second, "/v2/auth/tokenkeys/get", {}, tenant.headers)))
    rotated = _kids(result(post(client, "/v2/auth/tokenkeys/rotate", {}, tenant.headers)))
    assert rotated - before
    # The other process signs with the new key at once (its cached tenant carried the old key version).
    assert _kids(result(post(second, "/v2/auth/tokenkeys/get", {}, tenant.headers))) == rotated


def test_a_cache_entry_needs_the_same_keyring_and_lapses():
    cache = CredentialCache(ttl_s=60)
    cache.set_live(True)
    tenant = Tenant(api_key_id="key_1", workspace_id="ws_1")
    ring, other = object(), object()
    cache.put("key_1", "token", tenant, ring, generation=cache.generation)
    assert cache.get("key_1", "token", ring).tenant == tenant
    assert cache.get("key_1", "token", other) is None
    assert cache.get("key_1", "other-token", ring) is None
    cache.drop("key_1")
    assert cache.get("key_1", "token", ring) is None
    off = CredentialCache(ttl_s=0)
    off.set_live(True)
    off.put("key_1", "token", tenant, ring, generation=off.generation)
    assert off.get("key_1", "token", ring) is None
    small = CredentialCache(ttl_s=60, max_entries=2)
    small.set_live(True)
    for n in range(3):
        small.put(f"key_{n}", "t", tenant, ring, generation=small.generation)
    assert small.get("key_0", "t", ring) is None and small.get("key_2", "t", ring) is not None


def test_nothing_cached_is_trusted_while_changes_may_be_missed():
    cache = CredentialCache(ttl_s=60)
    tenant = Tenant(api_key_id="key_1", workspace_id="ws_1")
    ring = object()
    cache.put("key_1", "token", tenant, ring, generation=cache.generation)  # not subscribed yet: not kept
    cache.set_live(True)
    assert cache.get("key_1", "token", ring) is None
    cache.put("key_1", "token", tenant, ring, generation=cache.generation)
    cache.set_live(False)  # the link to Redis was lost: announcements may have been missed
    cache.set_live(True)
    assert cache.get("key_1", "token", ring) is None


def test_a_verification_that_began_before_a_change_is_not_remembered():
    cache = CredentialCache(ttl_s=60)
    cache.set_live(True)
    tenant, ring = Tenant(api_key_id="key_1", workspace_id="ws_1"), object()
    began = cache.generation  # the database said yes to the old token ...
    cache.changed(b"key_1")  # ... and its reset was announced before the answer was remembered
    cache.put("key_1", "old-token", tenant, ring, generation=began)
    assert cache.get("key_1", "old-token", ring) is None
    cache.put("key_2", "token", tenant, ring, generation=cache.generation)
    cache.changed(b"key_1")  # another key's change leaves this one's entries alone
    assert cache.get("key_2", "token", ring) is not None
