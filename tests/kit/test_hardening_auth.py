"""Issue #14 (7, 9): per-API-key token signing keys with a JWKS, failed-authentication limits, secret handling."""

import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jwt
import pytest

from collab.config import Settings, require_safe_secret
from collab.kit.crypto import Keyring
from collab.permissions import tokens
from helpers import add_organization, error, fresh_ip, new_tenant, post, result

SECRET = "test-secret-key-0123456789-abcdefghij"  # the suite's COLLAB_SECRET_KEY
GENERATE, KEYS, ROTATE = "/v2/auth/generate_token", "/v2/auth/tokenkeys/get", "/v2/auth/tokenkeys/rotate"
PROBE = "/v2/workspace/activityconfig/get"  # a cheap [API-key auth] read


def token_for(client, t, user="u1"):
    return result(post(client, GENERATE, {"userId": user}, t.headers))["token"]


def jwks(client, t):
    return result(post(client, KEYS, {}, t.headers))


def verify_like_a_relying_party(token, keys, audience):
    """What a relying party does with a stock library: pick the JWK by the token's kid, then jwt.decode."""
    key = jwt.PyJWKSet.from_dict(keys)[jwt.get_unverified_header(token)["kid"]]  # KeyError: no such kid
    return jwt.decode(token, key.key, algorithms=["EdDSA"], audience=audience, issuer="collab",
                      options={"verify_exp": False, "verify_iat": False})


# --- per-tenant token keys ----------------------------------------------------------------------------------


def test_each_api_key_signs_its_tokens_with_its_own_key(client):
    a, b = new_tenant(client), new_tenant(client)
    add_organization(client, a, "o1", "d1")
    body = {"userId": "u1", "permissions": {"resources": [{"type": "document", "id": "d1", "organizationId": "o1"}]}}
    token_a, token_b = result(post(client, GENERATE, body, a.headers))["token"], token_for(client, b)
    header_a, header_b = jwt.get_unverified_header(token_a), jwt.get_unverified_header(token_b)
    assert header_a["alg"] == header_b["alg"] == "EdDSA"
    assert header_a["kid"] != header_b["kid"]
    keys_a, keys_b = jwks(client, a), jwks(client, b)
    assert keys_a["keys"][0]["kid"] == header_a["kid"] and keys_b["keys"][0]["kid"] == header_b["kid"]
    assert not {k["kid"] for k in keys_a["keys"]} & {k["kid"] for k in keys_b["keys"]}
    # A relying party verifies with the published public key alone, and the claims name the issuer and audience.
    claims = verify_like_a_relying_party(token_a, keys_a, audience=a.api_key)
    assert claims["iss"] == "collab" and claims["aud"] == a.api_key and claims["sub"] == "u1"
    assert claims["permissions"]["resources"] == [
        {"type": "document", "id": "d1", "organizationId": "o1", "accessRole": "editor"}]
    # Neither tenant's keys verify the other's token, even forced past the kid.
    with pytest.raises(KeyError):
        verify_like_a_relying_party(token_a, keys_b, audience=a.api_key)
    for jwk in keys_b["keys"]:
        with pytest.raises(jwt.InvalidSignatureError):
            jwt.decode(token_a, jwt.PyJWK(jwk).key, algorithms=["EdDSA"], options={"verify_aud": False})
    # The master secret no longer signs user tokens.
    with pytest.raises(jwt.InvalidAlgorithmError):
        jwt.decode(token_a, SECRET, algorithms=["HS256"], options={"verify_aud": False})


def test_the_service_verifies_its_tokens_and_refuses_another_tenants(client, live, clock):
    a, b = new_tenant(client), new_tenant(client)
    token = token_for(client, a)
    now = clock["now"]
    assert tokens.verify(live.svc.keyring, token, api_key_id=a.api_key, version=1, now_s=now)["sub"] == "u1"
    with pytest.raises(jwt.InvalidSignatureError):
        tokens.verify(live.svc.keyring, token, api_key_id=b.api_key, version=1, now_s=now)
    with pytest.raises(jwt.ExpiredSignatureError):
        tokens.verify(live.svc.keyring, token, api_key_id=a.api_key, version=1, now_s=now + 48 * 3600)
    # A token re-signed with B's key but naming A as its audience is still B's: refused for A and for B.
    forged = tokens.issue(live.svc.keyring.token_key(b.api_key, 1), claims={"sub": "u1"}, audience=a.api_key, now_s=int(now))
    with pytest.raises(jwt.InvalidSignatureError):
        tokens.verify(live.svc.keyring, forged, api_key_id=a.api_key, version=1, now_s=now)
    with pytest.raises(jwt.InvalidAudienceError):
        tokens.verify(live.svc.keyring, forged, api_key_id=b.api_key, version=1, now_s=now)


def test_token_decoding_refuses_other_algorithms_and_missing_claims(live):
    keys = live.svc.keyring.token_keys("key_x", 1)
    claims = {"sub": "u1", "iss": "collab", "aud": "key_x", "iat": 1, "exp": 10**10}
    for token in (jwt.encode(claims, key=None, algorithm="none", headers={"kid": keys[0].kid}),
                  jwt.encode(claims, SECRET, algorithm="HS256", headers={"kid": keys[0].kid})):
        with pytest.raises(jwt.InvalidAlgorithmError):
            tokens.decode(keys, token, audience="key_x", now_s=2)
    no_exp = jwt.encode({k: v for k, v in claims.items() if k != "exp"}, keys[0].private, algorithm="EdDSA",
                        headers={"kid": keys[0].kid})
    with pytest.raises(jwt.MissingRequiredClaimError):
        tokens.decode(keys, no_exp, audience="key_x", now_s=2)
    with pytest.raises(jwt.DecodeError):
        tokens.decode(keys, "not a token", audience="key_x", now_s=2)


def test_rotating_the_token_key_keeps_the_previous_one_verifying(client, live, clock):
    t = new_tenant(client)
    first = token_for(client, t)
    rotated = result(post(client, ROTATE, {}, t.headers))
    assert rotated == jwks(client, t)
    second = token_for(client, t)
    assert jwt.get_unverified_header(second)["kid"] == rotated["keys"][0]["kid"] != jwt.get_unverified_header(first)["kid"]
    for token in (first, second):
        verify_like_a_relying_party(token, rotated, audience=t.api_key)
        tokens.verify(live.svc.keyring, token, api_key_id=t.api_key, version=2, now_s=clock["now"])
    # One more rotation retires the first key: its tokens no longer verify, the second's still do.
    again = result(post(client, "/v1/auth/tokenkeys/rotate", {}, t.headers))
    with pytest.raises(KeyError):
        verify_like_a_relying_party(first, again, audience=t.api_key)
    with pytest.raises(jwt.InvalidSignatureError):
        tokens.verify(live.svc.keyring, first, api_key_id=t.api_key, version=3, now_s=clock["now"])
    verify_like_a_relying_party(second, again, audience=t.api_key)
    # Rotation is per API key: another tenant's keys did not move.
    other = new_tenant(client)
    before = jwks(client, other)
    result(post(client, ROTATE, {}, t.headers))
    assert jwks(client, other) == before


def test_previous_secret_keeps_tokens_verifying(client, live, clock):
    t = new_tenant(client)
    old = token_for(client, t)
    original = live.svc.keyring
    live.svc.keyring = Keyring("a-brand-new-secret-key-0987654321-xyz", previous=SECRET)
    try:
        new = token_for(client, t)
        keys = jwks(client, t)
        assert jwt.get_unverified_header(new)["kid"] != jwt.get_unverified_header(old)["kid"]
        for token in (old, new):
            verify_like_a_relying_party(token, keys, audience=t.api_key)
            tokens.verify(live.svc.keyring, token, api_key_id=t.api_key, version=1, now_s=clock["now"])
    finally:
        live.svc.keyring = original
    with pytest.raises(jwt.InvalidSignatureError):  # made under the new secret: the old ring cannot know it
        tokens.verify(original, new, api_key_id=t.api_key, version=1, now_s=clock["now"])


def test_token_key_operations_need_api_key_auth(client):
    t = new_tenant(client)
    error(post(client, KEYS, {}, {}), "UNAUTHENTICATED")
    error(post(client, ROTATE, {}, {"x-service-api-key": t.api_key, "x-service-auth-token": "nope"}), "PERMISSION_DENIED")


# --- failed-authentication limits -----------------------------------------------------------------------------


def bad_api_key_call(client, t, ip):
    return post(client, PROBE, {}, {"x-service-api-key": t.api_key, "x-service-auth-token": "wrong-token",
                                    "x-forwarded-for": ip})


def test_failed_api_key_auth_is_limited_per_address(client, live, clock, monkeypatch):
    victim, bystander, ip = new_tenant(client), new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "5/minute")
    result(post(client, PROBE, {}, {**victim.headers, "x-forwarded-for": fresh_ip()}))  # the victim's client, earlier
    for _ in range(5):
        error(bad_api_key_call(client, victim, ip), "PERMISSION_DENIED")
    refused = bad_api_key_call(client, victim, ip)
    err = error(refused, "RESOURCE_EXHAUSTED")
    assert refused.headers["retry-after"] == "60" and err["details"] == {"retryAfterSeconds": 60}
    # That address is refused even with credentials it never proved, and unknown keys alike...
    error(post(client, PROBE, {}, {**bystander.headers, "x-forwarded-for": ip}), "RESOURCE_EXHAUSTED")
    error(post(client, PROBE, {}, {"x-service-api-key": "key_unknown", "x-service-auth-token": "x",
                                   "x-forwarded-for": ip}), "RESOURCE_EXHAUSTED")
    # ...while other addresses are not, and credentials that authenticated before still pass from it.
    result(post(client, PROBE, {}, {**bystander.headers, "x-forwarded-for": fresh_ip()}))
    result(post(client, PROBE, {}, {**victim.headers, "x-forwarded-for": ip}))
    # The next window starts afresh.
    clock["now"] += 60
    error(bad_api_key_call(client, victim, ip), "PERMISSION_DENIED")


def test_failed_api_key_auth_is_limited_per_key_without_locking_out_its_clients(client, live, clock, monkeypatch):
    target, other = new_tenant(client), new_tenant(client)
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_key", "4/minute")
    result(post(client, PROBE, {}, target.headers))  # the key's real client, before the attack
    for _ in range(4):  # from ever new addresses, so only the key's own count can stop them
        error(bad_api_key_call(client, target, fresh_ip()), "PERMISSION_DENIED")
    error(bad_api_key_call(client, target, fresh_ip()), "RESOURCE_EXHAUSTED")
    result(post(client, PROBE, {}, {**target.headers, "x-forwarded-for": fresh_ip()}))  # known good: still served
    result(post(client, PROBE, {}, {**other.headers, "x-forwarded-for": fresh_ip()}))  # another key: untouched
    # A token revoked after it was known good stops passing the gate once it failed.
    new = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": target.api_key}, target.workspace_headers))
    error(post(client, PROBE, {}, target.headers), "PERMISSION_DENIED")
    error(post(client, PROBE, {}, target.headers), "RESOURCE_EXHAUSTED")
    assert new["newAuthToken"]["token"]


def test_failed_workspace_auth_is_limited(client, live, clock, monkeypatch):
    t, ip = new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "3/minute")
    bad = {"x-service-workspace-id": t.workspace["id"], "x-service-workspace-auth-token": "wrong", "x-forwarded-for": ip}
    error(post(client, "/v2/workspace/get", {}, bad), "UNAUTHENTICATED")
    error(post(client, "/v2/workspace/get", {}, {**bad, "x-service-workspace-id": "ws_nope"}), "NOT_FOUND")
    error(post(client, "/v2/workspace/authtokens/get", {"apiKey": t.api_key}, bad), "UNAUTHENTICATED")
    error(post(client, "/v2/workspace/get", {}, bad), "RESOURCE_EXHAUSTED")
    result(post(client, "/v2/workspace/get", {}, {**t.workspace_headers, "x-forwarded-for": fresh_ip()}))


def test_bad_credentials_past_the_limit_never_wait_for_the_database(client, live, clock, monkeypatch):
    """With every pool connection held, refused attempts still answer 429 at once (not 503 after the pool wait)."""
    t, good, ip = new_tenant(client), new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "3/minute")
    for _ in range(3):
        error(bad_api_key_call(client, t, ip), "PERMISSION_DENIED")
    pool = live.svc.pool
    held = [live.run(pool.getconn()) for _ in range(pool.max_size)]
    try:
        with ThreadPoolExecutor(8) as burst:
            answers = list(burst.map(lambda _: bad_api_key_call(client, t, ip), range(32)))
    finally:
        for conn in held:
            live.run(pool.putconn(conn))
    assert {a.status_code for a in answers} == {429}
    # A burst of bad calls beside a good one: the good one is served.
    with ThreadPoolExecutor(8) as burst:
        bad = [burst.submit(bad_api_key_call, client, t, ip) for _ in range(32)]
        ok = post(client, PROBE, {}, {**good.headers, "x-forwarded-for": fresh_ip()})
    assert ok.status_code == 200 and {f.result().status_code for f in bad} == {429}


def test_failed_auth_limit_fails_open_without_redis(client, live, clock, monkeypatch):
    t, ip = new_tenant(client), fresh_ip()
    monkeypatch.setattr(live.svc.settings, "auth_failures_per_address", "1/minute")
    monkeypatch.setattr(live.svc, "redis", None)
    for _ in range(3):
        error(bad_api_key_call(client, t, ip), "PERMISSION_DENIED")
    result(post(client, PROBE, {}, {**t.headers, "x-forwarded-for": ip}))


# --- secrets ----------------------------------------------------------------------------------------------


def settings(tmp_path, **values):
    return Settings(data_dir=tmp_path, **values)


def test_production_refuses_a_missing_or_short_secret(tmp_path):
    with pytest.raises(RuntimeError, match="COLLAB_SECRET_KEY is required"):
        settings(tmp_path, env="production", secret_key=None).resolved_secret_key()
    with pytest.raises(RuntimeError, match="at least 32"):
        settings(tmp_path, env="production", secret_key="x" * 31).resolved_secret_key()
    assert settings(tmp_path, env="production", secret_key="x" * 32).resolved_secret_key() == "x" * 32
    assert settings(tmp_path, env="development", secret_key="short").resolved_secret_key() == "short"


def test_development_secret_is_created_private_once(tmp_path):
    s = settings(tmp_path / "data", env="development", secret_key=None)
    with ThreadPoolExecutor(8) as pool:
        secrets = set(pool.map(lambda _: s.resolved_secret_key(), range(16)))
    assert len(secrets) == 1 and len(secrets.pop()) >= 32
    path = tmp_path / "data" / "secret_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret_key"]  # no temporary file left behind
    assert s.resolved_secret_key() == path.read_text().strip()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2"])
def test_development_without_a_secret_may_listen_on_loopback(tmp_path, host):
    require_safe_secret(settings(tmp_path, env="development", secret_key=None), host=host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "collab.example.com"])
def test_development_without_a_secret_refuses_to_listen_off_loopback(tmp_path, host):
    with pytest.raises(RuntimeError, match="COLLAB_SECRET_KEY"):
        require_safe_secret(settings(tmp_path, env="development", secret_key=None), host=host)
    require_safe_secret(settings(tmp_path, env="development", secret_key="y" * 40), host=host)
    require_safe_secret(settings(tmp_path, env="production", secret_key="y" * 40), host=host)


def test_collab_api_refuses_to_start_off_loopback_without_a_secret(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    # Servers that refuse connections: were the check missing, the app would fail at start, not run on.
    env.update(COLLAB_ENV="development", COLLAB_DATA_DIR=str(tmp_path), COLLAB_PORT="58461",
               COLLAB_DATABASE_URL="postgresql://127.0.0.1:9/none", COLLAB_REDIS_URL="redis://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-m", "collab.cli", "api", "--host", "0.0.0.0"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "without COLLAB_SECRET_KEY" in done.stderr
    env.update(COLLAB_ENV="production", COLLAB_SECRET_KEY="too-short")
    done = subprocess.run([sys.executable, "-m", "collab.cli", "api"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "production needs at least 32" in done.stderr


def test_docker_image_runs_in_production_mode():
    dockerfile = (Path(__file__).parents[2] / "Dockerfile").read_text()
    assert "COLLAB_ENV=production" in dockerfile
