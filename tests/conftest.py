"""Test harness: embedded Postgres and Redis, the real app served over HTTP on 127.0.0.1, a live worker.

Everything runs in one background event loop (the "server loop"); tests talk to it over real HTTP
and may run coroutines in it with `live.run(...)`. Each test isolates itself by creating its own
workspace (a fresh tenant), so no state is shared between tests.
"""

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from collab.kit import embedded
from collab.testing.contract import Contract
from collab.testing.fakes import FakeProviders
from collab.testing.live import Live
from collab.testing.receiver import Receiver
from support import tripwire
from support.settings import make_settings

# One export of the embedding model for every run of the suite on this machine: the session's worker, the fault
# drills' worker processes and tests that load the model directly all read it from here (Settings takes COLLAB_*
# from the environment). The export is named by the weights' content hash and written by rename, so runs share it
# safely, and only the first pays for it (~18 s on 2 cores; a cached load is ~1.7 s).
if "COLLAB_MODEL_CACHE_DIR" not in os.environ:
    _cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    os.environ["COLLAB_MODEL_CACHE_DIR"] = str(_cache / "collab" / "test-models")


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


@pytest.fixture(autouse=True)
def loop_tripwire(request):
    """Fail a test during which the session's service held its event loop (support/tripwire.py)."""
    if "live" not in request.fixturenames or request.node.get_closest_marker("holds_loop"):
        yield
        return
    lag = request.getfixturevalue("live").svc.loop_lag
    started = time.monotonic()
    yield
    tripwire.check(lag, started)


@pytest.fixture(scope="session")
def fake_providers():
    """Fake OpenAI, Anthropic and Gemini servers on 127.0.0.1 for the whole session."""
    fake = FakeProviders().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def model_client():
    """litellm, imported before the first test that calls a model (a worker process imports it at start; the
    session's worker leaves it to the tests that need it, so runs without them skip seconds of imports)."""
    from collab.llm.client import load_litellm

    return load_litellm()


@pytest.fixture
def llm(fake_providers, live, model_client):
    """The fake providers, with scripts and recordings cleared for this test."""
    fake_providers.reset()
    yield fake_providers
    fake_providers.reset()


@pytest.fixture(scope="session")
def live(servers, fake_providers):
    """The app and a worker, served on 127.0.0.1 for the whole session."""
    service = Live(make_settings(servers, fake_providers)).start()
    # A worker that loads the embedding model at start-up (in the background) has it loaded before the tests
    # start, so that CPU-bound load (first: export) does not race the first tests' short provider timeouts in this
    # same process. The session's worker is told not to (`embedding_preload`): the tests that need the model ask
    # for `embedding_model`.
    loading = _started(service).ctx.get("model_loading")
    if loading is not None:
        service.run(asyncio.wait([loading]), timeout=600)
    service.run(_first_requests(fake_providers.root, service.url), timeout=60)
    yield service
    service.stop()


async def _first_requests(root: str, url: str) -> None:
    """Once before the tests, what a process does lazily the first time: its first request out imports the HTTP
    client's connection code, its first file answer anyio's file module (rewritten by pytest's assertion hook, since
    anyio is a pytest plugin: 0.7 s). On the service's loop, the tripwire would pin them on whichever test came
    first."""
    async with httpx.AsyncClient() as c:
        await c.get(f"{root}/_stats")
        await c.get(f"{url}/static-docs/favicon.png")


def _started(service: Live):
    """The search lane of the service's worker, once its start-up has run."""
    lane = service.worker["search"]  # every lane of the process shares one holder of the model
    deadline = time.monotonic() + 60
    while "active_model" not in lane.ctx:
        assert time.monotonic() < deadline, "the session's worker did not start"
        time.sleep(0.05)
    return lane


@pytest.fixture(scope="session")
def embedding_model(live):
    """The embedding model, loaded in the session's worker (and registered as the active model) before the first
    test that asks for it: tests that derive judgments, embed or search use it (`pytestmark =
    pytest.mark.usefixtures("embedding_model")`), and runs without them never load it. Loaded here, before the
    test starts, the load (first: the export) does not race that test's or the next tests' short deadlines."""
    from collab.judgments.tasks import active_embedder

    return live.run(active_embedder(_started(live).ctx), timeout=600)


@pytest.fixture(scope="session")
def contract(live):
    """The app's OpenAPI document as validators (every `client` response is checked against it)."""
    return Contract(live.app.openapi())


@pytest.fixture
def client(live, contract):
    with httpx.Client(base_url=live.url, timeout=30, event_hooks={"response": [contract.check]}) as c:
        yield c


@pytest.fixture
def receiver():
    """A webhook receiver on 127.0.0.1 for one test."""
    r = Receiver().start()
    yield r
    r.stop()


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


@pytest.fixture
def tune(live):
    """Set service settings for one test; restored after it."""
    settings = live.svc.settings
    saved: dict = {}

    def set_(**values):
        for name, value in values.items():
            saved.setdefault(name, getattr(settings, name, None))
            object.__setattr__(settings, name, value)

    yield set_
    for name, value in saved.items():
        object.__setattr__(settings, name, value)


@pytest.fixture
def sdk(live, monkeypatch):
    """velt-py pointed at this service: the one line a team changes (README, "Moving from Velt")."""
    from velt_py import VeltSDK
    from velt_py.services.api.base_api_service import BaseApiService
    from velt_py.services.api.token_service import TokenService

    monkeypatch.setattr(BaseApiService, "VELT_API_BASE_URL", live.url)
    monkeypatch.setattr(TokenService, "VELT_API_URL", f"{live.url}/v2/auth/token/get")

    def make(t, **more):
        return VeltSDK.initialize({"apiKey": t.api_key, "authToken": t.auth_token, **more})

    return make
