"""Yjs updates that once broke a CRDT editor (review findings 6 and 7): the realtime tests send them over a socket,
and the smoke fuzz sends them to crdt/update as yjsUpdate."""

import base64

from pycrdt import Doc, Map, Text

from collab.kit.lib0 import uint

# The review's 22-byte message's update: one string struct whose content is not UTF-8 (ff fe).
NOT_UTF8 = bytes.fromhex("0101e70700040107636f6e74656e7402fffe00")


def deep_map(levels: int = 105) -> bytes:
    """Maps nested `levels` deep through parent items (not values): it folds, but cannot be read."""
    doc = Doc()
    node = doc.get("content", type=Map)
    for _ in range(levels):
        node["k"] = Map()
        node = node["k"]
    return doc.get_update()


def parked() -> bytes:
    """An update that depends on an earlier one of its client that the server never saw."""
    doc = Doc()
    text = doc.get("content", type=Text)
    text.insert(0, "never sent")
    seen = doc.get_state()
    text.insert(0, "sent: ")
    return doc.get_update(seen)


def gc_structs(count: int) -> bytes:
    """One client's `count` one-length GC structs (the review's 2 MB message held a million)."""
    return uint(1) + uint(count) + uint(12345) + uint(0) + bytes([0, 1]) * count + uint(0)


BASE64 = [base64.b64encode(u).decode() for u in (NOT_UTF8, deep_map(), parked(), gc_structs(1000))]
