"""The y-websocket wire format: each binary WebSocket message is a varUint type and its payload.

0 sync (y-protocols step 1 / step 2 / update), 1 awareness, 3 query awareness, and ours: 100 live state (one
varString of JSON). Pure functions over bytes; anything that does not parse raises Malformed (close 4400).
"""

import json
from typing import Any

from collab.kit import lib0
from collab.kit.lib0 import Reader

SYNC, AWARENESS, AUTH, QUERY_AWARENESS, LIVESTATE = 0, 1, 2, 3, 100
STEP1, STEP2, UPDATE = 0, 1, 2
EMPTY_UPDATE = b"\x00\x00"  # a Yjs update that changes nothing (what an up-to-date client answers step 1 with)
# An awareness update of no client: changes nothing, but the y-websocket client counts it as a message (it drops
# and reopens a socket that heard nothing for 30 s, WebSocket pings unseen by it).
KEEPALIVE = bytes([AWARENESS]) + lib0.buf(lib0.uint(0))

# Close codes (docs/realtime.md).
BAD_TOKEN, NO_ACCESS, UNKNOWN, IDLE, TOO_LARGE, LIMITED, MALFORMED = 4401, 4403, 4404, 4408, 4413, 4429, 4400
SLOW, SERVER_ERROR = 1013, 1011


def server_options(max_message_bytes: int) -> dict[str, Any]:
    """Uvicorn's WebSocket options for the realtime route."""
    return dict(
        # Compression would be negotiated per socket (browsers always offer it), so a room's one encoded update
        # would be compressed again for every recipient: measured 2x memory per connection and ~10% more CPU.
        ws_per_message_deflate=False,
        # Frames a little over our own limit still reach the route and get its 4413; far larger ones are cut by
        # the server (1009) before they are buffered whole (its default would buffer 16 MiB per socket).
        ws_max_size=max_message_bytes + 65536)


class Malformed(ValueError):
    """A message this protocol does not allow; the text goes into the close reason."""


class Oversize(Malformed):
    """A message part over its byte cap (close 4413)."""


def parse(message: bytes, *, max_clients: int = 4, max_state_bytes: int = 16384) -> tuple[int, int, Any]:
    """(type, sync step or 0, payload): sync → update or state vector bytes, awareness → its entries (at most
    `max_clients`, each state at most `max_state_bytes`), query awareness → None, live state → the JSON value."""
    r = Reader(message, Malformed)
    kind = r.uint()
    if kind == SYNC:
        step = r.uint()
        if step not in (STEP1, STEP2, UPDATE):
            raise Malformed("unknown sync message")
        payload = r.bytes()
        r.end()
        return kind, step, payload
    if kind == AWARENESS:
        update = r.bytes()
        r.end()
        return kind, 0, awareness_entries(update, max_clients=max_clients, max_state_bytes=max_state_bytes)
    if kind == QUERY_AWARENESS:
        return kind, 0, None
    if kind == LIVESTATE:
        text = r.string()
        r.end()
        try:
            return kind, 0, json.loads(text)
        except ValueError:
            raise Malformed("live state message is not JSON") from None
    raise Malformed("unknown message type")


def awareness_entries(update: bytes, *, max_clients: int, max_state_bytes: int) -> list[tuple[int, int, str]]:
    """(client id, clock, state JSON text) of each client in an awareness update; bounded before anything is decoded
    (a y-websocket client sends its own one client, so a message of thousands is refused, not parsed)."""
    r = Reader(update, Malformed)
    count = r.uint()
    if count > max_clients:
        raise Malformed(f"an awareness message may carry at most {max_clients} clients")
    entries = []
    for _ in range(count):
        client, clock, raw = r.uint(), r.uint(), r.bytes()
        if len(raw) > max_state_bytes:
            raise Oversize(f"an awareness state may carry at most {max_state_bytes} bytes")
        try:
            entries.append((client, clock, raw.decode()))
        except UnicodeDecodeError:
            raise Malformed("an awareness state is not UTF-8") from None
    r.end()
    return entries


def awareness(entries: list[tuple[int, int, str]]) -> bytes:
    """An awareness message carrying these clients' states ("null": the client left)."""
    body = bytearray(lib0.uint(len(entries)))
    for client, clock, state in entries:
        raw = state.encode()
        body += lib0.uint(client) + lib0.uint(clock) + lib0.buf(raw)
    return bytes([AWARENESS]) + lib0.buf(bytes(body))


def step1(state_vector: bytes) -> bytes:
    """Sync step 1: the sender's state vector (the answer is what it lacks)."""
    return bytes([SYNC, STEP1]) + lib0.buf(state_vector)


def step2(update: bytes) -> bytes:
    """Sync step 2: what the step 1's sender lacks."""
    return bytes([SYNC, STEP2]) + lib0.buf(update)


def update(data: bytes) -> bytes:
    """A sync update message."""
    return bytes([SYNC, UPDATE]) + lib0.buf(data)


def livestate(value: Any) -> bytes:
    """A live state message (type 100) carrying one JSON value."""
    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    return lib0.uint(LIVESTATE) + lib0.buf(raw)
