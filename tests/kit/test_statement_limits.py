"""Every pooled connection has a statement and an idle-in-transaction time limit; index builds lift the first."""

import asyncio

import psycopg
import pytest

from collab.embeddings import registry
from collab.kit.db import create_pool, execute, fetch_one


def _limits(row) -> tuple[str, str]:
    return row["statement_timeout"], row["idle_in_transaction_session_timeout"]


LIMITS = ("select current_setting('statement_timeout') as statement_timeout, "
          "current_setting('idle_in_transaction_session_timeout') as idle_in_transaction_session_timeout")


def test_the_services_pool_limits_every_connection(live):
    async def read():
        async with live.svc.pool.connection() as conn:
            return await fetch_one(conn, LIMITS, {})

    assert _limits(live.run(read())) == ("1min", "1min")


def test_a_runaway_statement_is_cancelled_and_its_connection_serves_again(servers):
    async def scenario():
        pool = create_pool(servers["database_url"], min_size=1, max_size=1, statement_timeout_s=0.2,
                           idle_in_transaction_timeout_s=5)
        await pool.open()
        try:
            async with pool.connection() as conn:
                with pytest.raises(psycopg.errors.QueryCanceled):
                    await fetch_one(conn, "select pg_sleep(5)", {})
            async with pool.connection() as conn:  # the only connection, still good
                assert _limits(await fetch_one(conn, LIMITS, {})) == ("200ms", "5s")
                # A concurrent index build lifts the limit for itself, then the pool's comes back.
                await execute(conn, registry.q.session_build_memory)
                assert (await fetch_one(conn, LIMITS, {}))["statement_timeout"] == "0"
                await execute(conn, registry.q.reset_build_memory)
                assert _limits(await fetch_one(conn, LIMITS, {})) == ("200ms", "5s")
        finally:
            await pool.close()

    asyncio.run(scenario())


def test_the_urls_own_options_are_kept(servers):
    url = psycopg.conninfo.make_conninfo(servers["database_url"], options="-c application_name=from-the-url")

    async def scenario():
        pool = create_pool(url, min_size=1, max_size=1, statement_timeout_s=3)
        await pool.open()
        try:
            async with pool.connection() as conn:
                row = await fetch_one(conn, "select current_setting('application_name') as name, "
                                            "current_setting('statement_timeout') as limit_", {})
        finally:
            await pool.close()
        return row

    assert asyncio.run(scenario()) == {"name": "from-the-url", "limit_": "3s"}
