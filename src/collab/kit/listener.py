"""A Redis pub/sub subscription whose messages are handled the moment they arrive.

Each message is handed on from the event loop's I/O callback itself, not from a task woken later: a message
already in the socket when a request arrives is handled before that request runs. So what another process
announced (and Redis delivered) before it answered its caller is seen here before that caller's next request.
"""

import asyncio
import logging
import ssl
from typing import Any, Callable

import hiredis
from redis.asyncio.connection import SSLConnection, UnixDomainSocketConnection

from collab.kit.redisclient import address, moved

log = logging.getLogger("collab.listener")
PING_S = 5.0  # a link that does not answer a PING within this long is dropped and made again
RETRY_S = 1.0


def _command(*args: str | bytes) -> bytes:
    parts = [a.encode() if isinstance(a, str) else a for a in args]
    return b"".join([b"*%d\r\n" % len(parts)] + [b"$%d\r\n%s\r\n" % (len(p), p) for p in parts])


class _Link(asyncio.Protocol):
    """One connection: RESP replies parsed as bytes arrive, each handed to the listener at once."""

    def __init__(self, listener: "Listener"):
        self.listener = listener
        self.reader = hiredis.Reader()
        self.closed = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.pinged = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            if not self.listener._reply(reply):
                assert self.transport is not None  # connection_made came first
                self.transport.abort()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        if self.listener._link is self:
            self.listener._set_live(False)  # at once: a request must not trust the cache while nothing arrives
        if not self.closed.done():
            self.closed.set_result(exc)


class Listener:
    """Subscribes to `channel` on a connection of its own (reconnecting when it is lost).

    `on_message(data)` gets each message; `on_live(live)` is told True once subscribed and False whenever
    messages may have been missed (not subscribed yet, link lost, Redis not answering a PING).
    """

    def __init__(self, redis: Any, channel: str, *, on_message: Callable[[bytes], None],
                 on_live: Callable[[bool], None], ping_s: float = PING_S, retry_s: float = RETRY_S):
        self.redis = redis  # the client whose server and credentials it uses (None: nothing to listen to)
        self.channel = channel.encode()
        self.on_message, self.on_live, self.ping_s, self.retry_s = on_message, on_live, ping_s, retry_s
        self.live = False
        self._pongs = 0
        self._link: _Link | None = None  # the current connection
        self._task: asyncio.Task | None = None
        self._at: tuple[str, int] | None = None  # the address the current link connected to

    async def start(self) -> None:
        if self.redis is not None:
            self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._set_live(False)

    def _set_live(self, live: bool) -> None:
        if live != self.live:
            self.live = live
            self.on_live(live)

    def _reply(self, reply: Any) -> bool:
        """Handle one reply; False when the link must be dropped."""
        if isinstance(reply, hiredis.ReplyError):
            log.warning("listener on %s refused by Redis: %s", self.channel.decode(), reply)
            return False
        if isinstance(reply, list) and reply:
            kind = reply[0]
            if kind == b"message" and len(reply) == 3:
                self.on_message(reply[2])
            elif kind == b"subscribe":
                self._set_live(True)
            elif kind == b"pong":
                self._pongs += 1
        return True

    async def _connect(self) -> _Link:
        loop, pool = asyncio.get_running_loop(), self.redis.connection_pool
        kw, kind = pool.connection_kwargs, pool.connection_class
        timeout = kw.get("socket_connect_timeout") or PING_S
        at = self._at = await address(self.redis)  # the Sentinels' master, asked again at each connect
        if at is None or issubclass(kind, UnixDomainSocketConnection):
            made = loop.create_unix_connection(lambda: _Link(self), kw["path"])
        else:
            context = None
            if issubclass(kind, SSLConnection):
                context = ssl.create_default_context(cafile=kw.get("ssl_ca_certs"))
                if kw.get("ssl_cert_reqs") in ("none", ssl.CERT_NONE):
                    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            made = loop.create_connection(lambda: _Link(self), *at, ssl=context)
        _, link = await asyncio.wait_for(made, timeout)
        return link

    async def _run(self) -> None:
        while True:
            try:
                link = self._link = await self._connect()
                assert link.transport is not None  # set as the connection was made
                kw = self.redis.connection_pool.connection_kwargs
                hello, password = b"", kw.get("password")
                if password:
                    user = kw.get("username")
                    hello = _command("AUTH", *((user, ) if user else ()), password)
                link.transport.write(hello + _command("SUBSCRIBE", self.channel))
                await self._watch(link)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever broke the link, make it again
                log.warning("listener on %s lost, reconnecting: %s", self.channel.decode(), exc)
            self._set_live(False)
            await asyncio.sleep(self.retry_s)

    async def _watch(self, link: _Link) -> None:
        """Until the link closes: a PING every `ping_s`; no answer to the last one by the next means Redis is gone."""
        transport = link.transport
        assert transport is not None  # set as the connection was made
        try:
            while True:
                pongs = self._pongs
                done, _ = await asyncio.wait([link.closed], timeout=self.ping_s)
                if done:
                    return
                if link.pinged and self._pongs == pongs:
                    raise ConnectionError("no answer to PING")
                if await moved(self.redis, self._at):  # Sentinel moved the master: this one hears no more
                    raise ConnectionError("the Redis master moved")
                link.pinged = True
                transport.write(_command("PING"))
        finally:
            transport.abort()
