"""The start-up self-test (kit/db/selftest.py): a database whose vector statements crash is met with a clear
refusal at start, never a crash loop."""

import asyncio
import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from collab.kit.db import selftest
from support.database import prepare_database

# --- The start-up self-test -----------------------------------------------------------------------------------


@pytest.fixture
def scratch_db(servers):
    """A database of its own on the test server (dropped after), as an external COLLAB_DATABASE_URL would be."""
    name = f"selftest_{uuid.uuid4().hex[:10]}"
    admin = servers["database_url"]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    url = psycopg.conninfo.make_conninfo(admin, dbname=name)
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("drop database {} with (force)").format(sql.Identifier(name)))


def _make_distance_crash(url: str) -> None:
    """pgvector in its own schema, and ahead of it on the search path a `<=>` whose function ends its backend: the
    self-test's first distance dies as a pgvector built for another CPU does (there with SIGILL)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create schema vecext")
        conn.execute("create extension vector schema vecext")
        conn.execute("""create function public.crashing_distance(a vecext.vector, b vecext.vector) returns float8
                        language plpgsql as $$ begin perform pg_terminate_backend(pg_backend_pid()); return 0;
                        end $$""")
        conn.execute("create operator public.<=> (leftarg = vecext.vector, rightarg = vecext.vector, "
                     "function = public.crashing_distance)")
        conn.execute(
            sql.SQL("alter database {} set search_path = public, vecext").format(sql.Identifier(conn.info.dbname)))


def test_the_self_test_passes_on_the_embedded_server(scratch_db):
    found = prepare_database(scratch_db)
    assert found.server.startswith("18.") and found.vector_tuple >= (0, 8)
    with psycopg.connect(scratch_db) as conn:  # the throwaway table went with its rolled-back transaction
        assert conn.execute("select to_regclass('collab_vector_check')").fetchone() == (None, )


def test_a_server_whose_vector_statements_crash_is_refused_once_then_at_once(scratch_db, caplog):
    _make_distance_crash(scratch_db)
    with pytest.raises(selftest.SelfTestFailed) as refused:
        prepare_database(scratch_db)
    message = str(refused.value)
    assert "'nearest'" in message and "pgvector 0.8" in message and "PostgreSQL 18" in message
    assert "collab selftest" in message and "COLLAB_DATABASE_URL" in message
    assert any("died in the vector statement 'nearest'" in r.getMessage() for r in caplog.records)
    with psycopg.connect(scratch_db, row_factory=dict_row) as conn:
        first = conn.execute("select statement, failed_at from vector_self_test_failures").fetchall()
    assert [row["statement"] for row in first] == ["nearest"]

    # The next start refuses from the record, without running the statements (no second crash of the server).
    caplog.clear()
    with pytest.raises(selftest.SelfTestFailed) as again:
        prepare_database(scratch_db)
    assert "'nearest'" in str(again.value)
    assert not any("died in the vector statement" in r.getMessage() for r in caplog.records)
    with psycopg.connect(scratch_db, row_factory=dict_row) as conn:
        assert conn.execute("select statement, failed_at from vector_self_test_failures").fetchall() == first

    # Once the server is fixed, `collab selftest` (retry_known) runs them again, passes and clears the record.
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        conn.execute("drop operator public.<=> (vecext.vector, vecext.vector)")
    assert prepare_database(scratch_db, retry_known=True).vector_tuple >= (0, 8)
    with psycopg.connect(scratch_db) as conn:
        assert conn.execute("select count(*) from vector_self_test_failures").fetchone() == (0, )
    prepare_database(scratch_db)  # and a plain start passes


def test_a_server_without_pgvector_is_refused_with_the_fix(monkeypatch, scratch_db):
    # A server with no pgvector answers the version query with nulls.
    monkeypatch.setattr(
        selftest.q, "_sql", {
            **selftest.q._sql, "versions": (
                "select current_setting('server_version') as server_version, null as installed, null as available")
        })
    with pytest.raises(selftest.SelfTestFailed) as refused:
        asyncio.run(selftest.versions(scratch_db))
    assert "no pgvector extension available" in str(refused.value) and "pgvector 0.8" in str(refused.value)


def test_an_old_pgvector_is_refused(monkeypatch, scratch_db):
    versions = "select current_setting('server_version') as server_version, '0.4.4' as installed, '0.4.4' as available"
    monkeypatch.setattr(selftest.q, "_sql", {**selftest.q._sql, "versions": versions})
    with pytest.raises(selftest.SelfTestFailed) as refused:
        asyncio.run(selftest.versions(scratch_db))
    assert "pgvector 0.4.4 is too old" in str(refused.value) and "ALTER EXTENSION vector UPDATE" in str(refused.value)


def test_the_cli_refuses_to_start_with_the_message(scratch_db, tmp_path):
    _make_distance_crash(scratch_db)
    env = dict(os.environ, COLLAB_DATABASE_URL=scratch_db, COLLAB_DATA_DIR=str(tmp_path))
    for command in (["selftest"], ["worker"]):
        run = subprocess.run([sys.executable, "-m", "collab.cli", *command], env=env, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 1, run.stderr[-2000:]
        assert "collab: refusing to start: The database backend died" in run.stderr and "'nearest'" in run.stderr
        assert "Traceback" not in run.stderr
