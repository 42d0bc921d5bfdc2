"""Rooms of one API process: the connections of each editor, the awareness they share, and the Redis link.

Nothing here is authoritative: the document is in Postgres, every update is stored before it reaches a room,
and a process that restarts rebuilds its rooms from reconnecting clients. A room relays each message as the
same bytes to every connection (encoded once), through a bounded queue per connection: a client that cannot
keep up is closed with 1013 instead of being buffered without bound.

The byte bound counts what this process holds for the socket: the messages waiting and the one the transport is
still writing. The server's send (uvicorn) waits until the transport's buffer is under its low-water mark, then hands
it the whole message and returns; so a message is counted until the send after it returns (the transport took that
one, so it had written the one before); on a quiet socket the upkeep's keepalive is that next send, within a
heartbeat. Counting only the waiting messages left the message being sent and the one in the transport (each up to
the largest document) uncounted.
"""

import asyncio
import logging
import time
import uuid
from collections import deque
from typing import Any, Callable

from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from collab.kit import fanout
from collab.kit.redisclient import address, moved, subscriber
from collab.realtime import protocol
from collab.realtime.document import EditorDoc

log = logging.getLogger("collab.realtime")
# How often the subscriber asks whether the Redis master moved (Sentinel; a fixed address never does).
MASTER_CHECK_S = 5.0


class Connection:
    """One socket: who it is, what it may do, and its send queue (drained by its own writer task)."""

    def __init__(self, ws: Any, *, user: Any, role: str, organization_id: str, document_id: str, editor_id: str,
                 queue: int, rate: float, queue_bytes: int = 2**62):
        self.ws, self.user, self.role = ws, user, role
        self.organization_id, self.document_id, self.editor_id = organization_id, document_id, editor_id
        self.limit, self.limit_bytes = queue, queue_bytes
        self.pending: deque[bytes] = deque()
        # Bytes held for the client: the messages waiting, the one being sent, and the last one the transport took
        # (counted until the send after it returns: only then is it written out, to the transport's low-water mark).
        self.pending_bytes = 0
        self.in_transport = 0  # bytes of that last message
        self.wake = asyncio.Event()
        self.close_code: int | None = None
        self.close_reason = ""
        self.controlled: dict[int, int] = {}  # awareness client id → clock, of the clients this socket speaks for
        self.topics: set[str] = set()  # livestate ids subscribed to
        now = time.monotonic()
        self.last_message = now  # anything received (idle timeout)
        self.last_active = now  # an edit or an awareness change (away)
        self.last_sent = now  # anything queued for the client (keepalive)
        self.rate, self.tokens, self.tokens_at = rate, rate * 2, now

    def send(self, data: bytes) -> None:
        """Queue bytes for the client; a queue full in messages or in bytes closes the connection (slow consumer)."""
        if self.close_code is not None:
            return
        if len(self.pending) >= self.limit or self.pending_bytes + len(data) > self.limit_bytes:
            self.close(protocol.SLOW, "Slow consumer: messages queued past the limit.")
            return
        self.pending.append(data)
        self.pending_bytes += len(data)
        self.last_sent = time.monotonic()
        self.wake.set()

    def close(self, code: int, reason: str) -> None:
        """Close soon (the writer sends the close frame); what is queued is dropped."""
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason[:120]
            self.pending.clear()
            self.pending_bytes = self.in_transport = 0
            self.wake.set()

    def admit(self, cost: float = 1.0) -> bool:
        """Token bucket of updates per second (bursts of twice the rate); an awareness message costs half, dearer
        messages more (at most a full bucket: one of each always passes a fresh socket)."""
        cost = min(cost, self.rate * 2)
        now = time.monotonic()
        self.tokens = min(self.rate * 2, self.tokens + (now - self.tokens_at) * self.rate)
        self.tokens_at = now
        if self.tokens < cost:
            return False
        self.tokens -= cost
        return True

    async def writer(self) -> None:
        """Send queued messages in order; then the close frame when one was asked for."""
        try:
            while True:
                await self.wake.wait()
                self.wake.clear()
                while self.pending and self.close_code is None:
                    data = self.pending.popleft()  # still counted: until sent, and then while the transport holds it
                    await self.ws.send_bytes(data)
                    if self.close_code is None:  # the transport took `data`, so it wrote the message before out
                        self.pending_bytes -= self.in_transport
                        self.in_transport = len(data)
                if self.close_code is not None:
                    await self.ws.close(self.close_code, self.close_reason)
                    return
        except Exception:  # the peer is gone: the reader sees the disconnect
            self.close_code = self.close_code or protocol.SERVER_ERROR


# The owner of awareness clients that another API process introduced (its sockets are checked there).
REMOTE = "remote"


class AwarenessFull(Exception):
    """An editor room's awareness states would pass their byte cap."""


class DocumentRoom:
    """A document's connections in this process, by editor, with the awareness states each editor room knows."""

    def __init__(self, key: tuple[str, str, str]):
        self.key = key
        self.editors: dict[str, set[Connection]] = {}
        self.awareness: dict[str, dict[int, tuple[int, str]]] = {}  # editor → client id → (clock, state JSON)
        # editor → client id → the Connection (or REMOTE) that introduced it: only it may change or remove the state
        self.owners: dict[str, dict[int, object]] = {}
        self.awareness_bytes: dict[str, int] = {}  # editor → bytes of the states kept
        self.appended: dict[str, int] = {}  # editor → updates appended here since its last compaction
        self.webhook_at: dict[str, float] = {}  # editor → when this process last counted a webhook change
        # editor → its document as this process holds it (sync answers, and the trial of every socket update)
        self.docs: dict[str, EditorDoc] = {}

    def connections(self) -> list[Connection]:
        return [c for conns in self.editors.values() for c in conns]

    def learn_awareness(self, editor_id: str, entries: list[tuple[int, int, str]], *, owner: object,
                        room_bytes: int | None = None) -> tuple[list[tuple[int, int, str]], bool]:
        """Keep the newest state of each client `owner` may speak for; (the entries kept, whether a state changed,
        not just renewed).

        A client id belongs to the socket (or other process) that introduced it: entries for someone else's client
        are dropped, so no socket can change or remove another user's cursor. A message that would take the editor
        room's states past `room_bytes` raises AwarenessFull, with nothing learned.
        """
        known = self.awareness.setdefault(editor_id, {})
        owners = self.owners.setdefault(editor_id, {})
        kept, grow = [], 0
        for client, clock, state in entries:
            old = known.get(client)
            if not _may_speak(owners.get(client, owner), owner) or (old is not None and clock < old[0]):
                continue
            kept.append((client, clock, state))
            grow += (0 if state == "null" else len(state.encode())) - (len(old[1].encode()) if old else 0)
        total = self.awareness_bytes.get(editor_id, 0) + grow
        if room_bytes is not None and grow > 0 and total > room_bytes:
            raise AwarenessFull()
        self.awareness_bytes[editor_id] = total
        changed = False
        for client, clock, state in kept:
            old = known.get(client)
            changed = changed or old is None or old[1] != state
            if state == "null":
                known.pop(client, None)
                owners.pop(client, None)
            else:
                known[client] = (clock, state)
                owners[client] = owner
        return kept, changed

    def relay(self, editor_id: str, message: bytes, *, skip: Connection | None = None) -> None:
        for conn in self.editors.get(editor_id, ()):
            if conn is not skip:
                conn.send(message)


def _may_speak(holder: object, speaker: object) -> bool:
    """Whether `speaker` may set the state of a client `holder` introduced: its own, or its user's from another
    socket (a client that reconnects keeps its id while the server may not yet have seen the old socket go)."""
    if holder is speaker:
        return True
    return (isinstance(holder, Connection) and isinstance(speaker, Connection)
            and holder.user.user_id == speaker.user.user_id
            and holder.user.tenant.api_key_id == speaker.user.tenant.api_key_id)


class Hub:
    """This process's rooms and its subscription to their documents' channels."""

    def __init__(self, redis: Any, *, on_message: Callable[[DocumentRoom, str, str, bytes], None] | None = None,
                 on_subscribed: Callable[[], Any] | None = None):
        self.id = uuid.uuid4().bytes  # this process, as the origin of what it publishes
        self.rooms: dict[tuple[str, str, str], DocumentRoom] = {}
        # Open sockets of this process: by API key, by workspace, by (API key, user), and in all (the caps' gauges).
        self.by_tenant: dict[str, int] = {}
        self.by_workspace: dict[str, int] = {}
        self.by_user: dict[tuple[str, str], int] = {}
        self.total = 0
        self.redis = redis
        self.pubsub: PubSub | None = None
        self.reader: asyncio.Task | None = None
        self.channels: dict[str, tuple[str, str, str]] = {}
        self.on_message = on_message
        # Called each time the reader has (re)subscribed every room: what was published while it was not subscribed
        # (a Redis restart or failover, a lost link) never reached this process, so the rooms catch up from storage.
        self.on_subscribed = on_subscribed
        self.subscriptions = 0  # how many times the reader subscribed (tests wait on it)

    # Rooms.

    def count(self, key: tuple[str, str, str]) -> int:
        room = self.rooms.get(key)
        return len(room.connections()) if room else 0

    def full(self, conn: Connection, caps: dict[str, int]) -> str | None:
        """Which cap one more socket like `conn` would pass (caps by the names below), or None. Checked and counted
        with no await between (join counts first thing), so concurrent handshakes cannot all slip under a cap."""
        tenant = conn.user.tenant
        key = (tenant.api_key_id, conn.organization_id, conn.document_id)
        for name, used in (("document", self.count(key)), ("user", self.by_user.get(
            (key[0], conn.user.user_id), 0)), ("api key", self.by_tenant.get(key[0], 0)),
                           ("workspace", self.by_workspace.get(tenant.workspace_id, 0)), ("process", self.total)):
            if used >= caps[name]:
                return name
        return None

    def _count(self, conn: Connection, step: int) -> None:
        tenant = conn.user.tenant
        counted: tuple[tuple[dict[Any, int], Any],
                       ...] = ((self.by_tenant, tenant.api_key_id), (self.by_workspace, tenant.workspace_id),
                               (self.by_user, (tenant.api_key_id, conn.user.user_id)))
        for counts, key in counted:
            counts[key] = counts.get(key, 0) + step
            if not counts[key]:
                del counts[key]
        self.total += step

    async def join(self, conn: Connection) -> DocumentRoom:
        """Add a connection (subscribing to the document's channel first, so nothing published is missed)."""
        key = (conn.user.tenant.api_key_id, conn.organization_id, conn.document_id)
        self._count(conn, 1)
        room = self.rooms.get(key)
        new = room is None
        if room is None:
            room = self.rooms[key] = DocumentRoom(key)
        room.editors.setdefault(conn.editor_id, set()).add(conn)
        if new:  # the socket's sync starts after this: what is published from here on reaches it
            channel = fanout.channel(*key)
            self.channels[channel] = key
            await self._subscribe(channel)
        return room

    async def leave(self, conn: Connection) -> DocumentRoom | None:
        """Remove a connection; the room when it became empty (and was dropped)."""
        key = (conn.user.tenant.api_key_id, conn.organization_id, conn.document_id)
        room = self.rooms.get(key)
        if room is None:
            return None
        conns = room.editors.get(conn.editor_id, set())
        if conn in conns:
            conns.discard(conn)
            self._count(conn, -1)
        if not conns:
            room.editors.pop(conn.editor_id, None)
            room.awareness.pop(conn.editor_id, None)
            room.owners.pop(conn.editor_id, None)
            room.awareness_bytes.pop(conn.editor_id, None)
            room.docs.pop(conn.editor_id, None)
        if room.editors:
            return None
        del self.rooms[key]
        channel = fanout.channel(*key)
        self.channels.pop(channel, None)
        await self._unsubscribe(channel)
        return room

    async def publish(self, conn: Connection, message: bytes, *, editor_id: str, topic: str = "") -> None:
        """Send to the other processes holding rooms of the document (this one relays locally itself)."""
        await fanout.publish(self.redis, api_key_id=conn.user.tenant.api_key_id, organization_id=conn.organization_id,
                             document_id=conn.document_id, editor_id=editor_id, message=message, topic=topic,
                             origin=self.id)

    # Redis.

    async def start(self) -> None:
        """Open the subscriber connection and start relaying what other processes publish."""
        if self.redis is None:
            return
        self.subscriber = subscriber(self.redis)
        self.reader = asyncio.create_task(self._read())

    async def stop(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
            await asyncio.gather(self.reader, return_exceptions=True)
        if self.pubsub is not None:
            await asyncio.gather(self.pubsub.aclose(), return_exceptions=True)
        if self.redis is not None:
            await asyncio.gather(self.subscriber.aclose(), return_exceptions=True)

    async def _subscribe(self, channel: str) -> None:
        if self.pubsub is not None:
            try:
                await self.pubsub.subscribe(channel)
            except (RedisError, OSError) as exc:
                log.warning("realtime subscribe failed (the reader resubscribes): %s", exc)

    async def _unsubscribe(self, channel: str) -> None:
        if self.pubsub is not None:
            try:
                await self.pubsub.unsubscribe(channel)
            except (RedisError, OSError):
                pass

    async def _read(self) -> None:
        """Relay what other processes publish; on a lost link, connect again, resubscribe every room and catch up."""
        while True:
            try:
                self.pubsub = self.subscriber.pubsub(ignore_subscribe_messages=True)
                await self.pubsub.subscribe(fanout.PREFIX + "process:" + self.id.hex(), *list(self.channels))
                at = await address(self.subscriber)
                self.subscriptions += 1
                if self.on_subscribed is not None and self.rooms:
                    self.on_subscribed()
                checked = time.monotonic()
                while True:
                    message = await self.pubsub.get_message(timeout=MASTER_CHECK_S)
                    if message is not None and message.get("type") == "message":
                        self._deliver(message["channel"], message["data"])
                    if time.monotonic() - checked >= MASTER_CHECK_S:
                        # A master that Sentinel replaced without dropping this link (partitioned, not dead) no
                        # longer gets the other processes' publishes: follow the Sentinels to the new one.
                        checked = time.monotonic()
                        if await moved(self.subscriber, at):
                            raise RedisError("the Redis master moved")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep relaying whatever failed
                log.warning("realtime fan-out link lost, reconnecting: %s", exc)
                pubsub, self.pubsub = self.pubsub, None
                if pubsub is not None:
                    await asyncio.gather(pubsub.aclose(), return_exceptions=True)
                await asyncio.sleep(1.0)

    def _deliver(self, channel: bytes | str, payload: bytes) -> None:
        name = channel.decode() if isinstance(channel, bytes) else channel
        key = self.channels.get(name)
        room = self.rooms.get(key) if key else None
        if room is None:
            return
        try:
            origin, editor_id, topic, message = fanout.unpack(payload)
        except (IndexError, UnicodeDecodeError):
            return
        if origin == self.id:
            return
        if self.on_message is not None:
            self.on_message(room, editor_id, topic, message)
