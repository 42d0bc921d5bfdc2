"""Migrations, named queries and the keyring."""

import asyncio

import pytest

from collab.kit.crypto import DecryptError, Keyring
from collab.kit.db import Queries
from collab.kit.db.migrate import available, migrate


def test_migrations_recorded_and_rerun_is_noop(servers, db, live):
    versions = [row["version"] for row in db.execute("select version from schema_migrations order by 1").fetchall()]
    assert versions == [v for v, _ in available()]
    assert asyncio.run(migrate(servers["database_url"])) == []


def test_queries_file_parsing(tmp_path):
    path = tmp_path / "queries.sql"
    path.write_text("-- name: one\n-- The first.\nselect 1;\n\n-- name: two\n-- The second.\nselect %(x)s\n")
    q = Queries(path)
    assert q.one == "select 1" and q.two == "select %(x)s"
    assert q.descriptions == {"one": "The first.", "two": "The second."}
    with pytest.raises(AttributeError):
        q.three
    path.write_text("-- name: one\n-- A.\nselect 1\n-- name: one\n-- B.\nselect 2\n")
    with pytest.raises(ValueError):
        Queries(path)


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
