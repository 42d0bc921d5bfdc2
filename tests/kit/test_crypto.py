"""Keyed hashes and secrets at rest (kit/crypto.py): rotation keeps what the previous secret made readable."""

import pytest

from collab.kit.crypto import DecryptError, Keyring


def test_keyring_rotation_and_binding():
    old = Keyring("old-secret")
    blob = old.encrypt("sk-123", "tenant-a")
    token_hash = old.hash("tok")
    rotated = Keyring("new-secret", previous="old-secret")
    assert rotated.decrypt(blob, "tenant-a") == "sk-123"
    assert rotated.verify("tok", token_hash)
    assert not rotated.verify("other", token_hash)
    with pytest.raises(DecryptError):
        rotated.decrypt(blob, "tenant-b")
    with pytest.raises(DecryptError):
        Keyring("new-secret").decrypt(blob, "tenant-a")
    assert Keyring("new-secret").decrypt(rotated.encrypt("x", "t"), "t") == "x"
