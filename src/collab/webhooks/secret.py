"""Endpoint signing secrets: `whsec_` + base64 of 24 random bytes, kept only as AES-GCM ciphertexts."""

import base64
import hashlib
import hmac
import os
from typing import Any

from collab.kit.services import Services

ROTATION_OVERLAP_MS = 24 * 3600 * 1000  # a rotated-out secret keeps signing beside the new one this long


def new_secret() -> str:
    """A fresh secret, as Svix and Standard Webhooks write them."""
    return "whsec_" + base64.b64encode(os.urandom(24)).decode()


def _aad(api_key_id: str, endpoint_id: str) -> str:
    # Binds the ciphertext to its endpoint: a secret copied to another row or tenant does not open.
    return f"webhook-secret:{api_key_id}:{endpoint_id}"


def seal(svc: Services, secret: str, *, api_key_id: str, endpoint_id: str) -> bytes:
    return svc.keyring.encrypt(secret, _aad(api_key_id, endpoint_id))


def unseal(svc: Services, blob: bytes, *, api_key_id: str, endpoint_id: str) -> str:
    return svc.keyring.decrypt(blob, _aad(api_key_id, endpoint_id))


def for_signing(svc: Services, row: dict[str, Any], *, api_key_id: str, endpoint_id: str, now: int) -> list[str]:
    """The current secret, plus the previous one while its overlap lasts."""
    found = [unseal(svc, row["secret_enc"], api_key_id=api_key_id, endpoint_id=endpoint_id)]
    if row["previous_secret_enc"] is not None and (row["previous_secret_until"] or 0) > now:
        found.append(unseal(svc, row["previous_secret_enc"], api_key_id=api_key_id, endpoint_id=endpoint_id))
    return found


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed by the secret's bytes after `whsec_`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()
