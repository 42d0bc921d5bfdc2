"""The Redis client of the API and the worker: lazy connections that stop waiting on a Redis that is gone."""

import asyncio
from time import monotonic

from arq import ArqRedis
from redis.asyncio import ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# Redis answers in a millisecond; a command that takes this long means it is gone or frozen.
REDIS_TIMEOUT_S = 2.0
# After Redis failed to answer, every command fails at once for this long instead of waiting again.
REDIS_COOLDOWN_S = 1.0
_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


class FailFastPool(ConnectionPool):
    """A Redis connection pool that stops waiting on Redis once it failed to answer.

    Every API-key request counts a rate limit in Redis. Without this, a frozen Redis (accepting connections,
    never answering) made each request wait the socket timeout, and redis-py connects under one pool-wide
    lock, so concurrent requests waited their turn: 10 s, 20 s, 30 s. Now, after a failure, every call fails
    at once for `cooldown_s`; then one call at a time tries Redis again (the others still fail at once) until
    one gets an answer. Callers treat the failure as Redis being down: rate limits fail open, queue calls
    answer UNAVAILABLE, outbox jobs wait in Postgres for the sweep.
    """

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


def redis_client(url: str, *, timeout_s: float = REDIS_TIMEOUT_S, cooldown_s: float = REDIS_COOLDOWN_S) -> ArqRedis:
    """An arq Redis client that connects lazily, so the API starts (not ready) while Redis is down."""
    pool = FailFastPool.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s, cooldown_s=cooldown_s)
    return ArqRedis(connection_pool=pool)
