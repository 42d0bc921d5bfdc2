"""COLLAB_DB_POOLER=transaction: safe behind PgBouncer in transaction mode, where consecutive transactions of one
client connection may run on different server connections: nothing is prepared on the server, and search's
settings are SET LOCAL inside the search's own transaction, never left on a session."""

import asyncio

from collab.judgments.repository import use_settings
from collab.judgments.search import _settings_scope
from collab.kit.db import create_pool

SETTING = "select current_setting('hnsw.ef_search', true) as value"


async def _prepared(conn) -> int:
    return (await (await conn.execute("select count(*) as n from pg_prepared_statements")).fetchone())["n"]


async def _search_settings(url: str, pooler: str) -> tuple[bool, str | None, str | None, int]:
    """(local?, the setting inside the search, the setting on the session after it, statements prepared)."""
    pool = create_pool(url, pooler=pooler)
    await pool.open()
    try:
        async with pool.connection() as conn:
            async with _settings_scope(conn) as local:
                await use_settings(conn, {"hnsw.ef_search": "123"}, local=local)
                inside = (await (await conn.execute(SETTING)).fetchone())["value"]
            after = (await (await conn.execute(SETTING)).fetchone())["value"]
            for _ in range(3):
                await conn.execute("select 1")
            return local, inside, after, await _prepared(conn)
    finally:
        await pool.close()


def test_transaction_pooling_leaves_no_session_state(servers):
    local, inside, after, prepared = asyncio.run(_search_settings(servers["database_url"], "transaction"))
    assert local and inside == "123"
    assert after in (None, "", "40")  # back to the server's default once the search's transaction ended
    assert prepared == 0


def test_session_pooling_keeps_settings_and_prepares(servers):
    local, inside, after, prepared = asyncio.run(_search_settings(servers["database_url"], "session"))
    assert not local and inside == after == "123"  # kept for the next search on this connection
    assert prepared > 0
