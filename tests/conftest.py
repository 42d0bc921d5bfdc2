"""Test harness: embedded Postgres and Redis, the real app served over HTTP on 127.0.0.1, a live worker.

Everything runs in one background event loop (the "server loop"); tests talk to it over real HTTP
and may run coroutines in it with `live.run(...)`. Each test isolates itself by creating its own
workspace (a fresh tenant), so no state is shared between tests.
"""

import os
import shutil
import tempfile
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.rows import dict_row

from collab.config import Settings
from collab.kit import embedded
from collab.testing.contract import Contract
from collab.testing.fakes import FakeProviders
from collab.testing.receiver import Receiver
from collab.testing.live import Live

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
        secret_key="test-secret-key-0123456789-abcdefghij",
        log_json=False,
        rate_limit_workspace_create="10/hour",
        rate_limit_workspace_get="60/minute",
        llm_retry_backoff_s=0.01,
        llm_call_timeout_s=1.5,
        ask_ai_timeout_s=10,
        embedding_refresh_s=0,
        # The webhook receiver of the tests listens on 127.0.0.1; SSRF tests switch this off themselves.
        webhooks_allow_private_targets=True,
    )
    if fake is not None:
        for provider in ("openai", "anthropic", "gemini"):
            values[f"{provider}_base_url"] = fake.base_url(provider)
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="session")
def live(servers, fake_providers):
    """The app and a worker, served on 127.0.0.1 for the whole session."""
    settings = make_settings(servers, fake_providers)
    # The worker loads (first: exports) the embedding model in the background; do it before the tests start, so
    # that CPU-bound export does not race the first tests' short provider timeouts in this same process.
    from collab.embeddings.model import load

    load(settings.embedding_model, cache_dir=settings.models_dir)
    service = Live(settings).start()
    yield service
    service.stop()


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
