"""The async psycopg pool and the few helpers every repository uses."""

import select
from time import monotonic
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

Conn = psycopg.AsyncConnection

# A request waits at most this long for a connection, then fails with UNAVAILABLE (kit/http.py).
POOL_TIMEOUT_S = 5.0
# A connection attempt to an unreachable server gives up after this long (libpq's connect_timeout).
CONNECT_TIMEOUT_S = 5
# The pool stops its own background reconnection attempts after this long; the next request that finds
# no connection starts a fresh attempt at once. Kept short so that after an outage the pool reconnects on
# the first request rather than at the end of a long exponential backoff.
RECONNECT_TIMEOUT_S = 5.0


class Pool(AsyncConnectionPool):
    """A pool that does not hand out a connection the server has closed (a restart, a failover).

    An idle connection has nothing to read unless the server spoke: when it did, the connection is
    checked with a round trip and replaced if broken. Healthy connections cost one poll(2), not a query.
    """

    async def getconn(self, timeout: float | None = None) -> Conn:
        deadline = monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            conn = await super().getconn(timeout=max(deadline - monotonic(), 0.0))
            if not _has_input(conn):
                return conn
            try:
                await self.check_connection(conn)
            except Exception:
                await self.putconn(conn)  # broken: the pool drops it and opens a replacement
                continue
            return conn


def _has_input(conn: Conn) -> bool:
    """True when an idle connection is closed or has bytes waiting (a FATAL message, EOF, a notice)."""
    if conn.closed:
        return True
    try:
        fd = conn.fileno()
    except psycopg.Error:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


def create_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    timeout: float = POOL_TIMEOUT_S,
    reconnect_timeout: float = RECONNECT_TIMEOUT_S,
) -> AsyncConnectionPool:
    """A pool whose connections autocommit (reads); writes open an explicit transaction."""
    return Pool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        timeout=timeout,
        reconnect_timeout=reconnect_timeout,
        kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT_S},
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


async def delete_in_batches(pool: AsyncConnectionPool, sql: str, params: dict[str, Any], *, batch: int) -> int:
    """Run a delete of at most `%(limit)s` rows (given `batch`) until it deletes fewer; how many it deleted in all.
    Each batch commits on its own, so a large backlog never holds one long transaction or its locks."""
    deleted = 0
    while True:
        async with pool.connection() as conn:
            n = await execute(conn, sql, {**params, "limit": batch})
        deleted += n
        if n < batch:
            return deleted
