"""The whole cluster on one machine: two Postgres, three Redis + Sentinel, HAProxy, two API and two worker
processes, each on a node of its own (topology.py), and the fake model providers in the root namespace.

Started once per test module; a test that breaks something puts it back (restarts, heals) so the next one starts
from a healthy cluster (`restore`).
"""

import os
import secrets
import shutil
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row
from redis.sentinel import MasterNotFoundError
from redis.sentinel import Sentinel as SentinelClient

from cluster.nodes import MASTER_NAME, HAProxy, Postgres, Redis, Sentinel, server_binaries
from cluster.topology import Node, Process, Topology
from support.faults_env import wait_for

# The last byte of each node's address on the bridge (the root namespace is .1).
NODES = {"pg1": 11, "pg2": 12, "r1": 21, "r2": 22, "r3": 23, "lb": 30, "a1": 41, "a2": 42, "w1": 51, "w2": 52}
HERE = Path(__file__).resolve().parent
DRAIN_S = 3.0  # short for the test; HAProxy notices a draining node within inter 1 s x fall 2
LEASE_S = 3.0  # the workers' lease: a silent worker's jobs run again about this long (+ a reap tick) later
REPORT: list[str] = []  # what the measurements print at the end of the run (conftest.py)


def collab_command() -> str:
    """The `collab` script of the environment running the tests."""
    beside = Path(sys.executable).with_name("collab")
    return str(beside) if beside.exists() else (shutil.which("collab") or "collab")


class Collab:
    """One `collab api` or `collab worker` process on its node; started again in place after a fault."""

    def __init__(self, cluster: "Cluster", node: Node, kind: str):
        self.cluster, self.node, self.kind = cluster, node, kind
        self.starts = 0
        self.process: Process | None = None
        self.trace: Path | None = None
        self.readiness = ""  # what /readyz said last

    @property
    def url(self) -> str:
        return f"http://{self.node.ip}:8000"

    def start(self) -> "Collab":
        self.starts += 1
        if self.kind == "api":
            argv = [collab_command(), "api", "--host", self.node.ip, "--port", "8000", "--workers", "1"]
        else:
            self.trace = self.node.dir / f"worker-{self.starts}.trace"
            argv = [sys.executable, str(HERE / "worker_main.py"), str(self.trace), "worker"]
        self.process = self.node.spawn(f"{self.kind}-{self.starts}", argv, env=self.cluster.env(self.node))
        return self

    def ready(self) -> bool:
        assert self.process is not None
        if not self.process.alive():
            raise AssertionError(f"{self.kind} on {self.node.name} exited ({self.process.popen.returncode}); "
                                 f"log:\n{self.process.tail()}")
        if self.kind == "worker":  # its start-up crons ran: it polls its queues
            return any(line.startswith("cron ") for line in self.traced())
        try:
            response = httpx.get(self.url + "/readyz", timeout=3)
        except httpx.HTTPError as exc:
            self.readiness = repr(exc)
            return False
        self.readiness = response.text
        return response.status_code == 200

    def wait_ready(self, timeout: float = 90) -> None:
        self.readiness = ""
        try:
            wait_for(self.ready, timeout=timeout, what=f"{self.kind} on {self.node.name} to be ready", every=0.1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; /readyz answered: {self.readiness[:500]}") from None

    def traced(self) -> list[str]:
        """The lines this worker process wrote to its trace (worker_main.py)."""
        try:
            return self.trace.read_text().splitlines() if self.trace else []
        except FileNotFoundError:
            return []

    def log_lines(self) -> list[str]:
        """Every log line of every start of this process kind on this node."""
        lines = []
        for path in sorted(self.node.dir.glob(f"{self.kind}-*.log")):
            lines += path.read_text(errors="replace").splitlines()
        return lines


class Cluster:
    """The servers and processes of the cluster, and what the tests read and break through."""

    def __init__(self, root: Path):
        self.root = root
        # First, before any namespace or server: the Postgres nodes' binaries where their system user reaches them.
        binaries = server_binaries(root / "postgres")
        self.password = secrets.token_urlsafe(16)
        self.secret = secrets.token_urlsafe(48)  # one COLLAB_SECRET_KEY for every process (48 bytes and more)
        self.topology = Topology(root, NODES)
        self.fake: Any = None
        try:
            t = self.topology
            subnet = str(t.subnet)
            self.pg = {
                n: Postgres(t[n], password=self.password, subnet=subnet, binaries=binaries)
                for n in ("pg1", "pg2")
            }
            self.primary, self.standby = self.pg["pg1"], self.pg["pg2"]
            self.redis = {n: Redis(t[n]) for n in ("r1", "r2", "r3")}
            self.sentinels = {n: Sentinel(t[n]) for n in ("r1", "r2", "r3")}
            self.lb = HAProxy(t["lb"], [t["a1"], t["a2"]])
            self.apis = {n: Collab(self, t[n], "api") for n in ("a1", "a2")}
            self.workers = {n: Collab(self, t[n], "worker") for n in ("w1", "w2")}
        except BaseException:
            self.topology.close()
            raise

    # --- start-up ---------------------------------------------------------------------------------------------

    def start(self) -> "Cluster":
        """Every server, then a cold start of the four collab processes at once on the empty database."""
        try:
            self._start_fake()
            master = self.redis["r1"].start()
            for name in ("r2", "r3"):
                self.redis[name].start(master=master.ip)
            for sentinel in self.sentinels.values():
                sentinel.start(master.ip)
            self.lb.start()
            self._start_postgres()
            self.wait_redis()
            self.lb.wait_ready()
            for process in self.collab():
                process.start()
            for process in self.collab():
                process.wait_ready()
            self.wait_balanced()
        except BaseException:
            self.close()
            raise
        return self

    def _start_fake(self) -> None:
        from collab.testing.fakes import FakeProviders

        # The fake providers listen on the root namespace's bridge address, where the workers reach them.
        self.fake = FakeProviders()
        self.fake.sock.close()
        self.fake.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.fake.sock.bind((self.topology.host_ip, 0))
        self.fake.root = f"http://{self.topology.host_ip}:{self.fake.sock.getsockname()[1]}"
        self.fake.start()

    def _start_postgres(self) -> None:
        """pg1 primary with an empty `collab` database, then pg2 its synchronous standby from a base backup."""
        pg1, pg2 = self.pg["pg1"], self.pg["pg2"]
        pg1.initdb()
        pg1.start().wait_ready()
        with pg1.connect("postgres") as conn:
            conn.execute("create database collab")
        # Before the base backup, as a real setup would: the standby then inherits the setting (its trap, when
        # promoted, is what Postgres.promote clears).
        pg1.require_sync_standby()
        pg2.basebackup(pg1)
        pg2.start().wait_ready()
        wait_for(lambda: pg1.sync_standbys() == [pg2.ip], timeout=60, what="pg2 to stream synchronously from pg1")

    def wait_redis(self, timeout: float = 60) -> None:
        """Every Sentinel agrees on one master, which has two replicas, and knows the two other Sentinels."""

        def agreed():
            seen = [s.master() for s in self.sentinels.values()]
            if any(m is None for m in seen):
                return False
            masters = {m["ip"] for m in seen}
            return (len(masters) == 1 and all(
                int(m["num-slaves"]) == 2 and int(m["num-other-sentinels"]) == 2 and m["flags"] == "master"
                for m in seen) and (master := self.redis_master()) is not None and master.role() == "master")

        wait_for(agreed, timeout=timeout, what="the Sentinels to agree on a master with two replicas", every=0.2)

    def wait_balanced(self, timeout: float = 30) -> None:
        """HAProxy sends to both API nodes."""
        for backend in ("api", "realtime"):
            for server in ("api1", "api2"):
                self.lb.wait_status(server, "UP", timeout=timeout, backend=backend)

    # --- what the processes are told ---------------------------------------------------------------------------

    @property
    def database_url(self) -> str:
        hosts = ",".join(f"{pg.ip}:5432" for pg in self.pg.values())
        return f"postgresql://postgres:{self.password}@{hosts}/collab?target_session_attrs=read-write&connect_timeout=3"

    def env(self, node: Node) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
        # One export of the embedding model for every node (the suite's own, else the cluster's).
        env["COLLAB_MODEL_CACHE_DIR"] = os.environ.get("COLLAB_MODEL_CACHE_DIR", str(self.root / "models"))
        settings = {
            "ENV": "production",
            "SECRET_KEY": self.secret,
            "DATA_DIR": str(node.dir),
            "DATABASE_URL": self.database_url,
            "REDIS_SENTINELS": ",".join(f"{s.ip}:26379" for s in self.sentinels.values()),
            "REDIS_SENTINEL_MASTER": MASTER_NAME,
            "DRAIN_S": str(DRAIN_S),
            "WORKER_LEASE_S": str(LEASE_S),
            "LOG_LEVEL": "INFO",
            "LOG_JSON": "true",
            "OPENAI_BASE_URL": self.fake.base_url("openai"),
            "ANTHROPIC_BASE_URL": self.fake.base_url("anthropic"),
            "GEMINI_BASE_URL": self.fake.base_url("gemini"),
            "LLM_RETRY_BACKOFF_S": "0.01",
            # Loaded by the first job that embeds (the re-embed test's), the fast one: seconds, not a minute.
            "EMBEDDING_PRELOAD": "false",
            "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
            # Every workspace of the run is created through the one load balancer address.
            "RATE_LIMIT_WORKSPACE_CREATE": "1000/hour",
            "RATE_LIMIT_WORKSPACE_GET": "1000/minute",
        }
        env.update({f"COLLAB_{k}": v for k, v in settings.items()})
        return env

    # --- reading the cluster -------------------------------------------------------------------------------------

    def collab(self) -> list[Collab]:
        return [*self.apis.values(), *self.workers.values()]

    def http(self, url: str | None = None, **kw: Any) -> httpx.Client:
        """A client of the load balancer (or of `url`)."""
        return httpx.Client(base_url=url or self.lb.url, timeout=kw.pop("timeout", 60), **kw)

    def db(self) -> psycopg.Connection:
        """A connection to whichever Postgres is the primary now (the same multi-host URL the nodes use)."""
        return psycopg.connect(self.database_url, autocommit=True, row_factory=dict_row)

    def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with self.db() as conn:
            return conn.execute(sql, params).fetchall()

    def sentinel_client(self) -> SentinelClient:
        return SentinelClient([(s.ip, 26379) for s in self.sentinels.values()], socket_timeout=2,
                              socket_connect_timeout=2)

    def redis_master(self) -> Redis | None:
        """The Redis the Sentinels name as master now (None while none is: the master is down, no failover yet)."""
        try:
            address, _ = self.sentinel_client().discover_master(MASTER_NAME)
        except MasterNotFoundError:
            return None
        return next(r for r in self.redis.values() if r.ip == address)

    # --- putting it back -----------------------------------------------------------------------------------------

    def restore(self) -> None:
        """Heal partitions, wake frozen processes, start dead ones again; then wait until all of it serves."""
        self.topology.heal()
        master = wait_for(self.redis_master, timeout=30, what="the Sentinels to name a master")
        for name, server in self.redis.items():
            if not server.process.alive():
                server.start(master=master.ip)
            if not self.sentinels[name].process.alive():
                self.sentinels[name].process.start()
        self.wait_redis()
        for process in self.collab():
            if process.process is not None and process.process.alive():
                process.process.signal(signal.SIGCONT)  # a no-op unless a test froze it
            else:
                process.start()
        for process in self.collab():
            process.wait_ready()
        self.wait_balanced()

    def close(self) -> None:
        try:
            if self.fake is not None:
                self.fake.stop()
        finally:
            self.topology.close()
