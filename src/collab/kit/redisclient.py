"""The Redis client of the API and the worker: lazy connections that stop waiting on a Redis that is gone, to one
Redis by URL or to the master a set of Sentinels names (docs/several-machines.md)."""

import asyncio
from dataclasses import dataclass
from time import monotonic
from typing import Any

from arq import ArqRedis
from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from collab.config import Misconfigured

# Redis answers in a millisecond; a command that takes this long means it is gone or frozen.
REDIS_TIMEOUT_S = 2.0
# After Redis failed to answer, every command fails at once for this long instead of waiting again.
REDIS_COOLDOWN_S = 1.0
_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


@dataclass(frozen=True)
class Sentinels:
    """Redis behind Sentinel: the Sentinels' addresses, the master's name, and how to log in to both."""

    hosts: tuple[tuple[str, int], ...]
    master: str
    password: str | None = None
    sentinel_password: str | None = None
    tls: bool = False

    def connect(self, **kwargs: Any) -> Sentinel:
        """A Sentinel client; `kwargs` are the master connections' options (timeouts)."""
        ask = {
            "password": self.sentinel_password, "ssl": self.tls, "socket_timeout": kwargs.get("socket_timeout"),
            "socket_connect_timeout": kwargs.get("socket_connect_timeout")
        }
        return Sentinel(list(self.hosts), sentinel_kwargs=ask, password=self.password, ssl=self.tls, **kwargs)


# Where Redis is: a URL (redis://, rediss://, unix://) or a set of Sentinels.
RedisTarget = str | Sentinels


class FailFast:
    """A Redis connection pool that stops waiting on Redis once it failed to answer (mixed into a redis-py pool).

    Every API-key request counts a rate limit in Redis. Without this, a frozen Redis (accepting connections,
    never answering) made each request wait the socket timeout, and redis-py connects under one pool-wide
    lock, so concurrent requests waited their turn: 10 s, 20 s, 30 s. Now, after a failure, every call fails
    at once for `cooldown_s`; then one call at a time tries Redis again (the others still fail at once) until
    one gets an answer. Callers treat the failure as Redis being down: rate limits fail open, queue calls
    answer UNAVAILABLE, outbox jobs wait in Postgres for the sweep.
    """

    connection_kwargs: dict[str, Any]
    connection_class: Any

    def __init__(self, *args, cooldown_s: float = REDIS_COOLDOWN_S, **kwargs):
        super().__init__(*args, **kwargs)
        self.cooldown_s = cooldown_s
        timeout = self.connection_kwargs.get("socket_timeout") or REDIS_TIMEOUT_S
        self.probe_s = float(timeout) + 1.0
        self.down_until = 0.0  # 0: healthy; else failing, and no call tries Redis before this time
        self.probe_until = 0.0  # one call is trying Redis again; the others fail until it knows
        self.connecting = asyncio.Lock()  # one connection attempt at a time, as redis-py's own get_connection
        base = self.connection_class
        pool = self

        class Connection(base):  # type: ignore[misc, valid-type]

            async def read_response(self, *a, **kw):
                try:
                    response = await super().read_response(*a, **kw)
                except _REDIS_DOWN:
                    pool.trip()
                    raise
                if pool.down_until:
                    pool.recovered()
                return response

            async def send_packed_command(self, *a, **kw):
                try:
                    return await super().send_packed_command(*a, **kw)
                except _REDIS_DOWN:
                    pool.trip()
                    raise

        self.connection_class = Connection

    def trip(self) -> None:
        self.down_until = monotonic() + self.cooldown_s
        self.probe_until = 0.0

    def recovered(self) -> None:
        self.down_until = self.probe_until = 0.0

    def _refuse_while_down(self) -> None:
        now = monotonic()
        if now < self.down_until or now < self.probe_until:
            raise RedisConnectionError("Redis did not answer a moment ago; not waiting on it again yet.")

    async def get_connection(self, command_name=None, *keys, **options):
        # redis-py's own (under a lock of ours), plus the checks: before the lock, and after it (a caller queued
        # behind a connection attempt that just failed fails too, instead of trying again).
        self._refuse_while_down()
        probe = bool(self.down_until)
        if probe:
            self.probe_until = monotonic() + self.probe_s  # this call tries Redis again, alone
        async with self.connecting:
            if not probe:
                self._refuse_while_down()
            connection = self.get_available_connection()
            try:
                await self.ensure_connection(connection)
            except BaseException as exc:
                await self.release(connection)
                if isinstance(exc, _REDIS_DOWN):
                    self.trip()
                raise
        return connection


class FailFastPool(FailFast, ConnectionPool):
    """FailFast on one Redis, by URL."""


class FailFastSentinelPool(FailFast, SentinelConnectionPool):
    """FailFast on the master the Sentinels name: a failover is a failure like any other, then the next probe asks
    the Sentinels again and connects to the new master."""


def connection_pool(target: RedisTarget, *, cooldown_s: float | None = None, **options: Any) -> ConnectionPool:
    """A pool of connections to `target` with redis-py's `options`: FailFast where `cooldown_s` is given."""
    fail_fast = {} if cooldown_s is None else {"cooldown_s": cooldown_s}
    if isinstance(target, Sentinels):
        sentinel = target.connect(**options)
        cls = SentinelConnectionPool if cooldown_s is None else FailFastSentinelPool
        return cls(target.master, sentinel, is_master=True, **sentinel.connection_kwargs, **fail_fast)
    return (ConnectionPool if cooldown_s is None else FailFastPool).from_url(target, **options, **fail_fast)


def redis_client(target: RedisTarget, *, timeout_s: float = REDIS_TIMEOUT_S,
                 cooldown_s: float = REDIS_COOLDOWN_S) -> ArqRedis:
    """An arq Redis client that connects lazily, so the API starts (not ready) while Redis is down."""
    return ArqRedis(connection_pool=connection_pool(target, cooldown_s=cooldown_s, socket_connect_timeout=timeout_s,
                                                    socket_timeout=timeout_s))


def plain_client(target: RedisTarget, *, queue: str) -> ArqRedis:
    """arq's own client for a lane's `queue`: no FailFast, no timeouts (arq's polling and retries are its own)."""
    return ArqRedis(connection_pool=connection_pool(target), default_queue_name=queue)


def subscriber(client: Redis) -> Redis:
    """A client for SUBSCRIBE beside `client`: the same server (or the Sentinels' master), no command timeout (a
    subscriber waits on messages indefinitely) and no FailFast (a subscriber reconnects itself)."""
    base = client.connection_pool
    kwargs = {**base.connection_kwargs, "socket_timeout": None}
    kwargs.pop("connection_pool", None)  # a Sentinel pool's back reference to itself
    # FailFast wraps the driver's connection class to trip on failures: the subscriber takes the driver's own (TLS
    # or not, Sentinel-managed or not).
    cls = base.connection_class.__bases__[0] if isinstance(base, FailFast) else base.connection_class
    if isinstance(base, SentinelConnectionPool):
        return Redis(connection_pool=SentinelConnectionPool(base.service_name, base.sentinel_manager,
                                                            connection_class=cls, **kwargs))
    return Redis(connection_pool=ConnectionPool(connection_class=cls, **kwargs))


async def moved(client: Redis, at: tuple[str, int] | None) -> bool:
    """Whether the Sentinels now name a master other than `at` (never for one Redis by URL). Sentinels that do not
    answer leave the link as it is: a working link is not dropped for them."""
    if not isinstance(client.connection_pool, SentinelConnectionPool):
        return False
    try:
        return await address(client) != at
    except (RedisError, OSError):
        return False


async def address(client: Redis) -> tuple[str, int] | None:
    """Where `client` connects over TCP now: the configured host and port, or the master the Sentinels name."""
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        return await pool.get_master_address()
    kwargs = pool.connection_kwargs
    return None if "path" in kwargs else (kwargs.get("host", "localhost"), kwargs.get("port", 6379))


async def refuse_cluster(client: Redis) -> None:
    """Raise when `client` reaches a Redis Cluster node (arq runs MULTI/EXEC across keys a cluster spreads)."""
    info = await client.info("cluster")
    if info.get("cluster_enabled"):
        raise Misconfigured("Redis Cluster is not supported (arq, the job queue, needs transactions across keys); use "
                            "one Redis with replicas and Sentinel (COLLAB_REDIS_SENTINELS) instead")
