"""Webhook payloads: the message shape, data protection, and the body options (base64, RSA-wrapped AES-GCM)."""

import base64
import binascii
import os
from datetime import datetime, timezone
from typing import Any

import orjson
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding as asymmetric
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# Keys stripped at any depth by enableDataProtection, compared without case, `_` or `-` (docs/reference.md).
PERSONAL_KEYS = frozenset({
    "name", "email", "avatar", "photourl", "displayname", "firstname", "lastname", "fullname", "username",
    "emailaddress", "avatarurl", "photo", "picture", "profilepicture", "phone", "phonenumber"
})

# The encrypted envelope's format: 2 is AES-256-GCM (1, AES-256-CBC without a version field, is no longer written).
ENVELOPE_VERSION = 2
ENVELOPE_ALG = "RSA-OAEP-256+A256GCM"

# What a message records when its body could not be made for a reason no RenderError names.
RENDER_FAILED = "The message body could not be made (internal error; the details are in the service log)."


class RenderError(Exception):
    """The body cannot be made as configured (encryptData without a usable publicKey, a value JSON cannot carry)."""


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


def encrypt(plaintext: bytes, key_text: str) -> dict[str, Any]:
    """AES-256-GCM under a fresh key and 96-bit nonce, the key wrapped with RSA-OAEP (SHA-256, MGF1-SHA-256)."""
    rsa_key = public_key(key_text)
    key, iv = AESGCM.generate_key(bit_length=256), os.urandom(12)
    data = AESGCM(key).encrypt(iv, plaintext, None)  # ciphertext followed by the 16-byte tag
    try:
        wrapped = rsa_key.encrypt(
            key, asymmetric.OAEP(mgf=asymmetric.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
    except ValueError as exc:  # a short key stored before keys were checked on write (768 bits cannot wrap 32 bytes)
        raise RenderError(f"encryptData is on but publicKey ({rsa_key.key_size} bits) cannot wrap the payload key; "
                          "use an RSA key of at least 2048 bits.") from exc
    return {
        "version": ENVELOPE_VERSION, "alg": ENVELOPE_ALG, "encryptedData": _b64(data), "encryptedKey": _b64(wrapped),
        "iv": _b64(iv)
    }


def render(payload: dict[str, Any], config: dict[str, Any]) -> tuple[str, str]:
    """The body to send and its content type, under the key's advanced webhook config."""
    if config.get("enableDataProtection"):
        payload = protect(payload)
    try:
        text, content_type = orjson.dumps(payload).decode(), "application/json"
    except orjson.JSONEncodeError as exc:  # an integer beyond 64 bits stored before ingress refused them
        raise RenderError(f"The payload cannot be written as JSON: {exc}.") from exc
    if config.get("encodeData"):
        text, content_type = _b64(text.encode()), "text/plain"
    if config.get("encryptData"):
        envelope = encrypt(text.encode(), config.get("publicKey") or "")
        text, content_type = orjson.dumps(envelope).decode(), "application/json"
    return text, content_type
