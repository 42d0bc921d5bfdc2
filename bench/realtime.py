"""Realtime benchmark: Yjs fan-out over the WebSocket endpoint, one room of many clients and many rooms of two.

python -m bench.realtime [--room-clients 200] [--rooms 1000] [--rounds 100] [--burst 100] [--rest 200] [--hold 4000]
                         [--write]

Starts the full stack (bench.common.stack) with ONE API process, then, with Python clients (websockets, the
y-websocket wire format; one pycrdt document per sending client, receivers only count what arrives):

1. one room of `room-clients` clients: one client edits, `rounds` times one at a time; fan-out latency is the
   time from the edit's send to each other client's receipt (p50/p99 over every receipt); then `burst` edits
   back to back: messages delivered per second;
2. `rooms` rooms × 2 clients (2 × rooms connections held by the one process): every room's first client edits
   at once (a burst of `rooms` edits), `rounds // 10` times: latency and messages/s; and one room at a time
   (a light load while every connection stays open);
3. REST writes reaching connected clients: `rest` crdt/update calls, each timed from the request to the
   receipt at a client of the room, beside the call's own response time;
4. memory: the API process's RSS over connections, whether every connection was held, its CPU per edit; then
   `hold` connections opened over the rooms and held at once;
5. the floor: the same one-room run against a bare relay (websockets alone: no auth, storage or Redis), in
   chunks alternating with ours, so the clients' and the machine's share of the latency shows beside ours.

Limits are raised so the load never meets them (the bench measures cost, not limits). The clients share the
machine with the server, so their own CPU is inside every figure. --write replaces the "realtime" section of
docs/benchmarks.md.
"""

import argparse
import asyncio
import resource
import socket
import subprocess
import sys
import time

import httpx
import psutil
import websockets
from pycrdt import Doc, Text

from bench.common import _free_port, machine, new_tenant, pct, stack, write_section
from collab.kit import lib0

ORG, EDITOR = "org-rt", "editor-1"
LIMITS = {
    "COLLAB_API_WORKERS": "1",
    "COLLAB_RATE_LIMIT_API_KEY": "100000000/minute",
    "COLLAB_REALTIME_UPDATES_PER_S": "100000",
    "COLLAB_REALTIME_MAX_CONNECTIONS_PER_DOCUMENT": "100000",
    "COLLAB_REALTIME_MAX_CONNECTIONS_PER_TENANT": "100000",
    "COLLAB_REALTIME_IDLE_TIMEOUT_S": "3600",
    "COLLAB_REALTIME_SEND_QUEUE": "10000",
    "COLLAB_DB_POOL_MAX": "20",
}
# Browsers and Node's `ws` offer permessage-deflate; --deflate makes these clients offer it too.
COMPRESSION: str | None = None
EMPTY_UPDATE = b"\x00\x00"  # a Yjs update with nothing in it (what an empty document answers to step 1)


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

    async def connect(self) -> None:
        self.ws = await websockets.connect(self.url, max_size=None, compression=COMPRESSION, open_timeout=60,
                                           ping_interval=None, max_queue=None)
        asyncio.ensure_future(self._read())
        await self.ws.send(_sync(0, self.doc.get_state() if self.doc else b"\x00"))
        await asyncio.wait_for(self.synced.wait(), 60)

    async def _read(self) -> None:
        try:
            async for message in self.ws:
                now = time.perf_counter()
                if message[0] != 0:
                    continue  # awareness, live state
                kind = message[1]
                if kind == 0:  # the server's step 1: answer with what it lacks (nothing)
                    await self.ws.send(_sync(1, EMPTY_UPDATE))
                elif kind == 1:
                    if self.doc is not None:
                        update = lib0.Reader(message)
                        update.skip(2)  # message type and sync step
                        self.doc.apply_update(update.bytes())
                    self.synced.set()
                elif kind == 2:
                    self.arrivals.append(now)
                    self.changed.set()
        except websockets.ConnectionClosed as exc:
            self.closed_with = exc.rcvd.code if exc.rcvd else 1006
        self.changed.set()

    async def edit(self, text: str) -> float:
        """Insert `text` at the start and send the update; returns when it was sent."""
        before = self.doc.get_state()
        self.text.insert(0, text)
        update = self.doc.get_update(before)
        began = time.perf_counter()
        await self.ws.send(_sync(2, update))
        return began

    async def wait_arrivals(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.arrivals) < count:
            if self.closed_with is not None:
                raise RuntimeError(f"a client was closed with {self.closed_with}")
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{len(self.arrivals)} of {count} updates arrived")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


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


def _post(client: httpx.Client, path: str, data: dict, headers: dict) -> dict:
    response = client.post(path, json={"data": data}, headers=headers)
    response.raise_for_status()
    return response.json()["result"]


def _seed(client: httpx.Client, h: dict, documents: list[str]) -> str:
    """Documents with one text editor each; a token of a user who may edit all of them."""
    _post(client, "/v2/organizations/add", {"organizations": [{"organizationId": ORG}]}, h)
    for start in range(0, len(documents), 1000):
        _post(client, "/v2/organizations/documents/add",
              {"organizationId": ORG, "documents": [{"documentId": d} for d in documents[start:start + 1000]]}, h)
    for document in documents:
        _post(client, "/v2/crdt/add", {"organizationId": ORG, "documentId": document, "editorId": EDITOR,
                                       "type": "text", "data": ""}, h)
    grant = {"type": "organization", "id": ORG, "accessRole": "editor"}
    return _post(client, "/v2/auth/generate_token", {"userId": "bench-user", "permissions": {"resources": [grant]}},
                 h)["data"]["token"]


def _api_process() -> psutil.Process:
    """The one `collab api` child of the stack."""
    for child in psutil.Process().children(recursive=True):
        try:
            command = child.cmdline()
        except psutil.Error:
            continue
        if "collab.cli" in command and "api" in command:
            return child
    raise RuntimeError("no collab api process found")


def _rss_mib(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


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

    async def one_at_a_time(self, count: int) -> None:
        for _ in range(count):
            began = await self.sender.edit(f"{self.edits} ")
            self.edits += 1
            await asyncio.gather(*(c.wait_arrivals(self.edits) for c in self.receivers))
            these = [c.arrivals[self.edits - 1] - began for c in self.receivers]
            self.latencies += these
            self.last.append(max(these))

    async def back_to_back(self, count: int) -> float:
        """Messages delivered per second over `count` edits sent without waiting."""
        began = time.perf_counter()
        for _ in range(count):
            await self.sender.edit("b ")
        self.edits += count
        await asyncio.gather(*(c.wait_arrivals(self.edits) for c in self.receivers))
        return count * len(self.receivers) / (time.perf_counter() - began)


async def _one_room(url: str, floor_url: str, n: int, rounds: int, burst: int, api: psutil.Process,
                    chunks: int = 5) -> dict:
    """Our room and the bare relay's, measured in alternating chunks (the machine's load changes over time)."""
    ours = RoomRun(await _open([(url, i == 0) for i in range(n)]))
    floor = RoomRun(await _open([(floor_url, i == 0) for i in range(n)]))
    cpu = 0.0
    for i in range(chunks):
        count = rounds // chunks + (1 if i < rounds % chunks else 0)
        began = _cpu(api)
        await ours.one_at_a_time(count)
        cpu += _cpu(api) - began
        await floor.one_at_a_time(count)
    began = _cpu(api)
    rate = await ours.back_to_back(burst)
    burst_cpu = _cpu(api) - began
    floor_rate = await floor.back_to_back(burst)
    await asyncio.gather(*(c.close() for c in ours.clients + floor.clients))
    return {"ours": ours, "floor": floor, "rate": rate, "floor_rate": floor_rate, "cpu_per_edit": cpu / rounds,
            "burst_cpu_per_edit": burst_cpu / burst}


def _cpu(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return times.user + times.system


async def _many_rooms(urls: list[str], rounds: int, light: int, api: psutil.Process) -> dict:
    before = _rss_mib(api)
    pairs = await _open([(u, sender) for u in urls for sender in (True, False)])
    held = sum(1 for c in pairs if c.closed_with is None)
    after = _rss_mib(api)
    senders, receivers = pairs[0::2], pairs[1::2]
    burst_latencies = []
    cpu = _cpu(api)
    began_all = time.perf_counter()
    for r in range(rounds):
        starts = await asyncio.gather(*(s.edit(f"{r} ") for s in senders))
        await asyncio.gather(*(c.wait_arrivals(r + 1) for c in receivers))
        burst_latencies += [c.arrivals[r] - t for c, t in zip(receivers, starts)]
    rate = rounds * len(receivers) / (time.perf_counter() - began_all)
    cpu = (_cpu(api) - cpu) / (rounds * len(senders))
    light_latencies = []
    for i in range(min(light, len(senders))):
        began = await senders[i].edit("l ")
        await receivers[i].wait_arrivals(rounds + 1)
        light_latencies.append(receivers[i].arrivals[rounds] - began)
    still = sum(1 for c in pairs if c.closed_with is None)
    await asyncio.gather(*(c.close() for c in pairs))
    return {"connections": len(pairs), "held": min(held, still), "rss_before": before, "rss_after": after,
            "burst": burst_latencies, "rate": rate, "light": light_latencies, "cpu_per_edit": cpu}


async def _hold(urls: list[str], count: int, api: psutil.Process) -> dict:
    """Open `count` connections over the rooms, all at once held; RSS with them open."""
    before = _rss_mib(api)
    began = time.perf_counter()
    clients = await _open([(urls[i % len(urls)], False) for i in range(count)])
    seconds = time.perf_counter() - began
    after = _rss_mib(api)
    held = sum(1 for c in clients if c.closed_with is None)
    await asyncio.gather(*(c.close() for c in clients))
    return {"count": count, "held": held, "rss_before": before, "rss_after": after, "rate": count / seconds}


async def _rest_writes(base: str, url: str, h: dict, document: str, samples: int) -> dict:
    clients = await _open([(url, False), (url, False)])
    receipts, calls = [], []
    text = ""
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for i in range(samples):
            text += "x"
            began = time.perf_counter()
            response = await http.post("/v2/crdt/update", headers=h, json={"data": {
                "organizationId": ORG, "documentId": document, "editorId": EDITOR, "data": text}})
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


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--room-clients", type=int, default=200)
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--burst", type=int, default=100)
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
    # Both ends of every socket live on this machine: room for 2 × connections descriptors and more.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    _uvloop()
    global COMPRESSION
    COMPRESSION = "deflate" if args.deflate else None
    documents = ["doc-big", "doc-rest"] + [f"doc-{n}" for n in range(args.rooms)]
    with stack(**LIMITS) as (base, _):
        with httpx.Client(base_url=base, timeout=120) as client:
            h = new_tenant(client)
            token = _seed(client, h, documents)
        ws = base.replace("http://", "ws://", 1)
        url = {d: f"{ws}/v2/realtime/{ORG}/{d}/{EDITOR}?token={token}" for d in documents}
        api = _api_process()
        idle = _rss_mib(api)
        relay, floor_url = _serve_bare()
        try:
            one = asyncio.run(_one_room(url["doc-big"], floor_url + "/room", args.room_clients, args.rounds,
                                        args.burst, api))
        finally:
            relay.kill()
            relay.wait()
        many = asyncio.run(_many_rooms([url[f"doc-{n}"] for n in range(args.rooms)], max(1, args.rounds // 10),
                                       args.rounds, api))
        rest = asyncio.run(_rest_writes(base, url["doc-rest"], h, "doc-rest", args.rest))
        hold = asyncio.run(_hold([url[f"doc-{n}"] for n in range(args.rooms)], args.hold, api)) if args.hold else None
    per_connection_kib = (many["rss_after"] - many["rss_before"]) * 1024 / max(1, many["connections"])
    lines = [
        "## Realtime (`python -m bench.realtime`, issue #19)",
        "",
        f"Machine: {machine()}. One API process (`collab api --workers 1`), a worker, embedded Postgres and Redis"
        f" on loopback; the Python clients (websockets + pycrdt, the y-websocket wire format,"
        f" {'offering permessage-deflate' if args.deflate else 'no compression'}) run in one more"
        " process on the same cores, so their own CPU is inside every figure. Latency: from an edit's send to its"
        " receipt by each other client.",
        "",
        "| case | receipts | p50 ms | p99 ms | messages/s |",
        "|---|---:|---:|---:|---:|",
        f"| one room, {args.room_clients} clients, one edit at a time | {len(one['ours'].latencies)} |"
        f" {_ms(one['ours'].latencies)} | |",
        f"| ... until the last of the {args.room_clients - 1} others has it | {len(one['ours'].last)} |"
        f" {_ms(one['ours'].last)} | |",
        f"| floor: a bare relay (websockets alone: no auth, storage, Redis), same clients, interleaved |"
        f" {len(one['floor'].latencies)} | {_ms(one['floor'].latencies)} | |",
        f"| ... until the last of the others has it | {len(one['floor'].last)} | {_ms(one['floor'].last)} | |",
        f"| one room, {args.room_clients} clients, {args.burst} edits back to back |"
        f" {args.burst * (args.room_clients - 1)} | | | {one['rate']:.0f} |",
        f"| floor: the bare relay, {args.burst} edits back to back | {args.burst * (args.room_clients - 1)} | | |"
        f" {one['floor_rate']:.0f} |",
        f"| {args.rooms} rooms × 2 clients, every room edits at once | {len(many['burst'])} | {_ms(many['burst'])} |"
        f" {many['rate']:.0f} |",
        f"| {args.rooms} rooms × 2 clients open, one room edits at a time | {len(many['light'])} |"
        f" {_ms(many['light'])} | |",
        f"| REST crdt/update → receipt at a connected client (2 clients) | {len(rest['receipts'])} |"
        f" {_ms(rest['receipts'])} | |",
        f"| the crdt/update call itself | {len(rest['calls'])} | {_ms(rest['calls'])} | |",
        "",
        f"Connections: {many['held']} of {many['connections']} held by one API process; its RSS {idle:.0f} MiB idle,"
        f" {many['rss_before']:.0f} MiB before and {many['rss_after']:.0f} MiB with them open:"
        f" {per_connection_kib:.0f} KiB per connection. API process CPU per edit: {one['cpu_per_edit'] * 1000:.1f} ms"
        f" in the {args.room_clients}-client room (store + {args.room_clients - 1} sends;"
        f" {one['burst_cpu_per_edit'] * 1000:.1f} ms back to back),"
        f" {many['cpu_per_edit'] * 1000:.1f} ms in the rooms of two.",
    ]
    if hold:
        kib = (hold["rss_after"] - hold["rss_before"]) * 1024 / hold["count"]
        lines.append(f"Held at once: {hold['held']} of {hold['count']} connections (opened at {hold['rate']:.0f}/s,"
                     f" 50 handshakes at a time), RSS {hold['rss_before']:.0f} → {hold['rss_after']:.0f} MiB"
                     f" ({kib:.0f} KiB per connection).")
    text = "\n".join(lines)
    if args.write:
        write_section("realtime", text)
    return text


if __name__ == "__main__":
    print(main())
