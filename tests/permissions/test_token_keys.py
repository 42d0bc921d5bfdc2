"""User tokens (permissions/tokens.py, kit/crypto.py): each API key signs with its own key, published as a
JWKS; rotation and a previous secret keep older tokens verifying (issue #14, 7)."""

import jwt
import pytest

from collab.kit.crypto import Keyring
from collab.permissions import tokens
from support.helpers import add_organization, error, new_tenant, post, result

SECRET = "test-secret-key-0123456789-abcdefghij"  # the suite's COLLAB_SECRET_KEY
GENERATE, KEYS, ROTATE = "/v2/auth/generate_token", "/v2/auth/tokenkeys/get", "/v2/auth/tokenkeys/rotate"


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
    assert claims["permissions"]["resources"] == [{
        "type": "document", "id": "d1", "organizationId": "o1", "accessRole": "editor"
    }]
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
    forged = tokens.issue(live.svc.keyring.token_key(b.api_key, 1), claims={"sub": "u1"}, audience=a.api_key,
                          now_s=int(now))
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
    no_exp = jwt.encode({k: v
                         for k, v in claims.items() if k != "exp"}, keys[0].private, algorithm="EdDSA",
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
    assert (jwt.get_unverified_header(second)["kid"] == rotated["keys"][0]["kid"] !=
            jwt.get_unverified_header(first)["kid"])
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
    error(post(client, ROTATE, {}, {"x-service-api-key": t.api_key, "x-service-auth-token": "nope"}),
          "PERMISSION_DENIED")
