"""User tokens: EdDSA (Ed25519) JWTs signed with the API key's own key, 48 hours, carrying the user and their access.

Each API key signs with a key derived from the secret, the key's id and its token key version (see
`Keyring.token_keys`), so a relying party verifies with the public key (`auth/tokenkeys/get`, a JWKS) and
never holds the service's secret, and one tenant's keys never verify another tenant's tokens.
"""

from typing import Any, Iterable

import jwt
from jwt.types import Options

from collab.kit.crypto import Keyring, TokenKey

ALGORITHMS = ["EdDSA"]  # fixed: a token naming another algorithm ("none" and HS256 included) is refused
LIFETIME_S = 48 * 3600
ISSUER = "collab"


def issue(key: TokenKey, *, claims: dict[str, Any], audience: str, now_s: int) -> str:
    """A token signed with `key` (named by its `kid`), for `audience`, issued now and expiring in 48 hours."""
    payload = {**claims, "iss": ISSUER, "aud": audience, "iat": now_s, "exp": now_s + LIFETIME_S}
    return jwt.encode(payload, key.private, algorithm="EdDSA", headers={"kid": key.kid})


def decode(keys: Iterable[TokenKey], token: str, *, audience: str, now_s: float) -> dict[str, Any]:
    """The claims of a valid token at `now_s` under one of `keys`; raises jwt.InvalidTokenError otherwise.

    A token must carry `exp`; resources whose own `expiresAt` has passed are dropped, since an
    expired grant no longer applies.
    """
    kid = jwt.get_unverified_header(token).get("kid")
    key = next((k for k in keys if k.kid == kid), None)
    if key is None:
        raise jwt.InvalidSignatureError("No key with this kid: another tenant's, rotated out, or forged")
    options: Options = {"require": ["exp", "iat", "sub", "aud"], "verify_exp": False, "verify_iat": False}
    claims = jwt.decode(token, key.public, algorithms=ALGORITHMS, issuer=ISSUER, audience=audience, options=options)
    # Expiry is judged by the service's (injectable) clock, not PyJWT's wall clock.
    if not isinstance(claims["exp"], (int, float)) or claims["exp"] <= now_s:
        raise jwt.ExpiredSignatureError("Signature has expired")
    resources = (claims.get("permissions") or {}).get("resources") or []
    claims["permissions"] = {
        "resources": [r for r in resources if r.get("expiresAt") is None or r["expiresAt"] > now_s]
    }
    return claims


def verify(keyring: Keyring, token: str, *, api_key_id: str, version: int, now_s: float) -> dict[str, Any]:
    """The claims of a token of this API key, under its current or previous key version and either secret."""
    return decode(keyring.token_keys(api_key_id, version), token, audience=api_key_id, now_s=now_s)


def jwks(keyring: Keyring, *, api_key_id: str, version: int) -> dict[str, Any]:
    """The public keys that verify this API key's tokens, as a JWKS document; the signing key first."""
    return {"keys": [dict(k.jwk) for k in keyring.token_keys(api_key_id, version)]}
