"""What a process does for its open connections over time: idle timeouts, live presence, access rechecks."""

import asyncio
import logging
import time
from typing import Any

from collab.presence import service as presence
from collab.realtime import access, protocol
from collab.realtime.access import Refused
from collab.realtime.rooms import Connection, DocumentRoom

log = logging.getLogger("collab.realtime")
ONLINE, AWAY, OFFLINE = "online", "away", "offline"
LEFT = "\x00left"  # the fan-out topic of "a user's last socket here closed" (no live state id holds a NUL)


class Upkeep:
    """Two loops: every `realtime_heartbeat_s`, close idle sockets and keep presence rows fresh; every
    `realtime_access_recheck_s`, recheck access. Separate, so slow or failing presence writes never hold back the
    recheck that revokes access and enforces token expiry."""

    def __init__(self, realtime: Any):
        self.rt = realtime
        self.tasks: list[asyncio.Task] = []
        self.written: dict[tuple[str, str, str, str], tuple[str, float]] = {}  # (key…, user) → (status, when)

    def start(self) -> None:
        settings = self.rt.svc.settings
        self.tasks = [
            asyncio.create_task(self._every(lambda: settings.realtime_heartbeat_s, self.tick)),
            asyncio.create_task(self._every(lambda: settings.realtime_access_recheck_s, self.recheck))
        ]

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _every(self, period: Any, run: Any) -> None:
        while True:
            await asyncio.sleep(period())
            try:
                await run()
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("realtime upkeep failed")

    async def tick(self) -> None:
        """Close connections idle past the timeout, send a keepalive where nothing was sent for a heartbeat, and
        write each connected user's status where it changed or would otherwise go stale (room by room: one that
        fails is written at the next tick, the others now)."""
        settings = self.rt.svc.settings
        now = time.monotonic()
        for room in list(self.rt.hub.rooms.values()):
            for conn in room.connections():
                if now - conn.last_message >= settings.realtime_idle_timeout_s:
                    conn.close(protocol.IDLE, "Idle timeout: nothing received.")
                elif now - conn.last_sent >= settings.realtime_heartbeat_s:
                    conn.send(protocol.KEEPALIVE)  # a client alone in a quiet room still hears from us
            try:
                await self._presence(room, now)
            except Exception:  # noqa: BLE001 - one room's write never holds back the rest
                log.exception("realtime presence write of %s/%s failed", room.key[1], room.key[2])

    async def _presence(self, room: DocumentRoom, now: float) -> None:
        settings = self.rt.svc.settings
        refresh_s = settings.presence_away_s / 3  # REST staleness would read an unrefreshed row `away`
        users: dict[str, tuple[Any, bool]] = {}
        for conn in room.connections():
            active = now - conn.last_active < settings.realtime_away_after_s
            was = users.get(conn.user.user_id)
            users[conn.user.user_id] = (conn.user, active or (was is not None and was[1]))
        due = []
        for user_id, (user, active) in users.items():
            status = ONLINE if active else AWAY
            mark = self.written.get((*room.key, user_id))
            if mark is None or mark[0] != status or now - mark[1] >= refresh_s:
                due.append((user_id, user.name, user.email, status))
                self.written[(*room.key, user_id)] = (status, now)
        if due:
            await self._write(room.key, due)

    async def _write(self, key: tuple[str, str, str], users: list[tuple[str, Any, Any, str]]) -> None:
        await presence.set_live(self.rt.svc, api_key_id=key[0], organization_id=key[1], document_id=key[2], users=users)

    async def arrived(self, conn: Connection, room: DocumentRoom) -> None:
        """The user is online on the document from now on."""
        self.written[(*room.key, conn.user.user_id)] = (ONLINE, time.monotonic())
        await self._write(room.key, [(conn.user.user_id, conn.user.name, conn.user.email, ONLINE)])

    async def left(self, conn: Connection, room: DocumentRoom) -> None:
        """Offline once the user's last connection to the document in this process closed."""
        if any(c is not conn and c.user.user_id == conn.user.user_id for c in room.connections()):
            return
        self.written.pop((*room.key, conn.user.user_id), None)
        await self._write(room.key, [(conn.user.user_id, conn.user.name, conn.user.email, OFFLINE)])
        # A process where the user is still connected writes them online again at once (see `still_here`).
        await self.rt.hub.publish(conn, conn.user.user_id.encode(), editor_id="", topic=LEFT)

    def still_here(self, room: DocumentRoom, user_id: str) -> None:
        """Another process wrote the user offline: if this one holds a socket of theirs, they are online."""
        conn = next((c for c in room.connections() if c.user.user_id == user_id), None)
        if conn is not None:
            self.rt.spawn(self.arrived(conn, room))

    async def recheck(self) -> None:
        """Close the connections whose token expired or whose access went away; follow role changes.

        One effective-access read per organization (all its open documents and users at once), not per socket; each
        organization on its own, within a recheck period: one that fails or hangs is tried again next round.
        """
        svc = self.rt.svc
        now_s = svc.clock()
        by_org: dict[tuple[str, str], list[DocumentRoom]] = {}
        for room in list(self.rt.hub.rooms.values()):
            by_org.setdefault(room.key[:2], []).append(room)
        for (_, organization_id), rooms in by_org.items():
            conns = [c for room in rooms for c in room.connections()]
            for conn in conns:  # expiry needs no database
                if conn.user.expires_s <= now_s:
                    conn.close(protocol.BAD_TOKEN, "The token has expired.")
            conns = [c for c in conns if c.close_code is None]
            if not conns:
                continue
            try:
                await asyncio.wait_for(self._recheck(organization_id, rooms, conns),
                                       svc.settings.realtime_access_recheck_s)
            except Exception:  # noqa: BLE001 - one organization never holds back the others
                log.exception("realtime access recheck of organization %s failed", organization_id)

    async def _recheck(self, organization_id: str, rooms: list[DocumentRoom], conns: list[Connection]) -> None:
        svc = self.rt.svc
        # roles reads on a connection of its own and gives it back before a permission provider is asked.
        answer = await access.roles(svc, None, tenant=conns[0].user.tenant, organization_id=organization_id,
                                    document_ids=sorted({r.key[2]
                                                         for r in rooms}),
                                    user_ids=sorted({c.user.user_id
                                                     for c in conns}))
        for conn in conns:
            role = answer[conn.user.user_id][conn.document_id]
            if isinstance(role, Refused):
                # Access that went away is 4403 whatever the reason (organization gone included).
                conn.close(protocol.UNKNOWN if role.code == protocol.UNKNOWN else protocol.NO_ACCESS, role.reason)
            else:
                conn.role = role
