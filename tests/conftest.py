"""Test harness: embedded Postgres and Redis, the real app served over HTTP on 127.0.0.1, a live worker.

Everything runs in one background event loop (the "server loop"); tests talk to it over real HTTP
and may run coroutines in it with `live.run(...)`. Each test isolates itself by creating its own
workspace (a fresh tenant), so no state is shared between tests.
"""

import asyncio
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import httpx
import psycopg
import pytest
import uvicorn
from psycopg.rows import dict_row

from collab.app import build_services, close_services, create_app
from collab.config import Settings
from collab.kit import embedded
from collab.worker import make_worker
from fakes import FakeProviders


class Live:
    """The running service: base URL, settings, services, and a way to run coroutines in its loop."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.error: BaseException | None = None

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        except BaseException as exc:  # surfaced by start()
            self.error = exc
            self.ready.set()

    async def _serve(self) -> None:
        self.svc = await build_services(self.settings)
        self.app = create_app(self.settings, svc=self.svc)
        config = uvicorn.Config(
            self.app,
            log_config=None,
            access_log=False,
            proxy_headers=True,
            forwarded_allow_ips="127.0.0.1",
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.worker = make_worker(self.settings, self.svc, redis_url=self.settings.redis_url, handle_signals=False)
        worker_task = asyncio.ensure_future(self.worker.main())
        serve_task = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            await asyncio.sleep(0.01)
        self.ready.set()
        await serve_task
        await self.worker.close()
        worker_task.cancel()
        await close_services(self.svc)

    def start(self) -> "Live":
        self.thread.start()
        self.ready.wait(60)
        if self.error:
            raise self.error
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def run(self, coro, timeout: float = 30):
        """Run a coroutine in the server loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


@pytest.fixture(scope="session")
def servers():
    """Embedded Postgres and Redis in a fresh temporary directory for this test run."""
    root = Path(tempfile.mkdtemp(prefix="collab-test-"))
    database_url = embedded.start_postgres(root, database="collab_test")
    redis = embedded.EmbeddedRedis(root)
    redis_url = redis.start()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("alter database collab_test set synchronous_commit = off")
    yield {"database_url": database_url, "redis_url": redis_url, "root": root}
    redis.stop()
    embedded.stop_postgres()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def fake_providers():
    """Fake OpenAI, Anthropic and Gemini servers on 127.0.0.1 for the whole session."""
    fake = FakeProviders().start()
    yield fake
    fake.stop()


@pytest.fixture
def llm(fake_providers, live):
    """The fake providers, with scripts and recordings cleared for this test."""
    fake_providers.reset()
    yield fake_providers
    fake_providers.reset()


def make_settings(servers, fake=None, **overrides) -> Settings:
    values = dict(
        database_url=servers["database_url"],
        redis_url=servers["redis_url"],
        data_dir=servers["root"],
        secret_key="test-secret-key-0123456789",
        log_json=False,
        rate_limit_workspace_create="10/hour",
        rate_limit_workspace_get="60/minute",
        llm_retry_backoff_s=0.01,
        llm_call_timeout_s=1.5,
        ask_ai_timeout_s=10,
    )
    if fake is not None:
        for provider in ("openai", "anthropic", "gemini"):
            values[f"{provider}_base_url"] = fake.base_url(provider)
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session")
def live(servers, fake_providers):
    """The app and a worker, served on 127.0.0.1 for the whole session."""
    service = Live(make_settings(servers, fake_providers)).start()
    yield service
    service.stop()


@pytest.fixture
def client(live):
    with httpx.Client(base_url=live.url, timeout=30) as c:
        yield c


@pytest.fixture
def db(servers):
    """A direct connection for asserting on persisted rows."""
    with psycopg.connect(servers["database_url"], autocommit=True, row_factory=dict_row) as conn:
        yield conn


@pytest.fixture
def clock(live):
    """A settable clock injected into the running service; restored after the test."""
    box = {"now": 1_800_000_000.0}
    original = live.svc.clock
    live.svc.clock = lambda: box["now"]
    yield box
    live.svc.clock = original
