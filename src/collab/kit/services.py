"""What a request or a job needs from the process: settings, pool, Redis, keyring, clock; and how to build it.

The API, the worker and the CLI all build their Services here, so none of them loads another's entry point.
"""

import time
from dataclasses import dataclass, field
from typing import Callable

from arq import ArqRedis
from fastapi import Request
from psycopg_pool import AsyncConnectionPool

from collab.config import Settings
from collab.kit import embedded
from collab.kit.credentials import CredentialCache
from collab.kit.crypto import Keyring
from collab.kit.db import create_pool, selftest
from collab.kit.db.migrate import migrate
from collab.kit.ratelimit import Reservations
from collab.kit.redisclient import redis_client
from collab.kit.usage import Usage, start_flusher, stop_flusher


@dataclass
class Services:
    """Process-wide handles, built once at start; tests swap the clock."""

    settings: Settings
    pool: AsyncConnectionPool
    redis: ArqRedis | None
    keyring: Keyring
    clock: Callable[[], float] = field(default=time.time)
    usage: Usage = field(default_factory=Usage)  # this process's counters not yet flushed
    # API-key credentials verified a moment ago (trusted only while the API's listener is subscribed).
    credentials: CredentialCache = field(default_factory=lambda: CredentialCache(ttl_s=0))
    rate_limits: Reservations = field(default_factory=Reservations)  # API-key rate-limit hits reserved in Redis

    def now_ms(self) -> int:
        """The current time in epoch milliseconds, from the injectable clock."""
        return int(self.clock() * 1000)


async def services(request: Request) -> Services:
    """FastAPI dependency: the process's Services (async: a plain def would hop to the thread pool per request)."""
    return request.app.state.services


async def build_services(settings: Settings) -> Services:
    """Connect to Postgres and Redis (embedded ones when no URL is configured) and migrate."""
    database_url = settings.database_url or embedded.start_postgres(settings.data_dir)
    redis_url = settings.redis_url or embedded.EmbeddedRedis(settings.data_dir).start()
    await prepare_database(settings, database_url)
    pool = create_pool(database_url, min_size=settings.db_pool_min, max_size=settings.db_pool_max,
                       timeout=settings.db_pool_timeout_s, statement_timeout_s=settings.db_statement_timeout_s,
                       idle_in_transaction_timeout_s=settings.db_idle_in_transaction_timeout_s)
    await pool.open()
    keyring = Keyring(settings.resolved_secret_key(), settings.secret_key_previous)
    redis = redis_client(redis_url, timeout_s=settings.redis_timeout_s, cooldown_s=settings.redis_cooldown_s)
    svc = Services(settings=settings, pool=pool, redis=redis, keyring=keyring,
                   credentials=CredentialCache(ttl_s=settings.auth_cache_ttl_s))
    start_flusher(svc)
    return svc


async def prepare_database(settings: Settings, database_url: str, *, retry_known: bool = False) -> selftest.Versions:
    """Check pgvector, migrate, then run the vector self-test (raises selftest.SelfTestFailed: refuse to start)."""
    await selftest.versions(database_url)
    await migrate(database_url)
    server_log = None if settings.database_url else embedded.server_log(settings.data_dir)
    return await selftest.check(database_url, embedded_log=server_log, retry_known=retry_known)


async def close_services(svc: Services) -> None:
    """Close what build_services opened."""
    await stop_flusher(svc)  # the last counts, while the pool is still open
    await svc.pool.close()
    if svc.redis is not None:
        await svc.redis.aclose()
