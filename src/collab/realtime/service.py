"""Realtime sessions: open a room for a verified user, speak y-websocket, store every update before relaying it."""

import asyncio
import logging
import resource
import time
from typing import Any, Awaitable, Callable

from psycopg.errors import ForeignKeyViolation

from collab.crdt import repository as crdt_repo
from collab.crdt import service as crdt_service
from collab.crdt import ydoc
from collab.kit import authlimit, fanout
from collab.kit.errors import ApiError, not_found_message
from collab.kit.services import Services
from collab.realtime import access, livestate, protocol
from collab.realtime import repository as repo
from collab.realtime.access import Refused
from collab.realtime.appender import Appender
from collab.realtime.document import SYNC_MAX_AGE_S, EditorDoc, Missing, TooLarge
from collab.realtime.rooms import REMOTE, AwarenessFull, Connection, DocumentRoom, Hub
from collab.realtime.upkeep import LEFT, Upkeep

log = logging.getLogger("collab.realtime")
WEBHOOK_EVERY_S = 1.0  # socket edits count towards crdt.update_data at most this often per editor and process
# What a message costs of the socket's budget (COLLAB_REALTIME_UPDATES_PER_S tokens a second, bursts of twice that),
# by what it makes the server do: relay a small message, answer with the room's states, read a value, or answer
# with the whole document (a client sends one step 1 per connection).
COSTS = {"update": 1.0, "awareness": 0.5, "query awareness": 2.0, "subscribe": 4.0, "sync step 1": 10.0}


def _charge(conn: Connection, kind: str) -> None:
    """Take a message's cost from the socket's budget; 4429 when the budget is spent."""
    if not conn.admit(COSTS[kind]):
        raise Refused(protocol.LIMITED, f"Too many messages per second ({kind}).")


def _descriptors() -> int:
    """How many files this process may open (its soft limit)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 2**31


class Realtime:
    """The realtime side of one API process (app.state.realtime): its rooms, their upkeep and sessions."""

    def __init__(self, svc: Services):
        self.svc = svc
        self.hub = Hub(svc.redis, on_message=self._from_elsewhere, on_subscribed=lambda: self.spawn(self.catch_up()))
        self.upkeep = Upkeep(self)
        self.appender = Appender(svc)
        self.background: set[asyncio.Task] = set()
        self.changed = asyncio.Event()  # set whenever a connection leaves (tests wait on it, no sleeps)
        self.descriptors = _descriptors()

    async def start(self) -> None:
        """Subscribe to Redis, start committing updates and the upkeep loop (app start)."""
        await self.hub.start()
        self.appender.start()
        self.upkeep.start()

    def _close_all(self) -> None:
        for conn in [c for room in self.hub.rooms.values() for c in room.connections()]:
            conn.close(1001, "Server shutting down.")

    async def going_away(self) -> None:
        """Close every socket with 1001 (the process stops: clients reconnect, through the load balancer, elsewhere)
        and wait until they have left."""
        self._close_all()
        try:
            await self.until(lambda: not self.hub.total, timeout=5.0)
        except TimeoutError:
            log.warning("%d socket(s) still open after closing them", self.hub.total)

    async def stop(self) -> None:
        """Close every socket (1001) and stop the loops (app shutdown)."""
        await self.upkeep.stop()
        self._close_all()
        await asyncio.gather(*self.background, return_exceptions=True)
        await self.appender.stop()
        await self.hub.stop()

    async def until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until `predicate()` holds, checked after each connection leaves."""
        deadline = time.monotonic() + timeout
        while not predicate():
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.0, deadline - time.monotonic()))

    def spawn(self, coro: Any) -> None:
        """Run a coroutine in the background (kept referenced until it ends)."""
        task = asyncio.ensure_future(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    # A session.

    async def serve(self, ws: Any, *, organization_id: str, document_id: str, editor_id: str, token: str | None,
                    origin: str | None = None) -> None:
        """Run one WebSocket connection to the room of an editor, from accept to close."""
        await ws.accept()
        try:
            conn = await self._admit(ws, organization_id, document_id, editor_id, token, origin)
            full = self.hub.full(conn, self._caps())  # then join, with no await between: counted at once
            if full is not None:
                raise Refused(protocol.LIMITED, f"Too many connections for this {full}.")
            room = await self.hub.join(conn)
        except Refused as refused:
            await ws.close(refused.code, refused.reason)
            return
        except Exception:  # every refusal is a close code, never an unhandled exception in the server's log
            log.exception("realtime handshake of %s/%s failed", document_id, editor_id)
            await ws.close(protocol.SERVER_ERROR, "Server error.")
            return
        writer = asyncio.create_task(conn.writer())
        try:
            await self._open(conn, room)
            await self._read(conn, room)
        except Refused as refused:  # the editor went away meanwhile
            conn.close(refused.code, refused.reason)
        except Exception:
            log.exception("realtime session of %s/%s failed", document_id, editor_id)
            conn.close(protocol.SERVER_ERROR, "Server error.")
        finally:
            conn.close(1000, "")
            await self._leave(conn, room)
            await asyncio.gather(writer, return_exceptions=True)

    async def _admit(self, ws: Any, organization_id: str, document_id: str, editor_id: str, token: str | None,
                     origin: str | None) -> Connection:
        settings = self.svc.settings
        if self.hub.total >= self._caps()["process"]:  # before any work for it (checked again before it joins)
            raise Refused(protocol.LIMITED, "Too many connections for this process.")
        # Bad tokens count against the caller's address like bad API credentials do (kit/authlimit.py).
        try:
            gate = await authlimit.admit(self.svc, kind="user-token", address=ws.client.host if ws.client else "-",
                                         subject=None, token=token or "")
        except ApiError:
            raise Refused(protocol.LIMITED, "Too many failed authentication attempts; retry later.") from None
        async with self.svc.pool.connection() as db:
            try:
                user = await access.authenticate(self.svc, db, token, origin)
            except Refused:
                await authlimit.failed(self.svc, gate)
                raise
            await authlimit.succeeded(self.svc, gate)
        # Its own connection, given back before a permission provider is asked: none is held while it answers.
        role = (await access.roles(self.svc, None, tenant=user.tenant, organization_id=organization_id,
                                   document_ids=[document_id], user_ids=[user.user_id]))[user.user_id][document_id]
        if isinstance(role, Refused):
            raise role
        async with self.svc.pool.connection() as db:
            await access.editor_kind(db, tenant=user.tenant, organization_id=organization_id, document_id=document_id,
                                     editor_id=editor_id)
        return Connection(ws, user=user, role=role, organization_id=organization_id, document_id=document_id,
                          editor_id=editor_id, queue=settings.realtime_send_queue, rate=settings.realtime_updates_per_s,
                          queue_bytes=settings.realtime_send_queue_bytes)

    def _caps(self) -> dict[str, int]:
        """Open sockets allowed in this process, by what they share (Hub.full's names)."""
        settings = self.svc.settings
        return {
            "document": settings.realtime_max_connections_per_document,
            "user": settings.realtime_max_connections_per_user,
            "api key": settings.realtime_max_connections_per_tenant,
            "workspace": settings.realtime_max_connections_per_workspace,
            # Never past the file descriptors the process may open, less some for its own connections.
            "process": min(settings.realtime_max_connections, self.descriptors - 256)
        }

    async def _open(self, conn: Connection, room: DocumentRoom) -> None:
        """Start the sync (the server's state vector, so the client sends what the server lacks), share the
        awareness states known, and show the user online."""
        conn.send(protocol.step1(await self._on_document(conn, room, lambda doc: doc.get_state())))
        known = room.awareness.get(conn.editor_id)
        if known:
            conn.send(protocol.awareness([(c, clock, s) for c, (clock, s) in known.items()]))
        await self.upkeep.arrived(conn, room)

    async def _on_document(self, conn: Connection, room: DocumentRoom, fn: Callable[[Any], Any], *,
                           max_age: float = SYNC_MAX_AGE_S, relay_missed: bool = True) -> Any:
        """`fn` of the room's copy of the editor's document: read and folded once, then kept current by every
        update this process sees; built again for a sync when older than SYNC_MAX_AGE_S (an update announced while
        Redis was away is missed here) and whenever an update could not be applied to it."""
        document = room.docs.setdefault(conn.editor_id, EditorDoc())
        try:
            relay = (lambda update: room.relay(conn.editor_id, protocol.step2(update))) if relay_missed else None
            return await document.run(fn, self._reader(conn), max_age=max_age, missed=relay)
        except Missing:
            raise Refused(protocol.UNKNOWN, not_found_message("crdt", "editor")) from None

    def _reader(self, conn: Connection) -> Callable[[], Awaitable[dict[str, Any] | None]]:
        """How to read the editor's stored state and pending updates (None when it does not exist)."""

        async def read() -> dict[str, Any] | None:
            async with self.svc.pool.connection() as db:
                rows = await crdt_repo.list_editors(db, api_key_id=conn.user.tenant.api_key_id,
                                                    organization_id=conn.organization_id, document_id=conn.document_id,
                                                    editor_id=conn.editor_id, after_id=None, limit=1, yjs=False,
                                                    budget=2**62)
            return rows[0] if rows else None

        return read

    async def _read(self, conn: Connection, room: DocumentRoom) -> None:
        limit = self.svc.settings.realtime_max_message_bytes
        while conn.close_code is None:
            message = await conn.ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            conn.last_message = time.monotonic()
            if data is None:
                conn.close(protocol.MALFORMED, "Messages are binary (y-websocket framing).")
            elif len(data) > limit:
                conn.close(protocol.TOO_LARGE, f"A message may carry at most {limit} bytes.")
            else:
                try:
                    await self._handle(conn, room, data, *self._parse(data))
                except protocol.Oversize as exc:
                    conn.close(protocol.TOO_LARGE, f"Too large: {exc}.")
                except protocol.Malformed as exc:
                    conn.close(protocol.MALFORMED, f"Malformed message: {exc}.")
                except Refused as refused:
                    conn.close(refused.code, refused.reason)

    async def _handle(self, conn: Connection, room: DocumentRoom, data: bytes, kind: int, step: int,
                      payload: Any) -> None:
        if kind == protocol.SYNC and step == protocol.STEP1:
            _charge(conn, "sync step 1")
            try:
                missing = await self._on_document(conn, room, lambda doc: doc.get_update(payload))
            except Refused:
                raise
            except Exception:  # noqa: BLE001 - pycrdt raises several kinds on a bad state vector
                raise protocol.Malformed("bad state vector") from None
            conn.send(protocol.step2(missing))
        elif kind == protocol.SYNC:
            await self._update(conn, room, payload)
        elif kind == protocol.AWARENESS:
            await self._awareness(conn, room, data, payload)
        elif kind == protocol.QUERY_AWARENESS:
            _charge(conn, "query awareness")
            known = room.awareness.get(conn.editor_id) or {}
            conn.send(protocol.awareness([(c, clock, s) for c, (clock, s) in known.items()]))
        else:
            await self._livestate_op(conn, payload)

    def _parse(self, data: bytes) -> tuple[int, int, Any]:
        settings = self.svc.settings
        return protocol.parse(data, max_clients=settings.realtime_awareness_clients,
                              max_state_bytes=settings.realtime_awareness_state_bytes)

    async def _awareness(self, conn: Connection, room: DocumentRoom, data: bytes, entries: list[tuple[int, int,
                                                                                                      str]]) -> None:
        """Learn and relay the states of the clients this socket speaks for (at most a few, each its own)."""
        _charge(conn, "awareness")  # relayed to every socket of the room: a flood is refused like one of edits
        settings = self.svc.settings
        fresh = {client for client, _, state in entries if state != "null"} - conn.controlled.keys()
        if len(conn.controlled) + len(fresh) > settings.realtime_awareness_clients:
            raise Refused(protocol.LIMITED,
                          f"A socket may speak for at most {settings.realtime_awareness_clients} awareness clients.")
        try:
            kept, changed = room.learn_awareness(conn.editor_id, entries, owner=conn,
                                                 room_bytes=settings.realtime_awareness_room_bytes)
        except AwarenessFull:
            raise Refused(
                protocol.TOO_LARGE,
                f"This editor's awareness states would pass {settings.realtime_awareness_room_bytes} bytes.") from None
        for client, clock, state in kept:
            if state == "null":
                conn.controlled.pop(client, None)
            else:
                conn.controlled[client] = clock
        if changed:
            conn.last_active = time.monotonic()
        if kept:  # another socket's clients were dropped: relay only this socket's own
            message = data if len(kept) == len(entries) else protocol.awareness(kept)
            room.relay(conn.editor_id, message, skip=conn)
            await self.hub.publish(conn, message, editor_id=conn.editor_id)

    async def _update(self, conn: Connection, room: DocumentRoom, update: bytes) -> None:
        """Try a client's update on the room's document, store it, then relay it: nobody hears of an edit that a
        restart could lose, and nothing is stored that the editor's document cannot take."""
        if conn.role != "editor" or update == protocol.EMPTY_UPDATE:
            return  # a viewer's edit is dropped: not stored, not relayed (docs/realtime.md)
        _charge(conn, "update")
        svc, tenant = self.svc, conn.user.tenant
        document = room.docs.setdefault(conn.editor_id, EditorDoc())
        cap = svc.settings.crdt_max_state_bytes  # the REST cap on a document holds for socket edits too
        try:
            known = await document.attempt(update, self._reader(conn), cap=cap,
                                           max_structs=svc.settings.realtime_max_update_structs)
        except ydoc.BadContent as exc:
            raise protocol.Malformed(f"not an update this editor can take: {exc}") from None
        except TooLarge:
            raise Refused(protocol.TOO_LARGE,
                          f"The document would exceed {cap} bytes (COLLAB_CRDT_MAX_STATE_BYTES).") from None
        if not known:
            raise Refused(protocol.UNKNOWN, not_found_message("crdt", "editor"))
        key = {
            "api_key_id": tenant.api_key_id, "organization_id": conn.organization_id, "document_id": conn.document_id,
            "editor_id": conn.editor_id
        }
        now, committed = time.monotonic(), False
        try:
            await self._append(conn, room, key, update, now)
            committed = True
        except ForeignKeyViolation:
            raise Refused(protocol.UNKNOWN, not_found_message("crdt", "editor")) from None
        finally:
            document.stored(update, committed=committed)
        conn.last_active = now
        message = fanout.sync_update(update)
        room.relay(conn.editor_id, message, skip=conn)
        await self.hub.publish(conn, message, editor_id=conn.editor_id)
        room.appended[conn.editor_id] = room.appended.get(conn.editor_id, 0) + 1
        if room.appended[conn.editor_id] >= svc.settings.realtime_compact_every:
            room.appended[conn.editor_id] = 0
            self.spawn(self.compact(**key))

    async def _append(self, conn: Connection, room: DocumentRoom, key: dict[str, str], update: bytes,
                      now: float) -> None:
        # crdt.update_data webhooks window changes per editor (5 s); counting one per second is enough.
        webhook = now - room.webhook_at.get(conn.editor_id, -WEBHOOK_EVERY_S) >= WEBHOOK_EVERY_S
        if webhook:
            room.webhook_at[conn.editor_id] = now
        await self.appender.append({**key, "update": update, "user_id": conn.user.user_id, "now": self.svc.now_ms()},
                                   webhook=webhook)

    async def _livestate_op(self, conn: Connection, op: Any) -> None:
        if (not isinstance(op, dict) or op.get("op") not in ("subscribe", "unsubscribe")
                or not isinstance(op.get("liveStateDataId"), str) or not 0 < len(op["liveStateDataId"]) <= 500):
            raise protocol.Malformed('live state messages are {"op": "subscribe"|"unsubscribe", "liveStateDataId"}')
        topic = op["liveStateDataId"]
        if op["op"] == "unsubscribe":
            conn.topics.discard(topic)
            return
        _charge(conn, "subscribe")
        cap = self.svc.settings.realtime_subscriptions_per_socket
        if topic not in conn.topics and len(conn.topics) >= cap:
            raise Refused(protocol.LIMITED, f"A socket may subscribe to at most {cap} live state ids.")
        conn.topics.add(topic)
        async with self.svc.pool.connection() as db:
            rows = await repo.live_states(db, api_key_id=conn.user.tenant.api_key_id,
                                          organization_id=conn.organization_id, document_id=conn.document_id,
                                          live_state_data_id=topic, limit=1)
        if rows:
            conn.send(livestate.message(rows[0]))

    async def _leave(self, conn: Connection, room: DocumentRoom) -> None:
        """Say the socket's awareness clients left, show the user offline when it was their last socket here,
        and fold the updates this room appended."""
        try:
            owners = room.owners.get(conn.editor_id, {})
            # Not the clients its user's newer socket took over (a reconnect): they are that socket's now.
            entries = [(c, clock + 1, "null") for c, clock in conn.controlled.items() if owners.get(c) is conn]
            if entries:
                room.learn_awareness(conn.editor_id, entries, owner=conn)
                gone = protocol.awareness(entries)
                room.relay(conn.editor_id, gone, skip=conn)
                await self.hub.publish(conn, gone, editor_id=conn.editor_id)
            if room.editors.get(conn.editor_id) == {conn} and room.appended.get(conn.editor_id):
                room.appended[conn.editor_id] = 0  # the editor's last socket here: fold what it appended
                self.spawn(
                    self.compact(api_key_id=conn.user.tenant.api_key_id, organization_id=conn.organization_id,
                                 document_id=conn.document_id, editor_id=conn.editor_id))
            await self.upkeep.left(conn, room)
        finally:
            # Last, so that a socket counts as gone only once all of the above is done (tests wait on it).
            await self.hub.leave(conn)
            self.changed.set()

    async def compact(self, **key: str) -> None:
        """Fold an editor's pending updates into its state (crdt/get and syncs then read one row)."""
        try:
            await crdt_service.compact(self.svc, **key)
        except Exception:  # noqa: BLE001 - the sweep in the worker folds them later
            log.exception("realtime compaction of %s/%s failed", key["document_id"], key["editor_id"])

    async def catch_up(self) -> None:
        """Send every socket its editor's stored document (one sync step 2): what other processes stored while this
        one was not subscribed reaches its clients without a reconnect (a Yjs merge of what a client has is a no-op)."""
        for room in list(self.hub.rooms.values()):
            for editor_id, conns in list(room.editors.items()):
                if not conns:
                    continue
                try:  # built again from storage (max_age 0): the copy here missed those updates too
                    update = await self._on_document(next(iter(conns)), room, lambda doc: doc.get_update(), max_age=0.0,
                                                     relay_missed=False)
                except Refused:
                    continue  # the editor was deleted meanwhile: its sockets are closed by the recheck
                except Exception:  # noqa: BLE001 - one editor's failure must not stop the others catching up
                    log.exception("realtime catch-up of %s/%s failed", room.key[2], editor_id)
                    continue
                room.relay(editor_id, protocol.step2(update))

    # Messages from other processes (and REST writes).

    def _from_elsewhere(self, room: DocumentRoom, editor_id: str, topic: str, message: bytes) -> None:
        if topic == LEFT:
            self.upkeep.still_here(room, message.decode(errors="replace"))
            return
        if topic:
            for conn in room.connections():
                if topic in conn.topics:
                    conn.send(message)
            return
        if message[:1] == bytes([protocol.AWARENESS]):
            try:
                entries = self._parse(message)[2]
            except protocol.Malformed:
                return
            kept, _ = room.learn_awareness(editor_id, entries, owner=REMOTE)
            if len(kept) != len(entries):  # a client one of this process's sockets introduced: not the sender's
                if kept:
                    room.relay(editor_id, protocol.awareness(kept))
                return
        else:  # an edit made through another process or REST: the room's document follows it
            document = room.docs.get(editor_id)
            try:
                kind, step, update = self._parse(message)
            except protocol.Malformed:
                kind = None
            if document is not None and kind == protocol.SYNC and step != protocol.STEP1:
                self.spawn(document.learn(update))
        room.relay(editor_id, message)
