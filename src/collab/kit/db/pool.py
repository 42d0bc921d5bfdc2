"""The async psycopg pool and the few helpers every repository uses."""

from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

Conn = psycopg.AsyncConnection


def create_pool(url: str, *, min_size: int = 1, max_size: int = 10) -> AsyncConnectionPool:
    """A pool whose connections autocommit (reads); writes open an explicit transaction."""
    return AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True, "row_factory": dict_row},
    )


async def fetch_one(conn: Conn, sql: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    cur = await conn.execute(sql, params)
    return await cur.fetchone()


async def fetch_all(
    conn: Conn, sql: str, params: dict[str, Any] | None = None, *, prepare: bool | None = None
) -> list[dict[str, Any]]:
    cur = await conn.execute(sql, params, prepare=prepare)
    return await cur.fetchall()


async def execute(conn: Conn, sql: str, params: dict[str, Any] | None = None) -> int:
    cur = await conn.execute(sql, params)
    return cur.rowcount
