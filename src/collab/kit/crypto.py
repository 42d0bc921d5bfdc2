"""Keyed hashes for token lookup, AES-GCM for secrets at rest, per-API-key token signing keys; with rotation."""

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

_VERSION = b"\x01"


def _derive(secret: str, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"collab", info=purpose).derive(secret.encode())


class _Key:

    def __init__(self, secret: str):
        self.mac = _derive(secret, b"collab-hmac-v1")
        self.aead = AESGCM(_derive(secret, b"collab-aead-v1"))
        self.kid = hashlib.sha256(_derive(secret, b"collab-kid-v1")).digest()[:4]
        self.sign = _derive(secret, b"collab-sign-v1")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class TokenKey:
    """One Ed25519 key that signs an API key's user tokens; `kid` is its RFC 7638 thumbprint (opaque, unique)."""

    kid: str
    private: Ed25519PrivateKey = field(repr=False)
    public: Ed25519PublicKey = field(repr=False)
    jwk: dict[str, Any]


@lru_cache(maxsize=4096)
def _token_key(secret: str, api_key_id: str, version: int) -> TokenKey:
    # The seed is derived, not stored: a key version needs no private key at rest, and rotating the
    # secret or bumping the version gives an unrelated key. NUL separators keep the inputs apart.
    info = b"collab-user-token-v1\x00" + api_key_id.encode() + b"\x00" + str(version).encode()
    private = Ed25519PrivateKey.from_private_bytes(_derive(secret, info))
    public = private.public_key()
    x = _b64(public.public_bytes(Encoding.Raw, PublicFormat.Raw))
    thumbprint = _b64(
        hashlib.sha256(
            json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"),
                       sort_keys=True).encode()).digest())
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": x, "kid": thumbprint, "alg": "EdDSA", "use": "sig"}
    return TokenKey(kid=thumbprint, private=private, public=public, jwk=jwk)


class DecryptError(Exception):
    """A ciphertext that no key opens (tampered, another tenant's, or an unknown key)."""


class Keyring:
    """The current secret plus, during a rotation, the previous one."""

    def __init__(self, secret: str, previous: str | None = None):
        self.keys = [_Key(secret)] + ([_Key(previous)] if previous else [])
        self._secrets = [secret] + ([previous] if previous else [])

    def hash(self, token: str) -> bytes:
        """The lookup hash of a token under the current key."""
        return hmac.new(self.keys[0].mac, token.encode(), hashlib.sha256).digest()

    def verify(self, token: str, stored: bytes) -> bool:
        """Constant-time check of a token against a stored hash, under any key of the ring."""
        ok = False
        for key in self.keys:
            digest = hmac.new(key.mac, token.encode(), hashlib.sha256).digest()
            ok |= hmac.compare_digest(digest, bytes(stored))
        return ok

    def sign(self, data: bytes) -> bytes:
        """A short MAC of `data` under the current key (page tokens)."""
        return hmac.new(self.keys[0].sign, data, hashlib.sha256).digest()[:16]

    def signed(self, data: bytes, signature: bytes) -> bool:
        """Whether `signature` is a MAC of `data` under any key of the ring."""
        ok = False
        for key in self.keys:
            ok |= hmac.compare_digest(hmac.new(key.sign, data, hashlib.sha256).digest()[:16], signature)
        return ok

    def token_key(self, api_key_id: str, version: int) -> TokenKey:
        """The key that signs an API key's user tokens now: its current version under the current secret."""
        return _token_key(self._secrets[0], api_key_id, version)

    def token_keys(self, api_key_id: str, version: int) -> list[TokenKey]:
        """Every key whose tokens still verify: the current and previous version, under each secret of the ring."""
        versions = [version] + ([version - 1] if version > 1 else [])
        return [_token_key(secret, api_key_id, v) for secret in self._secrets for v in versions]

    def encrypt(self, plaintext: str, aad: str) -> bytes:
        """AES-GCM under the current key; `aad` binds the ciphertext to its owner."""
        key = self.keys[0]
        nonce = os.urandom(12)
        return _VERSION + key.kid + nonce + key.aead.encrypt(nonce, plaintext.encode(), aad.encode())

    def decrypt(self, blob: bytes, aad: str) -> str:
        """Open a ciphertext made by `encrypt` under any key of the ring with the same `aad`."""
        blob = bytes(blob)
        if len(blob) < 17 or blob[:1] != _VERSION:
            raise DecryptError("unknown ciphertext format")
        kid, nonce, body = blob[1:5], blob[5:17], blob[17:]
        for key in self.keys:
            if key.kid == kid:
                try:
                    return key.aead.decrypt(nonce, body, aad.encode()).decode()
                except InvalidTag as exc:
                    raise DecryptError("ciphertext does not open") from exc
        raise DecryptError("no key for this ciphertext")


def new_token(nbytes: int = 32) -> str:
    """A fresh random token, URL-safe."""
    return secrets.token_urlsafe(nbytes)


def new_id(prefix: str = "", nbytes: int = 12) -> str:
    """A fresh random identifier."""
    return prefix + secrets.token_hex(nbytes)
