"""A structural check of Yjs v1 updates, run before pycrdt decodes one.

pycrdt (yrs) decodes nested `Any` values recursively in native code: a client could send an update
nested a hundred thousand levels deep and crash the process with a stack overflow. This walk reads
the same format (lib0 encoding, as Yjs and yrs write it) without recursion beyond MAX_DEPTH and refuses
anything it does not know, so only well-formed, shallow updates reach pycrdt. Strings must be UTF-8 (what
Yjs writes): yrs refuses any other when it applies the update, so one stored would break every later fold.
"""

from typing import NamedTuple

from collab.kit.lib0 import Reader

MAX_DEPTH = 100
# Shared type refs a Yjs client writes: Array, Map, Text, XmlElement, XmlFragment, XmlHook, XmlText.
_TYPE_REFS = range(0, 7)
_NAMED_TYPES = (3, 5)  # XmlElement and XmlHook carry a node name


class BadUpdate(ValueError):
    """The bytes are not a Yjs v1 update this service accepts."""


class _Reader(Reader):

    def __init__(self, data: bytes):
        super().__init__(data, BadUpdate)
        self.types = False  # whether a struct creates a shared type (nesting only a read of the result can judge)
        self.refs: list[tuple[int, int]] = []  # ids the update's structs depend on: origins and parent items

    skip_int = Reader.uint  # a signed varint has the same continuation bits

    def buf(self) -> None:
        self.skip(self.uint())

    def id(self) -> None:
        self.refs.append((self.uint(), self.uint()))


class Summary(NamedTuple):
    """What a well-formed update holds: its struct count, whether it creates shared types, and whether a document
    with the state vector it was inspected against would park some of its structs (they depend on changes that
    document lacks: yrs keeps them aside, and drops them when it encodes the document)."""

    structs: int
    types: bool
    parked: bool


def check(update: bytes, *, max_structs: int | None = None) -> int:
    """Raise BadUpdate unless `update` is a well-formed Yjs v1 update with shallow values and UTF-8 strings (and
    at most `max_structs` structs); its struct count."""
    return inspect(update, max_structs=max_structs).structs


def inspect(update: bytes, *, known: dict[int, int] | None = None, max_structs: int | None = None) -> Summary:
    """check(), and what the update holds, judged against a document whose state vector is `known`."""
    r = _Reader(update)
    known = dict(known or {})
    total, parked = 0, False
    for _ in range(r.uint()):  # clients
        structs = r.uint()
        total += structs
        if max_structs is not None and total > max_structs:
            raise BadUpdate(f"more than {max_structs} structs in one update")
        client, clock = r.uint(), r.uint()
        for _ in range(structs):
            length, skip = _struct(r)
            if not skip:
                # A struct after a gap in what the document (or this update) holds of its client is parked.
                parked = parked or clock > known.get(client, 0)
                known[client] = max(known.get(client, 0), clock + length)
            clock += length
    for _ in range(r.uint()):  # delete set: clients
        r.uint()
        for _ in range(r.uint()):
            r.uint()
            r.uint()
    parked = parked or any(clock >= known.get(client, 0) for client, clock in r.refs)
    return Summary(total, r.types, parked)


def state_vector(data: bytes) -> dict[int, int]:
    """A Yjs state vector (client → next clock), as `Doc.get_state()` encodes it."""
    r = _Reader(data)
    return {r.uint(): r.uint() for _ in range(r.uint())}


def _struct(r: _Reader) -> tuple[int, bool]:
    """Read one struct: its length in clock ticks, and whether it is a Skip (a range the update does not hold)."""
    info = r.byte()
    ref = info & 0x1F
    if ref in (0, 10):  # GC or Skip: a length
        return r.uint(), ref == 10
    if info & 0x80:  # left origin
        r.id()
    if info & 0x40:  # right origin
        r.id()
    if not info & 0xC0:
        if r.uint() == 1:
            r.string()  # the root type's name
        else:
            r.id()  # the parent item's id
        if info & 0x20:
            r.string()  # the map key
    return _content(r, ref), False


def _content(r: _Reader, ref: int) -> int:
    """Read an item's content; its length in clock ticks (UTF-16 code units for a string, as Yjs counts)."""
    if ref == 1:  # deleted: a length
        return r.uint()
    if ref == 2:  # JSON strings (yrs parses them with a depth limit)
        count = r.uint()
        for _ in range(count):
            r.string()
        return count
    if ref == 3:  # binary
        r.buf()
    elif ref == 4:  # string
        return len(r.string().encode("utf-16-le")) // 2
    elif ref == 5:  # embed (a JSON string)
        r.string()
    elif ref == 6:  # format: key and JSON string
        r.string()
        r.string()
    elif ref == 7:
        r.types = True
        type_ref = r.uint()
        if type_ref not in _TYPE_REFS:
            raise BadUpdate(f"unsupported shared type {type_ref}")
        if type_ref in _NAMED_TYPES:
            r.string()
    elif ref == 8:  # any values
        count = r.uint()
        for _ in range(count):
            _any(r, 1)
        return count
    elif ref == 9:  # subdocument: guid and options
        r.string()
        _any(r, 1)
    else:
        raise BadUpdate(f"unsupported content {ref}")
    return 1


def _any(r: _Reader, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise BadUpdate(f"values nested deeper than {MAX_DEPTH} levels")
    tag = r.byte()
    if tag in (127, 126, 121, 120):  # undefined, null, false, true
        return
    if tag == 125:
        r.skip_int()
    elif tag == 124:
        r.skip(4)
    elif tag in (123, 122):
        r.skip(8)
    elif tag == 119:
        r.string()
    elif tag == 116:  # bytes
        r.buf()
    elif tag == 118:  # object
        for _ in range(r.uint()):
            r.string()
            _any(r, depth + 1)
    elif tag == 117:  # array
        for _ in range(r.uint()):
            _any(r, depth + 1)
    else:
        raise BadUpdate(f"unknown value tag {tag}")
