"""Keyed hashes for token lookup and AES-GCM for secrets at rest, with key rotation."""

import hashlib
import hmac
import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_VERSION = b"\x01"


def _derive(secret: str, purpose: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"collab", info=purpose).derive(secret.encode())


class _Key:
    def __init__(self, secret: str):
        self.mac = _derive(secret, b"collab-hmac-v1")
        self.aead = AESGCM(_derive(secret, b"collab-aead-v1"))
        self.kid = hashlib.sha256(_derive(secret, b"collab-kid-v1")).digest()[:4]
        self.sign = _derive(secret, b"collab-sign-v1")


class DecryptError(Exception):
    """A ciphertext that no key opens (tampered, another tenant's, or an unknown key)."""


class Keyring:
    """The current secret plus, during a rotation, the previous one."""

    def __init__(self, secret: str, previous: str | None = None):
        self.keys = [_Key(secret)] + ([_Key(previous)] if previous else [])
        self.secret = secret  # signs user tokens (HS256), which clients verify with the same secret

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
