"""Embedded servers: data survives a restart; configured URLs start nothing embedded."""

import asyncio

import psycopg
import redis

from collab.kit import embedded
from collab.kit.services import build_services, close_services
from conftest import make_settings


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
        assert conn.execute("select v from kept").fetchone() == ("still here",)
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
