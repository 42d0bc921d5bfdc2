"""User tokens: HS256 JWTs signed with COLLAB_SECRET_KEY, 48 hours, carrying the user and their access."""

from typing import Any

import jwt

ALGORITHMS = ["HS256"]  # fixed: a token naming another algorithm ("none" included) is refused
LIFETIME_S = 48 * 3600
ISSUER = "collab"


def issue(secret: str, *, claims: dict[str, Any], now_s: int) -> str:
    """A signed token with the given claims, issued now and expiring in 48 hours."""
    return jwt.encode({**claims, "iss": ISSUER, "iat": now_s, "exp": now_s + LIFETIME_S}, secret, algorithm="HS256")


def decode(secret: str, token: str, *, now_s: float) -> dict[str, Any]:
    """The claims of a valid token at `now_s`; raises jwt.InvalidTokenError otherwise.

    A token must carry `exp`; resources whose own `expiresAt` has passed are dropped, since an
    expired grant no longer applies.
    """
    options = {"require": ["exp", "iat", "sub"], "verify_exp": False, "verify_iat": False}
    claims = jwt.decode(token, secret, algorithms=ALGORITHMS, issuer=ISSUER, options=options)
    # Expiry is judged by the service's (injectable) clock, not PyJWT's wall clock.
    if not isinstance(claims["exp"], (int, float)) or claims["exp"] <= now_s:
        raise jwt.ExpiredSignatureError("Signature has expired")
    resources = (claims.get("permissions") or {}).get("resources") or []
    claims["permissions"] = {"resources": [r for r in resources if r.get("expiresAt") is None or r["expiresAt"] > now_s]}
    return claims
