"""Realtime benchmark: Yjs fan-out over the WebSocket endpoint, side by side with the reference y-websocket server.

python -m bench.realtime [--room-clients 200] [--rooms 1000] [--rounds 100] [--burst 100] [--rest 200] [--hold 4000]
                         [--deflate] [--write]

Four servers in one run, measured by the same Python clients (websockets, the y-websocket wire format; one pycrdt
document per sending client, receivers only count what arrives):

- collab with its default realtime limits: the full stack (bench.common.stack) and ONE API process beside it with
  no COLLAB_REALTIME_* setting (what ships);
- collab with its realtime limits raised so the load never meets them: the stack's own API process (one too), on
  the same Postgres and Redis (its own documents, so nothing crosses between the two through Redis); the two
  collab columns side by side are the cost of the bounds;
- the reference: @y/websocket-server's own `setupWSConnection` under Node, documents in memory, no persistence, no
  auth (bench/js; `npm ci --ignore-scripts` there first, as `make bench-realtime` does);
- the floor: a bare relay (websockets alone: no auth, storage or Redis), so the clients' and the machine's share of
  the latency shows.

1. one room of `room-clients` clients on each server: one client edits, `rounds` times one at a time (at most 50 a
   second, a socket's default budget, on every server alike), in 20 chunks taking the servers in turn (the machine's
   load changes over time); fan-out latency is the time from the edit's send to each other client's receipt
   (p50/p99 over every receipt); then `burst` edits back to back (at most the default budget's burst, 100), in 4
   parts taking the servers in turn: messages delivered per second;
2. `rooms` rooms × 2 clients on each server, all held at once: every room's first client edits at once (a burst of
   `rooms` edits), `rounds // 10` times, the servers taking turns each round: latency and messages/s; and one room
   at a time, `rounds` times in 20 chunks (a light load while every connection stays open);
3. REST writes reaching connected clients (collab, limits raised): `rest` crdt/update calls, each timed from the
   request to the receipt at a client of the room, beside the call's own response time;
4. memory: each server process's RSS over the connections of 2. (connections per GiB from the RSS they added), then
   `hold` connections opened over the rooms and held at once, one server after the other (not the collab process
   with limits raised: the same code, it would double the run's slowest part); CPU per edit of each server process,
   and of collab's Postgres and Redis (shared by both collab processes, measured while only one of them works).

The load fits under the default limits, read from collab.config: the room of `room-clients` must fit the cap per
document; the rooms are spread over as many workspaces (one API key each) as keep every collab process within half
its cap per API key and per workspace at any time, and over as many users a workspace as keep each within half the
cap per user (the room of `room-clients` has a user per client); 50 edits a second per socket (bursts of 100); a
client that has sent nothing for 60 s renews its awareness state (a y-websocket client does so every 15 s), so none
meets the idle timeout (120 s). A socket any server closes counts in the table's "closed by the server" row. Before
each phase the bench waits for every server to go idle. The clients share the machine with the servers, so their
own CPU is inside every figure. --write replaces the "realtime" section of docs/benchmarks.md.
"""

import argparse
import asyncio
import itertools
import json
import math
import os
import random
import resource
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

import httpx
import psutil
import websockets
from pycrdt import Doc, Text

from bench.common import _free_port, api_beside, machine, new_tenant, pct, stack, stack_root, write_section
from collab.config import Settings
from collab.kit import lib0

ORG, EDITOR = "org-rt", "editor-1"
LIMITS = {
    "COLLAB_API_WORKERS": "1",
    "COLLAB_RATE_LIMIT_API_KEY": "100000000/minute",
    "COLLAB_REALTIME_UPDATES_PER_S": "100000",
    "COLLAB_REALTIME_MAX_CONNECTIONS_PER_DOCUMENT": "100000",
    "COLLAB_REALTIME_MAX_CONNECTIONS_PER_TENANT": "100000",
    # Caps of newer versions (a version without them ignores the variables).
    "COLLAB_REALTIME_MAX_CONNECTIONS_PER_USER": "100000",
    "COLLAB_REALTIME_MAX_CONNECTIONS_PER_WORKSPACE": "100000",
    "COLLAB_REALTIME_MAX_CONNECTIONS": "100000",
    "COLLAB_REALTIME_IDLE_TIMEOUT_S": "3600",
    "COLLAB_REALTIME_SEND_QUEUE": "10000",
    "COLLAB_DB_POOL_MAX": "20"
}
# The other API process: the same but for the realtime limits, which are left at their defaults.
DEFAULTS = {k: v for k, v in LIMITS.items() if not k.startswith("COLLAB_REALTIME_")}
RATE = Settings.model_fields["realtime_updates_per_s"].default  # a socket's default budget: edits a second...
BUCKET = int(2 * RATE)  # ...in bursts of twice that


def _default(name: str) -> int | None:
    """A setting's default, None where this version has no such setting."""
    field_ = Settings.model_fields.get(name)
    return field_.default if field_ is not None else None


# Connection caps by default, per API process: per document, per user (of an API key), per API key, per workspace.
PER_DOCUMENT = _default("realtime_max_connections_per_document")
PER_USER = _default("realtime_max_connections_per_user")
PER_WORKSPACE = _default("realtime_max_connections_per_workspace")
PER_KEY = min(c for c in (_default("realtime_max_connections_per_tenant"), PER_WORKSPACE) if c is not None)
JS = Path(__file__).resolve().parent / "js"
# Columns of the table, in order; the two ratios divide the first by the reference and by the second.
TARGETS = ("defaults", "raised", "reference", "floor")
# Browsers and Node's `ws` offer permessage-deflate; --deflate makes these clients offer it too.
COMPRESSION: str | None = None
EMPTY_UPDATE = b"\x00\x00"  # a Yjs update with nothing in it (what an empty document answers to step 1)
# A client that has sent nothing for this long renews its awareness state, as a y-websocket client does every 15 s,
# so that none meets the default idle timeout (120 s) however long a phase takes on a busy machine; rarely enough
# that the renewals (relayed to the room) stay out of the phases' measurements.
RENEW_S = 60.0
LIVE: set["Client"] = set()  # clients connected and not yet closed by us


def _awareness(client_id: int, clock: int, state: str = "{}") -> bytes:
    """An awareness message (y-protocols) of one client's state."""
    entry = lib0.uint(client_id) + lib0.uint(clock) + lib0.buf(state.encode())
    return b"\x01" + lib0.buf(lib0.uint(1) + entry)


def _sync(kind: int, payload: bytes) -> bytes:
    """A sync message: 0 = step 1 (a state vector), 1 = step 2, 2 = update (a Yjs update)."""
    return b"\x00" + bytes([kind]) + lib0.buf(payload)


class Client:
    """One socket in one room; a sender keeps a pycrdt document, a receiver only timestamps updates."""

    def __init__(self, url: str, *, sender: bool):
        self.url = url
        self.doc = Doc() if sender else None
        self.text = self.doc.get("content", type=Text) if sender else None
        self.arrivals: list[float] = []
        self.synced = asyncio.Event()
        self.changed = asyncio.Event()
        self.ws = None
        self.closed_with: int | None = None
        self.client_id = self.doc.client_id if self.doc else random.getrandbits(32)
        self.clock = 0
        self.sent_at = time.monotonic()
        self.closing = False
        self.close_reason = ""

    async def send(self, message: bytes) -> None:
        self.sent_at = time.monotonic()
        await self.ws.send(message)

    async def renew(self) -> None:
        """The y-websocket client's awareness renewal: its own state again, one clock further."""
        self.clock += 1
        await self.send(_awareness(self.client_id, self.clock))

    async def connect(self) -> None:
        self.ws = await websockets.connect(self.url, max_size=None, compression=COMPRESSION, open_timeout=60,
                                           ping_interval=None, max_queue=None)
        LIVE.add(self)
        asyncio.ensure_future(self._read())
        await self.send(_sync(0, self.doc.get_state() if self.doc else b"\x00"))
        try:
            await asyncio.wait_for(self.synced.wait(), 60)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{self.url.split('?')[0]}: no sync step 2 in 60 s (closed with"
                               f" {self.closed_with} {self.close_reason!r})") from None

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                now = time.perf_counter()
                if message[0] != 0:
                    continue  # awareness, live state
                kind = message[1]
                if kind == 0:  # the server's step 1: answer with what it lacks (nothing)
                    await self.send(_sync(1, EMPTY_UPDATE))
                elif kind == 1:
                    if self.doc is not None:
                        update = lib0.Reader(message)
                        update.skip(2)  # message type and sync step
                        self.doc.apply_update(update.bytes())
                    self.synced.set()
                elif kind == 2:  # (the reference also echoes a sender's own edits back to it: not counted)
                    self.arrivals.append(now)
                    self.changed.set()
        except websockets.ConnectionClosed as exc:
            self.closed_with = exc.rcvd.code if exc.rcvd else 1006
            self.close_reason = exc.rcvd.reason if exc.rcvd else ""
        if self.closed_with is None and not self.closing:  # a clean close (1000, 1001) that we did not ask for
            self.closed_with, self.close_reason = self.ws.close_code, self.ws.close_reason or ""
        LIVE.discard(self)
        self.changed.set()

    async def edit(self, text: str) -> float:
        """Insert `text` at the start and send the update; returns when it was sent."""
        before = self.doc.get_state()
        self.text.insert(0, text)
        update = self.doc.get_update(before)
        began = time.perf_counter()
        await self.send(_sync(2, update))
        return began

    async def wait_arrivals(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.arrivals) < count:
            if self.closed_with is not None:
                raise RuntimeError(
                    f"a client of {self.url.split('?')[0]} was closed with {self.closed_with} {self.close_reason!r}")
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{len(self.arrivals)} of {count} updates arrived")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        self.closing = True
        LIVE.discard(self)
        if self.ws is not None:
            await self.ws.close()


async def _renewing() -> None:
    """Renew the awareness of every client that has sent nothing for RENEW_S (checked every 5 s)."""
    while True:
        await asyncio.sleep(5.0)
        due = [c for c in LIVE if time.monotonic() - c.sent_at >= RENEW_S]
        await asyncio.gather(*(c.renew() for c in due), return_exceptions=True)


def _run(phase: Awaitable):
    """asyncio.run(phase) with the clients' awareness renewals going on beside it."""

    async def main():
        renewals = asyncio.ensure_future(_renewing())
        try:
            return await phase
        finally:
            renewals.cancel()

    return asyncio.run(main())


@dataclass
class Target:
    """One server under test: its room URLs, its process (RSS, CPU) and, for collab, its Postgres and Redis."""

    key: str
    url: Callable[[str], str]  # room name → a WebSocket URL (for collab, of the room's workspace's next user)
    process: psutil.Process
    store: list[psutil.Process] = field(default_factory=list)
    closed: int = 0  # sockets the server closed before the clients did, over the whole run

    async def close(self, clients: list[Client]) -> None:
        self.closed += sum(1 for c in clients if c.closed_with is not None)
        await asyncio.gather(*(c.close() for c in clients))


def _turns(targets: list[Target], i: int) -> list[Target]:
    """The targets in turn, starting one further each time (none always goes first, after the others' work)."""
    k = i % len(targets)
    return targets[k:] + targets[:k]


async def _bare_relay(port: int) -> None:
    """The floor: a relay with no auth, no storage and no Redis (websockets alone), same wire format."""
    rooms: dict[str, set] = {}

    async def handler(ws) -> None:
        peers = rooms.setdefault(ws.request.path.split("?")[0], set())
        peers.add(ws)
        try:
            async for message in ws:
                if message[:2] == b"\x00\x00":
                    await ws.send(_sync(1, EMPTY_UPDATE))
                elif message[:2] == b"\x00\x02":
                    websockets.broadcast([p for p in peers if p is not ws], message)
        finally:
            peers.discard(ws)

    async with websockets.serve(handler, "127.0.0.1", port, compression=None, max_size=None):
        await asyncio.Future()


def _serve_bare() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    child = subprocess.Popen([sys.executable, "-m", "bench.realtime", "--bare-relay", str(port)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return child, f"ws://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    child.kill()
    raise RuntimeError("the bare relay did not start")


def _reference_versions() -> str:
    """What the reference runs on (and a clear stop where bench/js is not installed)."""
    if not (JS / "node_modules" / "@y" / "websocket-server").is_dir():
        raise SystemExit(
            "bench/js is not installed: (cd bench/js && npm ci --ignore-scripts), as make bench-realtime does")

    def version(package: str) -> str:
        return json.loads((JS / "node_modules" / package / "package.json").read_text())["version"]

    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"`@y/websocket-server` {version('@y/websocket-server')} (yjs {version('yjs')}, ws {version('ws')},"
            f" Node {node})")


def _serve_reference() -> tuple[subprocess.Popen, str]:
    """The reference y-websocket server (bench/js/server.mjs), in memory: YPERSISTENCE and CALLBACK_URL unset."""
    env = {k: v for k, v in os.environ.items() if k not in ("YPERSISTENCE", "CALLBACK_URL", "GC")}
    child = subprocess.Popen(["node", "server.mjs"], cwd=JS, env=env, stdout=subprocess.PIPE, text=True)
    port = child.stdout.readline().strip()
    if not port.isdigit():
        child.kill()
        raise RuntimeError("the reference server did not start")
    return child, f"ws://127.0.0.1:{port}"


def _post(client: httpx.Client, path: str, data: dict, headers: dict) -> dict:
    response = client.post(path, json={"data": data}, headers=headers)
    response.raise_for_status()
    return response.json()["result"]


async def _crdt_add(base: str, h: dict, documents: list[str], concurrency: int = 8) -> None:
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def one(document: str) -> None:
            async with gate:
                response = await client.post(
                    "/v2/crdt/add", headers=h, json={
                        "data": {
                            "organizationId": ORG, "documentId": document, "editorId": EDITOR, "type": "text",
                            "data": ""
                        }
                    })
                response.raise_for_status()

        await asyncio.gather(*(one(d) for d in documents))


async def _tokens(base: str, h: dict, users: int, concurrency: int = 8) -> list[str]:
    """Tokens of `users` users who may edit every document of the organization."""
    gate = asyncio.Semaphore(concurrency)
    grant = {"type": "organization", "id": ORG, "accessRole": "editor"}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:

        async def one(user: int) -> str:
            async with gate:
                response = await client.post(
                    "/v2/auth/generate_token", headers=h,
                    json={"data": {"userId": f"user-{user}", "permissions": {"resources": [grant]}}})
                response.raise_for_status()
                return response.json()["result"]["data"]["token"]

        return await asyncio.gather(*(one(u) for u in range(users)))


@dataclass
class Tenant:
    """A workspace with its API key: its documents and the tokens of its users."""

    headers: dict
    tokens: list[str]


def _seed(base: str, documents: list[str], users: int) -> Tenant:
    """A new workspace and its organization with these documents (one text editor each), and `users` users."""
    with httpx.Client(base_url=base, timeout=120) as client:
        h = new_tenant(client)
        _post(client, "/v2/organizations/add", {"organizations": [{"organizationId": ORG}]}, h)
        for start in range(0, len(documents), 1000):
            _post(client, "/v2/organizations/documents/add",
                  {"organizationId": ORG, "documents": [{"documentId": d} for d in documents[start:start + 1000]]}, h)
    asyncio.run(_crdt_add(base, h, documents))
    return Tenant(h, asyncio.run(_tokens(base, h, users)))


def _api_process(port: int) -> psutil.Process:
    """The `collab api` child of the stack that serves `port`."""
    for child in psutil.Process().children(recursive=True):
        try:
            command = child.cmdline()
            if "collab.cli" in command and "api" in command and child.environ().get("COLLAB_PORT") == str(port):
                return child
        except psutil.Error:
            continue
    raise RuntimeError("no collab api process found")


def _store_processes(root: Path) -> list[psutil.Process]:
    """The stack's embedded Postgres (its postmaster; backends are counted through it) and Redis."""
    found = [psutil.Process(int(p.read_text().split()[0])) for p in root.glob("pg*/postmaster.pid")]
    for child in psutil.Process().children(recursive=True):
        try:
            if "redis" in child.name() and any(str(root) in part for part in child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def _worker_processes() -> list[psutil.Process]:
    """The stack's `collab worker` (idle here, but it shares the machine)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "collab.cli" in child.cmdline() and "worker" in child.cmdline():
                found.append(child)
        except psutil.Error:
            continue
    return found


def _quiesce(processes: list[psutil.Process], limit_s: float = 60.0, busy_s: float = 0.1) -> float:
    """Wait until the servers are idle (under `busy_s` of CPU over a second), at most `limit_s`: collab folds the
    updates of every room that closed (1,000 at once after the rooms of two), so each phase starts on a quiet
    machine. Returns the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        before = _tree_cpu(processes)
        time.sleep(1.0)
        if _tree_cpu(processes) - before < busy_s:
            break
    return time.monotonic() - began


def _rss_mib(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _tree_cpu(processes: list[psutil.Process]) -> float:
    """CPU seconds of processes and all their children, those that ended included (Postgres backends)."""
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
            children = process.children(recursive=True)
        except psutil.Error:
            continue
        for child in children:
            try:
                total += _cpu(child)
            except psutil.Error:
                pass
    return total


class Meter:
    """CPU of a target's server process (and of its store) over the spans it is measured in."""

    def __init__(self, target: Target):
        self.target, self.cpu, self.store = target, 0.0, 0.0

    def __enter__(self) -> "Meter":
        self.began = _cpu(self.target.process), _tree_cpu(self.target.store)
        return self

    def __exit__(self, *_) -> None:
        self.cpu += _cpu(self.target.process) - self.began[0]
        self.store += _tree_cpu(self.target.store) - self.began[1]


async def _open(urls: list[tuple[str, bool]], concurrency: int = 50) -> list[Client]:
    """Connected, synced clients, `concurrency` handshakes at a time."""
    clients = [Client(url, sender=sender) for url, sender in urls]
    gate = asyncio.Semaphore(concurrency)

    async def one(c: Client) -> None:
        async with gate:
            await c.connect()

    await asyncio.gather(*(one(c) for c in clients))
    return clients


class RoomRun:
    """One room's clients: the first edits, the others count receipts."""

    def __init__(self, clients: list[Client]):
        self.clients, self.sender, self.receivers = clients, clients[0], clients[1:]
        self.latencies: list[float] = []  # every receipt
        self.last: list[float] = []  # per edit: until the last client had it
        self.edits = 0

    async def one_at_a_time(self, count: int, interval: float) -> None:
        """`count` edits, each once every receiver had the one before, at most one per `interval` seconds."""
        for _ in range(count):
            began = await self.sender.edit(f"{self.edits} ")
            self.edits += 1
            await asyncio.gather(*(c.wait_arrivals(self.edits) for c in self.receivers))
            these = [c.arrivals[self.edits - 1] - began for c in self.receivers]
            self.latencies += these
            self.last.append(max(these))
            await asyncio.sleep(began + interval - time.perf_counter())

    async def back_to_back(self, count: int) -> tuple[int, float]:
        """`count` edits sent without waiting: (messages delivered, seconds until the last arrived)."""
        began = time.perf_counter()
        for _ in range(count):
            await self.sender.edit("b ")
        self.edits += count
        await asyncio.gather(*(c.wait_arrivals(self.edits) for c in self.receivers))
        return count * len(self.receivers), time.perf_counter() - began


async def _one_room(targets: list[Target], n: int, rounds: int, burst: int, chunks: int = 20) -> dict:
    """One room per target, measured in chunks taking the targets in turn."""
    runs = {t.key: RoomRun(await _open([(t.url("big"), i == 0) for i in range(n)])) for t in targets}
    meters = {t.key: Meter(t) for t in targets}
    for i in range(chunks):
        count = rounds // chunks + (1 if i < rounds % chunks else 0)
        for t in _turns(targets, i):
            with meters[t.key]:
                await runs[t.key].one_at_a_time(count, 1 / RATE)
    await asyncio.sleep(BUCKET / RATE + 0.5)  # every sender's budget full again
    # The burst in 4 parts taking the targets in turn (within the full budget whatever the order).
    delivered, bursts = {t.key: [0, 0.0] for t in targets}, {t.key: Meter(t) for t in targets}
    for i in range(4):
        for t in _turns(targets, i):
            with bursts[t.key]:
                messages, seconds = await runs[t.key].back_to_back(burst // 4 + (1 if i < burst % 4 else 0))
            delivered[t.key][0] += messages
            delivered[t.key][1] += seconds
    rates = {k: messages / seconds for k, (messages, seconds) in delivered.items()}
    for t in targets:
        await t.close(runs[t.key].clients)
    return {
        "runs": runs, "rate": rates, "cpu": {k: m.cpu / rounds
                                             for k, m in meters.items()},
        "store": {k: m.store / rounds
                  for k, m in meters.items()}, "burst_cpu": {k: m.cpu / burst
                                                             for k, m in bursts.items()}
    }


class Rooms:
    """A target's rooms of two: the first client of each edits, the second counts receipts."""

    def __init__(self, target: Target, pairs: list[Client], rss: tuple[float, float]):
        self.target, self.pairs, self.rss = target, pairs, rss
        self.held = sum(1 for c in pairs if c.closed_with is None)
        self.senders, self.receivers = pairs[0::2], pairs[1::2]
        self.burst: list[float] = []
        self.light: list[float] = []
        self.seconds = 0.0
        self.meter = Meter(target)

    async def all_at_once(self, r: int) -> None:
        began = time.perf_counter()
        with self.meter:
            starts = await asyncio.gather(*(s.edit(f"{r} ") for s in self.senders))
            await asyncio.gather(*(c.wait_arrivals(r + 1) for c in self.receivers))
        self.seconds += time.perf_counter() - began
        self.burst += [c.arrivals[r] - t for c, t in zip(self.receivers, starts)]

    async def one(self, i: int, rounds: int) -> None:
        began = await self.senders[i].edit("l ")
        await self.receivers[i].wait_arrivals(rounds + 1)
        self.light.append(self.receivers[i].arrivals[rounds] - began)


async def _many_rooms(targets: list[Target], rooms: int, rounds: int, light: int, chunks: int = 20) -> dict:
    """Every target's rooms open at once; each round of edits takes the targets in turn."""
    runs = {}
    for t in targets:
        before = _rss_mib(t.process)
        pairs = await _open([(t.url(f"r{n}"), sender) for n in range(rooms) for sender in (True, False)])
        runs[t.key] = Rooms(t, pairs, (before, _rss_mib(t.process)))
    for r in range(rounds):
        for t in _turns(targets, r):
            await runs[t.key].all_at_once(r)
    light = min(light, rooms)
    for i in range(chunks):
        for t in _turns(targets, i):
            for j in range(i * light // chunks, (i + 1) * light // chunks):
                await runs[t.key].one(j, rounds)
    for t in targets:
        run = runs[t.key]
        run.held = min(run.held, sum(1 for c in run.pairs if c.closed_with is None))
        await t.close(run.pairs)
    return runs


async def _hold(target: Target, rooms: int, count: int) -> dict:
    """Open `count` connections over the rooms, all at once held; RSS with them open."""
    before = _rss_mib(target.process)
    began = time.perf_counter()
    clients = await _open([(target.url(f"r{i % rooms}"), False) for i in range(count)])
    seconds = time.perf_counter() - began
    after = _rss_mib(target.process)
    held = sum(1 for c in clients if c.closed_with is None)
    await target.close(clients)
    return {"held": held, "rss": (before, after), "rate": count / seconds}


async def _rest_writes(base: str, url: str, h: dict, document: str, samples: int) -> dict:
    clients = await _open([(url, False), (url, False)])
    receipts, calls = [], []
    text = ""
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for i in range(samples):
            text += "x"
            began = time.perf_counter()
            response = await http.post(
                "/v2/crdt/update", headers=h,
                json={"data": {"organizationId": ORG, "documentId": document, "editorId": EDITOR, "data": text}})
            calls.append(time.perf_counter() - began)
            response.raise_for_status()
            await asyncio.gather(*(c.wait_arrivals(i + 1) for c in clients))
            receipts += [c.arrivals[i] - began for c in clients]
    await asyncio.gather(*(c.close() for c in clients))
    return {"receipts": receipts, "calls": calls}


def _uvloop() -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass


def _ms(values: list[float]) -> str:
    return f"{pct(values, 50) * 1000:.1f} | {pct(values, 99) * 1000:.1f}"


def _row(name: str, values: dict[str, float | None], fmt: str = "{:.1f}", ratios: bool = True) -> str:
    """A table row: each target's value, then collab (default limits) ÷ the reference and defaults ÷ raised."""

    def cell(v: float | None) -> str:
        return "—" if v is None else fmt.format(v)

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if ratios and a is not None and b else ""

    cells = [cell(values.get(k)) for k in TARGETS]
    d, r, ref = values.get("defaults"), values.get("raised"), values.get("reference")
    return f"| {name} | {' | '.join(cells)} | {ratio(d, ref)} | {ratio(d, r)} |"


def _per_connection(rss: tuple[float, float], count: int) -> tuple[float | None, float | None]:
    """KiB each connection added to the RSS, and connections per GiB at that rate (None where RSS did not grow)."""
    grown = rss[1] - rss[0]
    if grown <= 0 or not count:
        return None, None
    return grown * 1024 / count, count * 1024 / grown


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--room-clients", type=int, default=200)
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--burst", type=int, default=BUCKET, help=f"at most {BUCKET} (the default budget's burst)")
    parser.add_argument("--rest", type=int, default=200)
    parser.add_argument("--deflate", action="store_true", help="clients offer permessage-deflate, as browsers do")
    parser.add_argument("--hold", type=int, default=4000, help="connections opened at once at the end (0: skip)")
    parser.add_argument("--write", action="store_true", help="replace the realtime section of docs/benchmarks.md")
    parser.add_argument("--bare-relay", type=int, help=argparse.SUPPRESS)  # internal: serve the floor on this port
    args = parser.parse_args(argv)
    if args.bare_relay:
        _uvloop()
        asyncio.run(_bare_relay(args.bare_relay))
        return ""
    burst = min(args.burst, BUCKET)
    # Both ends of every socket live on this machine: room for 2 × connections descriptors and more.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    _uvloop()
    global COMPRESSION
    COMPRESSION = "deflate" if args.deflate else None
    if args.room_clients > PER_DOCUMENT:
        raise SystemExit(f"{args.room_clients} clients in a room pass the default cap ({PER_DOCUMENT} a document)")
    # Spread over workspaces (one API key each) so that no phase takes a collab process past half its default cap
    # per API key or workspace, and over users so that none passes half the cap per user; the room of
    # `room-clients` has a user per client. Rooms r0, r1, ... go to the workspaces in turn.
    peak = max(2 * args.rooms, args.hold)
    spread = max(1, math.ceil(peak / (PER_KEY / 2)))
    users = max(2, math.ceil(peak / spread / (PER_USER / 2)) if PER_USER else 0)
    rooms = ["big"] + [f"r{n}" for n in range(args.rooms)]

    def home(room: str) -> int:
        return int(room[1:]) % spread if room.startswith("r") else 0

    versions = _reference_versions()
    started = time.monotonic()
    children: list[subprocess.Popen] = []
    with stack(**LIMITS) as (base, _), api_beside(unset_prefix="COLLAB_REALTIME_", **DEFAULTS) as (base_d, api_d):
        try:
            tenants = [
                _seed(base, (["rest"] if t == 0 else []) +
                      [f"{side}-{room}" for side in ("a", "d") for room in rooms if home(room) == t],
                      max(users, args.room_clients) if t == 0 else users) for t in range(spread)
            ]

            def collab(ws_base: str, side: str) -> Callable[[str], str]:
                """URLs of a collab process's rooms, each for the next user of the room's workspace in turn."""
                turns = [itertools.count() for _ in tenants]

                def url(room: str) -> str:
                    t = home(room)
                    token = tenants[t].tokens[next(turns[t]) % len(tenants[t].tokens)]
                    return f"{ws_base}/v2/realtime/{ORG}/{side}-{room}/{EDITOR}?token={token}"

                return url

            store = _store_processes(stack_root())
            ws, ws_d = (b.replace("http://", "ws://", 1) for b in (base, base_d))
            reference, ref_url = _serve_reference()
            children.append(reference)
            relay, floor_url = _serve_bare()
            children.append(relay)
            targets = [
                Target("defaults", collab(ws_d, "d"), psutil.Process(api_d.pid), store),
                Target("raised", collab(ws, "a"), _api_process(int(base.rsplit(":", 1)[1])), store),
                Target("reference", lambda room: f"{ref_url}/{room}", psutil.Process(reference.pid)),
                Target("floor", lambda room: f"{floor_url}/{room}", psutil.Process(relay.pid))
            ]
            by = {t.key: t for t in targets}
            servers = [t.process for t in targets] + store + _worker_processes()
            took = {"set-up": time.monotonic() - started}
            waits = [_quiesce(servers)]
            idle = {t.key: _rss_mib(t.process) for t in targets}
            began = time.monotonic()
            one = _run(_one_room(targets, args.room_clients, args.rounds, burst))
            took["one room"], began = time.monotonic() - began, time.monotonic()
            waits.append(_quiesce(servers))
            many = _run(_many_rooms(targets, args.rooms, max(1, args.rounds // 10), args.rounds))
            took["rooms of two"] = time.monotonic() - began
            waits.append(_quiesce(servers))
            began = time.monotonic()
            rest = _run(
                _rest_writes(base, f"{ws}/v2/realtime/{ORG}/rest/{EDITOR}?token={tenants[0].tokens[0]}",
                             tenants[0].headers, "rest", args.rest))
            took["REST"], began = time.monotonic() - began, time.monotonic()
            # Not the collab process with limits raised: the same code as the other, it doubled the slowest part
            # of the run (4,000 handshakes) for a ratio the rooms of two show already.
            hold = {}
            for t in [by["reference"], by["floor"], by["defaults"]] if args.hold else []:
                waits.append(_quiesce(servers))
                hold[t.key] = _run(_hold(t, args.rooms, args.hold))
            took["held at once"] = time.monotonic() - began
            waits.append(_quiesce(servers))  # the last sockets' leaving done before the servers stop
        finally:
            for child in children:
                child.kill()
                child.wait()
    minutes = (time.monotonic() - started) / 60
    n, others = args.room_clients, args.room_clients - 1
    runs = one["runs"]
    lines = [
        "## Realtime (`python -m bench.realtime`, issues #19 and #34)", "",
        f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} at the end of the run ({minutes:.1f} min:"
        f" {', '.join(f'{name} {seconds:.0f} s' for name, seconds in took.items())})."
        f" Four servers in one run, driven by the same Python clients (websockets + pycrdt, the y-websocket wire"
        f" format, {'offering permessage-deflate' if args.deflate else 'no compression'}) in one more process on"
        " the same cores, so the clients' own CPU is inside every figure:", "",
        "- **collab** with its default realtime limits: one API process (`collab api --workers 1`; a worker,"
        " embedded Postgres and Redis beside it on loopback), which stores every edit in Postgres (group commit)"
        " before relaying it and publishes it to Redis for other processes. So that the load fits the default"
        f" caps with room to spare, the rooms are spread over {spread} workspace{'s' if spread > 1 else ''} (an API"
        f" key each: at most half of {PER_KEY:,} connections a workspace at any time, the lower of its caps per key"
        f"{' and per workspace' if PER_WORKSPACE else ''}) and {users} users a workspace" +
        (f" (at most half of {PER_USER} connections a user)" if PER_USER else "") +
        f", {max(users, args.room_clients)} in the first: a user per client of the room of {args.room_clients};",
        "- **collab, limits raised**: the same in another API process on the same Postgres and Redis (documents of"
        " its own), but for " + ", ".join(f"{k.removeprefix('COLLAB_')}={v}"
                                          for k, v in LIMITS.items() if k.startswith("COLLAB_REALTIME")) +
        ": the ratio defaults ÷ raised is what the bounds cost;",
        f"- **reference**: {versions}: the package's own `setupWSConnection` (bench/js/server.mjs), documents in"
        " memory, no persistence, no auth; it also echoes each edit to its sender"
        f" ({args.room_clients} sends per edit, not {args.room_clients - 1});",
        "- **floor**: a bare websockets relay (no auth, storage or Redis), the clients' and the machine's share.", "",
        f"Latency: from an edit's send to its receipt by each other client. One room: {args.rounds} edits one at a"
        f" time (at most {RATE:.0f} a second, a socket's default budget, on every server), in 20 chunks taking the"
        f" servers in turn; then {burst} edits back to back, in 4 parts taking the servers in turn. Rooms of two:"
        f" every server's rooms open at once, the servers taking turns each round. A client that has sent nothing"
        f" for {RENEW_S:.0f} s renews its awareness state"
        " (a y-websocket client does every 15 s), as the default idle timeout (120 s) expects of a live client."
        " CPU: the server process's own (for collab, the API process; Postgres and Redis"
        " on their own row; whole clock ticks, 10 ms, over the edits of a phase). Each phase starts once every"
        f" server is idle (waits: {', '.join(f'{w:.0f}' for w in waits)} s; the third follows the closing of the"
        " rooms of two, whose appended updates collab then folds). A ratio above 1 means collab's figure is the"
        " larger: worse for ms, CPU and KiB, better for messages/s and connections.", "",
        "| case | collab | collab, limits raised | reference | floor | collab ÷ reference | defaults ÷ raised |",
        "|---|---:|---:|---:|---:|---:|---:|"
    ]

    def of(f: Callable[[str], float | None], keys: tuple[str, ...] = TARGETS) -> dict[str, float | None]:
        return {k: f(k) for k in keys}

    def ms(values: Callable[[str], list[float]], q: float, keys: tuple[str, ...] = TARGETS) -> dict:
        return of(lambda k: pct(values(k), q) * 1000, keys)

    collab = ("defaults", "raised")
    receipts = len(runs["defaults"].latencies)
    lines += [
        _row(f"one room of {n}, one edit at a time: fan-out p50 ms ({receipts} receipts each)",
             ms(lambda k: runs[k].latencies, 50)),
        _row("... fan-out p99 ms", ms(lambda k: runs[k].latencies, 99)),
        _row(f"... until the last of the {others} others has it: p50 ms", ms(lambda k: runs[k].last, 50)),
        _row("... until the last has it: p99 ms", ms(lambda k: runs[k].last, 99)),
        _row("... server CPU per edit, ms", of(lambda k: one["cpu"][k] * 1000)),
        _row("... Postgres + Redis CPU per edit, ms", of(lambda k: one["store"][k] * 1000, collab), ratios=False),
        _row(f"one room of {n}, {burst} edits back to back (4 parts): messages/s", of(lambda k: one["rate"][k]),
             "{:,.0f}"),
        _row("... server CPU per edit, ms", of(lambda k: one["burst_cpu"][k] * 1000)),
        _row(f"{args.rooms} rooms × 2, every room edits at once: p50 ms ({len(many['defaults'].burst)} receipts each)",
             ms(lambda k: many[k].burst, 50)),
        _row("... p99 ms", ms(lambda k: many[k].burst, 99)),
        _row("... messages/s", of(lambda k: len(many[k].burst) / many[k].seconds), "{:,.0f}"),
        _row("... server CPU per edit, ms", of(lambda k: many[k].meter.cpu * 1000 / len(many[k].burst)), "{:.2f}"),
        _row("... Postgres + Redis CPU per edit, ms",
             of(lambda k: many[k].meter.store * 1000 / len(many[k].burst), collab), "{:.2f}", False),
        _row(f"{args.rooms} rooms × 2 open, one room edits at a time: p50 ms", ms(lambda k: many[k].light, 50)),
        _row("... p99 ms", ms(lambda k: many[k].light, 99)),
        _row(f"connections held of the {2 * args.rooms} (opened 50 handshakes at a time)", of(lambda k: many[k].held),
             "{:,.0f}", False),
        _row("server RSS at the start, MiB", of(lambda k: idle[k]), "{:.0f}"),
        _row("... just before the rooms opened, MiB", of(lambda k: many[k].rss[0]), "{:.0f}"),
        _row("... with the rooms open, MiB", of(lambda k: many[k].rss[1]), "{:.0f}"),
        _row("... KiB per connection (the RSS they added)",
             of(lambda k: _per_connection(many[k].rss, len(many[k].pairs))[0]), "{:.0f}"),
        _row("... connections per GiB of server memory, at that rate",
             of(lambda k: _per_connection(many[k].rss, len(many[k].pairs))[1]), "{:,.0f}")
    ]
    if hold:
        lines += [
            _row(f"{args.hold} connections held at once (over the {args.rooms} rooms)",
                 of(lambda k: hold[k]["held"], tuple(hold)), "{:,.0f}", False),
            _row("... opened per second (50 handshakes at a time)", of(lambda k: hold[k]["rate"], tuple(hold)),
                 "{:,.0f}"),
            _row("... server RSS with them open, MiB", of(lambda k: hold[k]["rss"][1], tuple(hold)), "{:.0f}"),
            _row("... connections per GiB of that RSS (the whole process)",
                 of(lambda k: args.hold * 1024 / hold[k]["rss"][1], tuple(hold)), "{:,.0f}")
        ]
    lines += [
        _row("sockets closed by the server over the run", of(lambda k: by[k].closed), "{:.0f}",
             False), "", "REST writes reaching connected clients (collab, limits raised):", "",
        "| case | receipts | p50 ms | p99 ms |", "|---|---:|---:|---:|",
        f"| REST crdt/update → receipt at a connected client (2 clients) | {len(rest['receipts'])} |"
        f" {_ms(rest['receipts'])} |", f"| the crdt/update call itself | {len(rest['calls'])} | {_ms(rest['calls'])} |"
    ]
    text = "\n".join(lines)
    if args.write:
        write_section("realtime", text)
    return text


if __name__ == "__main__":
    print(main())
