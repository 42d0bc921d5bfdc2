"""The async psycopg pool and the few helpers every repository uses."""

import select
from time import monotonic
from typing import Any

import psycopg
from psycopg import errors, generators, pq
from psycopg.conninfo import conninfo_to_dict
from psycopg._queries import PostgresQuery
from psycopg.adapt import Transformer
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from collab.kit.db.queries import statement_name

Conn = psycopg.AsyncConnection

# A request waits at most this long for a connection, then fails with UNAVAILABLE (kit/http.py).
POOL_TIMEOUT_S = 5.0
# A connection attempt to an unreachable server gives up after this long (libpq's connect_timeout).
CONNECT_TIMEOUT_S = 5
# The pool stops its own background reconnection attempts after this long; the next request that finds
# no connection starts a fresh attempt at once. Kept short so that after an outage the pool reconnects on
# the first request rather than at the end of a long exponential backoff.
RECONNECT_TIMEOUT_S = 5.0


# Statements a pooled connection keeps prepared for the helpers below; past it, queries run unnamed. The
# service's named queries number a few hundred, so a working set fits; made-up SQL cannot grow it without bound.
PREPARED_MAX = 512
_TUPLES_OK, _FATAL = pq.ExecStatus.TUPLES_OK, pq.ExecStatus.FATAL_ERROR
_IDLE = pq.TransactionStatus.IDLE
# A table changed under a prepared statement (a migration by a newer release), or the session's statements
# dropped by a DEALLOCATE ALL not seen here: prepared again and, outside a transaction, run again.
_STALE = ("0A000", "cached plan must not change result type")
_GONE = "26000"  # invalid_sql_statement_name: "prepared statement ... does not exist"


class Connection(psycopg.AsyncConnection):
    """A pooled connection whose helper queries skip psycopg's cursor (see `_run`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.statements: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self.named = 0
        self.transformer: Transformer | None = None  # made at first use; keeps its dumpers warm (~6 µs a query)

    def _deallocate(self, name: bytes | None) -> Any:
        # Once psycopg has prepared statements of its own, it ends each rollback and DDL with DEALLOCATE ALL (a
        # caution: Postgres keeps them): ours go too.
        if name is None:
            self.statements.clear()
        return super()._deallocate(name)


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


def create_pool(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    timeout: float = POOL_TIMEOUT_S,
    reconnect_timeout: float = RECONNECT_TIMEOUT_S,
    statement_timeout_s: float = 0,
    idle_in_transaction_timeout_s: float = 0,
) -> AsyncConnectionPool:
    """A pool whose connections autocommit (reads); writes open an explicit transaction. The time limits (0: none)
    are the connections' own settings from their start (so RESET returns to them)."""
    return Pool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        timeout=timeout,
        reconnect_timeout=reconnect_timeout,
        connection_class=Connection,
        kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": CONNECT_TIMEOUT_S,
                "options": _options(url, statement_timeout_s=statement_timeout_s,
                                    idle_in_transaction_timeout_s=idle_in_transaction_timeout_s)},
    )


def _options(url: str, *, statement_timeout_s: float, idle_in_transaction_timeout_s: float) -> str:
    """The URL's own `options`, then the pool's time limits (in ms)."""
    own = conninfo_to_dict(url).get("options") or ""
    limits = (f"-c statement_timeout={int(statement_timeout_s * 1000)} "
              f"-c idle_in_transaction_session_timeout={int(idle_in_transaction_timeout_s * 1000)}")
    return f"{own} {limits}".strip()


def _direct(conn: Conn, params: Any) -> bool:
    """Whether a query can take `_run`: a pooled autocommit connection giving dicts, parameters, no pipeline."""
    return (params is not None and isinstance(conn, Connection) and conn.autocommit
            and conn._pipeline is None and conn.row_factory is dict_row)


async def _run(conn: Connection, sql: str, params: Any, *, retry: bool = True) -> tuple[Transformer, pq.abc.PGresult]:
    """One statement, prepared on this connection the first time it is seen.

    psycopg's cursor does the same through a cursor object, a prepare-threshold ledger and a row maker per
    call, ~25 µs of Python per query; this is the same libpq exchange with psycopg's own adapters and errors,
    without them. In a transaction it works alike: the transaction is the connection's.
    """
    tx = conn.transformer or _transformer(conn)
    query = PostgresQuery(tx)
    query.convert(sql, params)
    key = (query.query, query.types)
    pgconn = conn.pgconn
    async with conn.lock:
        conn._check_connection_ok()
        name = conn.statements.get(key)
        if name is None and len(conn.statements) < PREPARED_MAX:
            conn.named += 1
            fresh = b"_collab_%d" % conn.named
            pgconn.send_prepare(fresh, query.query, param_types=query.types)
            (prepared,) = await conn.wait(generators.execute(pgconn))
            if prepared.status == _FATAL:
                raise errors.error_from_result(prepared, encoding=tx.encoding)
            conn.statements[key] = name = fresh
        if name is None:
            pgconn.send_query_params(query.query, query.params, param_formats=query.formats,
                                     param_types=query.types)
        else:
            pgconn.send_query_prepared(name, query.params, param_formats=query.formats)
        results = await conn.wait(generators.execute(pgconn))
    result = results[-1]
    if result.status == _FATAL:
        error = errors.error_from_result(result, encoding=tx.encoding)
        if name is not None and _forget(conn, key, error) and retry \
                and pgconn.transaction_status == pq.TransactionStatus.IDLE:
            return await _run(conn, sql, params, retry=False)  # nothing ran: no transaction to spoil
        raise error
    tx.set_pgresult(result)
    return tx, result


def _transformer(conn: Connection) -> Transformer:
    # One per connection, as a cursor keeps one for its queries: rows are read from it (`_rows`) before the
    # connection's task can await again, so no other query comes between.
    conn.transformer = Transformer(conn)
    return conn.transformer


def _forget(conn: Connection, key: tuple[bytes, tuple[int, ...]], error: psycopg.Error) -> bool:
    """Forget what a failed prepared statement shows to be stale (prepared again next time); whether it was."""
    if error.sqlstate == _GONE:
        conn.statements.clear()  # the session's statements were dropped behind our back: all of them
        return True
    if (error.sqlstate, error.diag.message_primary) == _STALE:
        conn.statements.pop(key, None)
        return True
    return False


def _rows(tx: Transformer, result: pq.abc.PGresult, count: int) -> list[dict[str, Any]]:
    """The first `count` rows as dicts, as the pool's dict_row makes them."""
    if result.status != _TUPLES_OK:
        raise psycopg.ProgrammingError(f"the last operation didn't produce records (command status: "
                                       f"{(result.command_status or b'').decode()})")
    names = [result.fname(i).decode(tx.encoding) for i in range(result.nfields)]
    return tx.load_rows(0, min(count, result.ntuples), lambda values: dict(zip(names, values)))


async def fetch_one(conn: Conn, sql: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    try:
        if not _direct(conn, params):
            cur = await conn.execute(sql, params)
            return await cur.fetchone()
        rows = _rows(*await _run(conn, sql, params), 1)
    except psycopg.OperationalError as exc:
        raise _named(exc, sql)
    return rows[0] if rows else None


async def fetch_all(
    conn: Conn, sql: str, params: dict[str, Any] | None = None, *, prepare: bool | None = None
) -> list[dict[str, Any]]:
    try:
        if prepare is False or not _direct(conn, params):
            cur = await conn.execute(sql, params, prepare=prepare)
            return await cur.fetchall()
        tx, result = await _run(conn, sql, params)
    except psycopg.OperationalError as exc:
        raise _named(exc, sql)
    return _rows(tx, result, result.ntuples)


async def execute(conn: Conn, sql: str, params: dict[str, Any] | None = None) -> int:
    try:
        if not _direct(conn, params):
            cur = await conn.execute(sql, params)
            return cur.rowcount
        _, result = await _run(conn, sql, params)
    except psycopg.OperationalError as exc:
        raise _named(exc, sql)
    if result.status == _TUPLES_OK:
        return result.ntuples
    count = result.command_tuples
    return count if count is not None else -1


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
