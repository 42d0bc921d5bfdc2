"""A structural check of Yjs v1 updates, run before pycrdt decodes one.

pycrdt (yrs) decodes nested `Any` values recursively in native code: a client could send an update
nested a hundred thousand levels deep and crash the process with a stack overflow. This walk reads
the same format (lib0 encoding, as Yjs and yrs write it) without recursion beyond MAX_DEPTH and refuses
anything it does not know, so only well-formed, shallow updates reach pycrdt.
"""

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

    skip_int = Reader.uint  # a signed varint has the same continuation bits

    def buf(self) -> None:
        self.skip(self.uint())

    string = buf


def check(update: bytes) -> int:
    """Raise BadUpdate unless `update` is a well-formed Yjs v1 update with shallow values; its struct count."""
    r = _Reader(update)
    total = 0
    for _ in range(r.uint()):  # clients
        structs = r.uint()
        r.uint()  # client id
        r.uint()  # first clock
        for _ in range(structs):
            _struct(r)
        total += structs
    for _ in range(r.uint()):  # delete set: clients
        r.uint()
        for _ in range(r.uint()):
            r.uint()
            r.uint()
    return total


def _struct(r: _Reader) -> None:
    info = r.byte()
    ref = info & 0x1F
    if ref in (0, 10):  # GC or Skip: a length
        r.uint()
        return
    if info & 0x80:  # left origin
        r.uint(), r.uint()
    if info & 0x40:  # right origin
        r.uint(), r.uint()
    if not info & 0xC0:
        if r.uint() == 1:
            r.string()  # the root type's name
        else:
            r.uint(), r.uint()  # the parent item's id
        if info & 0x20:
            r.string()  # the map key
    _content(r, ref)


def _content(r: _Reader, ref: int) -> None:
    if ref == 1:  # deleted: a length
        r.uint()
    elif ref == 2:  # JSON strings (yrs parses them with a depth limit)
        for _ in range(r.uint()):
            r.string()
    elif ref in (3, 4, 5):  # binary, string, embed (a JSON string)
        r.buf()
    elif ref == 6:  # format: key and JSON string
        r.string()
        r.string()
    elif ref == 7:
        type_ref = r.uint()
        if type_ref not in _TYPE_REFS:
            raise BadUpdate(f"unsupported shared type {type_ref}")
        if type_ref in _NAMED_TYPES:
            r.string()
    elif ref == 8:  # any values
        for _ in range(r.uint()):
            _any(r, 1)
    elif ref == 9:  # subdocument: guid and options
        r.string()
        _any(r, 1)
    else:
        raise BadUpdate(f"unsupported content {ref}")


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
    elif tag in (119, 116):  # string, bytes
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
