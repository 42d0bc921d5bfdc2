"""What a request or a job needs from the process: settings, pool, Redis, keyring, clock; and how to build it.

The API, the worker and the CLI all build their Services here, so none of them loads another's entry point.
"""

import time
from dataclasses import dataclass, field
from typing import Callable

from arq import ArqRedis
from fastapi import Request
from psycopg_pool import AsyncConnectionPool
from redis.exceptions import RedisError

from collab.config import Settings
from collab.kit import embedded
from collab.kit.credentials import CredentialCache
from collab.kit.crypto import Keyring
from collab.kit.db import create_pool, selftest
from collab.kit.db.migrate import migrate
from collab.kit.looplag import LoopLag
from collab.kit.ratelimit import Reservations
from collab.kit.redisclient import RedisTarget, Sentinels, redis_client, refuse_cluster
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
    read_pool: AsyncConnectionPool | None = None  # a hot standby's, for search (COLLAB_DATABASE_READ_URL)
    loop_lag: LoopLag | None = None  # this process's event-loop lag (kit/looplag.py), started with the Services

    @property
    def reader(self) -> AsyncConnectionPool:
        """The pool for reads that tolerate a replica's lag (search): the standby's where one is set."""
        return self.read_pool or self.pool

    def now_ms(self) -> int:
        """The current time in epoch milliseconds, from the injectable clock."""
        return int(self.clock() * 1000)


async def services(request: Request) -> Services:
    """FastAPI dependency: the process's Services (async: a plain def would hop to the thread pool per request)."""
    return request.app.state.services


async def build_services(settings: Settings) -> Services:
    """Connect to Postgres and Redis (embedded ones when none is configured) and migrate."""
    settings.require_servers()
    database_url = settings.database_url or embedded.start_postgres(settings.data_dir)
    target = redis_target(settings) or embedded.EmbeddedRedis(settings.data_dir).start()
    await prepare_database(settings, database_url)
    pool, read_pool = _pool(settings, database_url), None
    await pool.open()
    if settings.database_read_url:
        read_pool = _pool(settings, settings.database_read_url)
        await read_pool.open()
    keyring = Keyring(settings.resolved_secret_key(), settings.secret_key_previous)
    redis = redis_client(target, timeout_s=settings.redis_timeout_s, cooldown_s=settings.redis_cooldown_s)
    try:
        await refuse_cluster(redis)
    except (RedisError, OSError):
        pass  # Redis is down: the API starts not ready and waits for it (a cluster is refused at the next start)
    svc = Services(settings=settings, pool=pool, redis=redis, keyring=keyring, read_pool=read_pool,
                   credentials=CredentialCache(ttl_s=settings.auth_cache_ttl_s))
    start_flusher(svc)
    svc.loop_lag = LoopLag(stall_s=settings.loop_stall_ms / 1000).start()
    return svc


def _pool(settings: Settings, url: str) -> AsyncConnectionPool:
    return create_pool(url, min_size=settings.db_pool_min, max_size=settings.db_pool_max,
                       timeout=settings.db_pool_timeout_s, statement_timeout_s=settings.db_statement_timeout_s,
                       idle_in_transaction_timeout_s=settings.db_idle_in_transaction_timeout_s,
                       pooler=settings.db_pooler)


def redis_target(settings: Settings) -> RedisTarget | None:
    """Where the configured Redis is: its URL, or its Sentinels; None when none is (the embedded one starts)."""
    if settings.redis_sentinels:
        return Sentinels(settings.sentinel_hosts(), settings.redis_sentinel_master, password=settings.redis_password,
                         sentinel_password=settings.redis_sentinel_password, tls=settings.redis_tls)
    return settings.redis_url


async def prepare_database(settings: Settings, database_url: str, *, retry_known: bool = False) -> selftest.Versions:
    """Check pgvector, migrate, then run the vector self-test (raises selftest.SelfTestFailed: refuse to start)."""
    await selftest.versions(database_url)
    await migrate(database_url)
    server_log = None if settings.database_url else embedded.server_log(settings.data_dir)
    return await selftest.check(database_url, embedded_log=server_log, retry_known=retry_known)


async def close_services(svc: Services) -> None:
    """Close what build_services opened."""
    if svc.loop_lag is not None:
        svc.loop_lag.stop()
    await stop_flusher(svc)  # the last counts, while the pool is still open
    await svc.pool.close()
    if svc.read_pool is not None:
        await svc.read_pool.close()
    if svc.redis is not None:
        await svc.redis.aclose()
