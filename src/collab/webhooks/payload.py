"""Webhook payloads: the message shape, data protection, and the body options (base64, RSA-wrapped AES)."""

import base64
import binascii
import os
from datetime import datetime, timezone
from typing import Any

import orjson
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import padding as asymmetric
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

# Keys stripped at any depth by enableDataProtection, compared without case, `_` or `-` (docs/decisions.md).
PERSONAL_KEYS = frozenset({
    "name", "email", "avatar", "photourl", "displayname", "firstname", "lastname", "fullname", "username",
    "emailaddress", "avatarurl", "photo", "picture", "profilepicture", "phone", "phonenumber",
})


class RenderError(Exception):
    """The body cannot be made as configured (encryptData without a usable publicKey)."""


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 in UTC with milliseconds, as JavaScript's toISOString writes them."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def message(*, id: str, event_type: str, now: int, api_key_id: str, organization_id: str | None,
            document_id: str | None, action_user: dict[str, Any] | None, payload: Any) -> dict[str, Any]:
    """The payload shape: {id, type, timestamp, data: {actionUser?, metadata, payload}}."""
    data: dict[str, Any] = {} if action_user is None else {"actionUser": action_user}
    data["metadata"] = {"apiKey": api_key_id, "organizationId": organization_id, "documentId": document_id}
    data["payload"] = payload
    return {"id": id, "type": event_type, "timestamp": iso(now), "data": data}


def _personal(key: str) -> bool:
    # An e-mail used as a key (notifyUsers maps recipients by e-mail) is personal data too.
    return key.replace("_", "").replace("-", "").lower() in PERSONAL_KEYS or "@" in key


def protect(value: Any) -> Any:
    """The value without personal fields (names, e-mails, avatars, phones) at any depth; ids stay."""
    if isinstance(value, dict):
        return {k: protect(v) for k, v in value.items() if not _personal(str(k))}
    if isinstance(value, list):
        return [protect(v) for v in value]
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def public_key(text: str) -> RSAPublicKey:
    """An RSA public key from base64 DER SubjectPublicKeyInfo (PEM is accepted too)."""
    text = (text or "").strip()
    try:
        if text.startswith("-----BEGIN"):
            key = serialization.load_pem_public_key(text.encode())
        else:
            key = serialization.load_der_public_key(base64.b64decode("".join(text.split()), validate=True))
    except (ValueError, TypeError, binascii.Error) as exc:
        raise RenderError("encryptData is on but publicKey is not a base64 DER (SPKI) public key.") from exc
    if not isinstance(key, RSAPublicKey):
        raise RenderError("encryptData is on but publicKey is not an RSA public key.")
    return key


def encrypt(plaintext: bytes, key_text: str) -> dict[str, str]:
    """AES-256-CBC (PKCS#7) under a fresh key, the key wrapped with RSA-OAEP (SHA-256, MGF1-SHA-256)."""
    rsa_key = public_key(key_text)
    key, iv = os.urandom(32), os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    data = encryptor.update(padded) + encryptor.finalize()
    wrapped = rsa_key.encrypt(
        key, asymmetric.OAEP(mgf=asymmetric.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
    )
    return {"encryptedData": _b64(data), "encryptedKey": _b64(wrapped), "iv": _b64(iv)}


def render(payload: dict[str, Any], config: dict[str, Any]) -> tuple[str, str]:
    """The body to send and its content type, under the key's advanced webhook config."""
    if config.get("enableDataProtection"):
        payload = protect(payload)
    text, content_type = orjson.dumps(payload).decode(), "application/json"
    if config.get("encodeData"):
        text, content_type = _b64(text.encode()), "text/plain"
    if config.get("encryptData"):
        envelope = encrypt(text.encode(), config.get("publicKey") or "")
        text, content_type = orjson.dumps(envelope).decode(), "application/json"
    return text, content_type
