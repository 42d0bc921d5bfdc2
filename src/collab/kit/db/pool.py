"""The async psycopg pool and the few helpers every repository uses."""

import select
from time import monotonic
from typing import Any, cast

import psycopg
from psycopg import pq
from psycopg.abc import QueryNoTemplate
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from collab.kit.db.queries import statement_name

Conn = psycopg.AsyncConnection
# What the helpers run: SQL text, or a statement composed with psycopg.sql.
Query = QueryNoTemplate

# A request waits at most this long for a connection, then fails with UNAVAILABLE (kit/http.py).
POOL_TIMEOUT_S = 5.0
# A connection attempt to an unreachable server gives up after this long (libpq's connect_timeout).
CONNECT_TIMEOUT_S = 5
# The pool stops its own background reconnection attempts after this long; the next request that finds
# no connection starts a fresh attempt at once. Kept short so that after an outage the pool reconnects on
# the first request rather than at the end of a long exponential backoff.
RECONNECT_TIMEOUT_S = 5.0

# Statements a pooled connection keeps prepared (psycopg's own cache: every statement is prepared at its first use,
# `prepare_threshold=0`); the service's named queries number a few hundred, so a working set fits, and made-up SQL
# cannot grow it without bound (psycopg drops the least recently used past it).
PREPARED_MAX = 512
_IDLE = pq.TransactionStatus.IDLE
# A table changed under a prepared statement (a migration by a newer release): the session's statements are dropped
# (psycopg forgets its own when it sees DEALLOCATE ALL) and the statement runs again, outside a transaction.
_STALE = ("0A000", "cached plan must not change result type")


class Pool(AsyncConnectionPool):
    """A pool that does not hand out a connection the server has closed (a restart, a failover), and whose
    `connection()` skips psycopg's exit work where there is none (see `_Lease`).

    An idle connection has nothing to read unless the server spoke: when it did, the connection is checked with a
    round trip and replaced if broken, and the next one is tried at once (psycopg_pool's own `check=` backs off
    between tries, a second and more, where a restart leaves every idle connection broken). Healthy connections
    cost one poll(2), not a query.
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

    def connection(self, timeout: float | None = None) -> "_Lease":  # type: ignore[override]
        """A connection for one `async with` block, given back to the pool after it (see `_Lease`)."""
        return _Lease(self, timeout)


class _Lease:
    """psycopg_pool's `connection()` without its work for nothing: an idle autocommit connection (nearly every use:
    reads, and writes whose `transaction()` block has ended) has nothing to commit or roll back, and psycopg's
    exit still takes the connection's lock and may yield to the loop. A connection left in a transaction, or
    broken, gets psycopg's own exit (commit on success, rollback on error) as before. ~8 µs less CPU per use
    (16 tasks, one-row reads: 52 against 60 µs per checkout and query)."""

    __slots__ = ("pool", "timeout", "conn")

    def __init__(self, pool: Pool, timeout: float | None):
        self.pool, self.timeout = pool, timeout

    async def __aenter__(self) -> Conn:
        self.conn = await self.pool.getconn(self.timeout)
        return self.conn

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        conn = self.conn
        try:
            if conn.pgconn.transaction_status != _IDLE:
                await conn.__aexit__(exc_type, exc, tb)
        finally:
            await self.pool.putconn(conn)


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


def create_pool(url: str, *, min_size: int = 1, max_size: int = 10, timeout: float = POOL_TIMEOUT_S,
                reconnect_timeout: float = RECONNECT_TIMEOUT_S, statement_timeout_s: float = 0,
                idle_in_transaction_timeout_s: float = 0, pooler: str = "session") -> AsyncConnectionPool:
    """A pool whose connections autocommit (reads); writes open an explicit transaction. The time limits (0: none)
    are the connections' own settings from their start (so RESET returns to them). `pooler="transaction"`: behind a
    transaction-mode pooler, whose server connections change under each transaction, nothing is prepared and the
    time limits are the pooler's or the role's (a startup `options` is not passed through by PgBouncer)."""
    kwargs: dict[str, Any] = {"autocommit": True, "row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT_S}
    if pooler == "transaction":
        kwargs["prepare_threshold"] = None
        configure = None
    else:
        kwargs["options"] = _options(url, statement_timeout_s=statement_timeout_s,
                                     idle_in_transaction_timeout_s=idle_in_transaction_timeout_s)
        configure = _prepared
    return Pool(url, min_size=min_size, max_size=max_size, open=False, timeout=timeout,
                reconnect_timeout=reconnect_timeout, configure=configure, kwargs=kwargs)


async def _prepared(conn: Conn) -> None:
    """Every statement prepared at its first use, at most PREPARED_MAX kept (psycopg's public settings)."""
    conn.prepare_threshold = 0
    conn.prepared_max = PREPARED_MAX


def pooled_by_transaction(conn: Conn) -> bool:
    """Whether `conn` is behind a transaction-mode pooler (create_pool's `pooler`): session state does not last."""
    return conn.prepare_threshold is None


def _options(url: str, *, statement_timeout_s: float, idle_in_transaction_timeout_s: float) -> str:
    """The URL's own `options`, then the pool's time limits (in ms)."""
    own = conninfo_to_dict(url).get("options") or ""
    limits = (f"-c statement_timeout={int(statement_timeout_s * 1000)} "
              f"-c idle_in_transaction_session_timeout={int(idle_in_transaction_timeout_s * 1000)}")
    return f"{own} {limits}".strip()


async def _execute(conn: Conn, sql: Query, params: Any, prepare: bool | None = None) -> psycopg.AsyncCursor[DictRow]:
    """Run one statement on a cursor; once more after dropping stale prepared statements, when nothing else
    ran in the transaction (there is none)."""
    # The pool's connections make dict rows (`row_factory` in `create_pool`), which their type does not say.
    try:
        return cast("psycopg.AsyncCursor[DictRow]", await conn.execute(sql, params, prepare=prepare))
    except psycopg.Error as exc:
        if (exc.sqlstate, exc.diag.message_primary) != _STALE or conn.pgconn.transaction_status != _IDLE:
            raise
    await conn.execute("deallocate all")
    return cast("psycopg.AsyncCursor[DictRow]", await conn.execute(sql, params, prepare=prepare))


async def fetch_one(conn: Conn, sql: Query, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    try:
        return await (await _execute(conn, sql, params)).fetchone()
    except psycopg.OperationalError as exc:
        raise _named(exc, sql)


async def fetch_row(conn: Conn, sql: Query, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The row of a statement that always returns one (an aggregate, a RETURNING of a row known to be there)."""
    row = await fetch_one(conn, sql, params)
    assert row is not None
    return row


async def fetch_all(conn: Conn, sql: Query, params: dict[str, Any] | None = None, *,
                    prepare: bool | None = None) -> list[dict[str, Any]]:
    try:
        return await (await _execute(conn, sql, params, prepare)).fetchall()
    except psycopg.OperationalError as exc:
        raise _named(exc, sql)


async def execute(conn: Conn, sql: Query, params: dict[str, Any] | None = None) -> int:
    try:
        return (await _execute(conn, sql, params)).rowcount
    except psycopg.OperationalError as exc:
        raise _named(exc, sql)


# SQLSTATEs of a connection the server dropped: a terminated backend (57P01), another backend's crash (57P02), a
# server still recovering (57P03), and the connection exceptions (08...). With none, libpq saw the socket close.
_DROPPED = ("57P01", "57P02", "57P03")


def connection_lost(exc: BaseException) -> bool:
    """Whether an error (or what caused it) means the server dropped the connection mid-statement: a crash, a
    restart, a terminated backend; not a pool that found no connection in time."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, psycopg.OperationalError) and not isinstance(seen, PoolTimeout):
            state = seen.sqlstate
            if state is None or state in _DROPPED or state.startswith("08"):
                return True
        seen = seen.__cause__ or seen.__context__
    return False


def failed_statement(exc: BaseException) -> str | None:
    """The "file.sql:name" of the named statement an error (or what caused it: a rollback on the dropped connection
    raises its own) came from, when a helper here ran it."""
    seen: BaseException | None = exc
    while seen is not None:
        for note in getattr(seen, "__notes__", ()):
            if note.startswith(_NOTE):
                return note.removeprefix(_NOTE)
        seen = seen.__cause__ or seen.__context__
    return None


_NOTE = "collab statement: "


def _named(exc: psycopg.OperationalError, sql: Any) -> psycopg.OperationalError:
    """The error, noted with the named statement that raised it (read by `failed_statement`)."""
    name = statement_name(sql)
    if name is not None and not any(note.startswith(_NOTE) for note in getattr(exc, "__notes__", ())):
        exc.add_note(_NOTE + name)
    return exc


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
