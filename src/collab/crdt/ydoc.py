"""Yjs documents of CRDT editors: write JSON content as a diff, read it back, merge clients' updates.

Pure functions over bytes, no I/O. A stored document is one Yjs update that encodes its whole state;
the content lives in the root shared type named `contentKey`, of the kind that `type` names. Values
written inside maps and arrays are plain JSON values (Yjs "any" content); shared types that Yjs clients
nested in a map are changed in place.
"""

import base64
import difflib
import json
from typing import Any, Callable, Sequence, TypeVar

from pycrdt import Array, Doc, Map, Text, XmlElement, XmlFragment, XmlText, get_state, get_update

from collab.crdt import updates, xmltree

T = TypeVar("T")
# A root Y.XmlText is encoded exactly like a root Y.Text (updates name roots, not their types), and
# pycrdt has no root XmlText: xmltext content lives in a root Text.
_ROOTS = {"text": Text, "xmltext": Text, "map": Map, "array": Array, "xml": XmlFragment}
_SHAPES = {
    "text": (str, "a string"), "xmltext": (str, "a string"), "xml": (str, "a string"), "map": (dict, "an object"),
    "array": (list, "an array")
}
MAX_DEPTH = 100
SAFE_INT = 2**53  # Yjs numbers are JavaScript doubles
CHAR_DIFF_MAX = 1000  # longest changed span diffed character by character; longer ones go line by line
SEQ_DIFF_MAX = 2000  # longest changed run of lines, items or children diffed item by item


class BadContent(ValueError):
    """Content or an update this service cannot store; the message is for the client."""


class Spoiled(BadContent):
    """An update was refused after it reached the document, which must be built again without it."""


def shape_error(kind: str, data: Any) -> str | None:
    """The message when `data` does not have the shape `kind` needs, else None."""
    expected, words = _SHAPES[kind]
    return None if isinstance(data, expected) else f"Data must be {words} for type {kind}."


def write(kind: str, key: str, state: bytes | None, data: Any) -> bytes:
    """The document (new when `state` is None) with its content changed to `data` by diff operations."""
    if kind in ("map", "array"):
        data = _storable(data, 1)
    elif kind == "xml":
        try:
            data = xmltree.parse(_utf8(data))
        except xmltree.BadXml as exc:
            raise BadContent(str(exc)) from exc
    else:
        _utf8(data)
    doc = load(state)
    root = doc.get(key, type=_ROOTS[kind])
    _native(lambda: _apply(kind, root, data), "Data cannot be stored")
    return doc.get_update()


def read(kind: str, key: str, state: bytes | Doc) -> Any:
    """The content as JSON: text → string, map → object, array → array, xml → XML string (of a stored state, or of
    a document already loaded)."""
    return _read(state if isinstance(state, Doc) else load(state), kind, key)


def merge(kind: str, key: str, state: bytes, update: bytes) -> bytes:
    """The document with a client's Yjs update applied; refused when it is malformed or incomplete."""
    try:
        updates.check(update)
    except updates.BadUpdate as exc:
        raise BadContent(f"yjsUpdate is not a valid Yjs update: {exc}.") from exc
    doc = load(state)

    def apply() -> bytes:
        doc.apply_update(update)
        return get_update(update, doc.get_state())

    if updates.check(_native(apply, "yjsUpdate cannot be applied")):
        # Structs the document still lacks were parked by yrs for want of their dependencies, and would
        # be dropped when encoding: say so instead.
        raise BadContent("yjsUpdate depends on changes this document does not have: "
                         "fetch the document with format yjs, apply the update there and send it again.")
    _read(doc, kind, key)  # what is stored must read back
    return doc.get_update()


def fold(kind: str, key: str, state: bytes, pending: list[bytes]) -> tuple[Doc, list[tuple[int, str]]]:
    """The stored state with the updates appended over the WebSocket since (in order) folded into it, leaving out
    each one that cannot be applied or leaves the content unreadable (stored by a release that checked less); the
    document and (index, why) of each update left out."""
    doc = load(state)
    try:
        for update in pending:
            _native(lambda: doc.apply_update(update), "A stored update cannot be applied")
        if pending:
            _read(doc, kind, key)
        return doc, []
    except BadContent:
        pass
    readable = _readable(load(state), kind, key)  # else nothing can make it worse: fold what applies
    doc, good, bad = load(state), [], []
    for i, update in enumerate(pending):
        try:
            _native(lambda: doc.apply_update(update), "A stored update cannot be applied")
            if readable:
                _read(doc, kind, key)
            good.append(update)
        except BadContent as exc:
            bad.append((i, str(exc)))
            doc = load(state)  # what failed may have changed it halfway: start again from what applied
            for update in good:
                doc.apply_update(update)
    return doc, bad


def try_update(doc: Doc, kind: str, key: str, update: bytes, *, max_structs: int, read: bool | None = None) -> None:
    """Apply a client's update to `doc` (the editor's whole document) after checking it to REST's standard: well
    formed, UTF-8 strings, at most `max_structs` structs, nothing that the document would park; BadContent when
    not. With `read` (None: when it creates shared types or the content is not text), the content must read back
    after. Spoiled when it failed once applied: the document is changed and must be built again."""
    try:
        found = updates.inspect(update, known=updates.state_vector(doc.get_state()), max_structs=max_structs)
    except updates.BadUpdate as exc:
        raise BadContent(f"not a valid Yjs update ({exc})") from exc
    if found.parked:
        raise BadContent("the update depends on changes this document does not have")
    try:
        apply(doc, update)
        if read or (read is None and (found.types or kind not in ("text", "xmltext"))):
            _read(doc, kind, key)
    except BadContent as exc:
        raise Spoiled(str(exc)) from exc


def apply(doc: Doc, update: bytes) -> None:
    """Apply an update to a document; BadContent when yrs refuses it (the document may then be changed in part)."""
    _native(lambda: doc.apply_update(update), "the update cannot be applied")


def _readable(doc: Doc, kind: str, key: str) -> bool:
    try:
        _read(doc, kind, key)
    except BadContent:
        return False
    return True


def diff(old: bytes, new: bytes) -> bytes:
    """The update that turns a client holding document `old` into one holding `new` (what changed)."""
    return get_update(new, get_state(old))


def encode(state: bytes) -> str:
    """The stored state as base64 (it is already an update that encodes the whole document)."""
    return base64.b64encode(state).decode()


def load(state: bytes | None) -> Doc:
    """A document from its stored state (an empty one for None)."""
    doc: Doc = Doc()
    if state:
        doc.apply_update(state)
    return doc


def _read(doc: Doc, kind: str, key: str) -> Any:
    root = doc.get(key, type=_ROOTS[kind])
    try:
        return xmltree.render(root) if kind == "xml" else _plain(root, 1)
    except xmltree.BadXml as exc:
        raise BadContent(str(exc)) from exc


def _native(call: Callable[[], T], message: str) -> T:
    try:
        return call()
    except BadContent:
        raise
    except ValueError as exc:
        raise BadContent(f"{message}: {exc}") from exc
    except BaseException as exc:
        # pyo3 reports a Rust panic as PanicException, which derives from BaseException.
        if type(exc).__name__ != "PanicException":
            raise
        raise BadContent(f"{message}.") from exc


def _apply(kind: str, root: Any, data: Any) -> None:
    # No enclosing transaction on purpose: yrs copies the pending run of "any" values on each append
    # within one transaction (quadratic memory), while one transaction per operation stays linear.
    if kind in ("text", "xmltext"):
        _set_text(root, data)
    elif kind == "map":
        _set_map(root, data)
    elif kind == "array":
        _set_array(root, data)
    else:
        _set_xml(root, data)


def _set_text(text: Text, new: str) -> None:
    old = str(text)
    edits = _text_edits(old, new, 0, by_lines=True)
    # pycrdt indexes text by UTF-8 bytes: turn code-point spans into byte spans, then apply from the end.
    spans, cp, byte = [], 0, 0
    for start, end, replacement in edits:
        byte += len(old[cp:start].encode())
        removed = len(old[start:end].encode())
        spans.append((byte, removed, replacement))
        byte, cp = byte + removed, end
    for at, removed, replacement in reversed(spans):
        if removed:
            del text[at:at + removed]
        if replacement:
            text.insert(at, replacement)


def _text_edits(old: str, new: str, base: int, *, by_lines: bool) -> list[tuple[int, int, str]]:
    """(start, end, replacement) spans of `old` in code points, ascending, that turn it into `new`."""
    head = _common(old, new, lambda n: old[:n] == new[:n])
    tail = _common(old[head:], new[head:], lambda n: old[len(old) - n:] == new[len(new) - n:])
    a, b, base = old[head:len(old) - tail], new[head:len(new) - tail], base + head
    if not a and not b:
        return []
    if len(a) <= CHAR_DIFF_MAX and len(b) <= CHAR_DIFF_MAX:
        return [(base + i1, base + i2, b[j1:j2]) for i1, i2, j1, j2 in _changes(a, b)]
    lines_a, lines_b = a.splitlines(keepends=True), b.splitlines(keepends=True)
    if not by_lines or len(lines_a) <= 1 or len(lines_b) <= 1:
        return [(base, base + len(a), b)]
    at_a, at_b = _offsets(lines_a), _offsets(lines_b)
    edits = []
    for i1, i2, j1, j2 in _changes(lines_a, lines_b):
        piece_a, piece_b = a[at_a[i1]:at_a[i2]], b[at_b[j1]:at_b[j2]]
        edits += _text_edits(piece_a, piece_b, base + at_a[i1], by_lines=False)
    return edits


def _common(a: Sequence, b: Sequence, same: Callable[[int], bool]) -> int:
    """The longest n with same(n), by binary search (slice comparisons run at C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _offsets(lines: list[str]) -> list[int]:
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


def _changes(a: Sequence, b: Sequence) -> list[tuple[int, int, int, int]]:
    """Spans (i1, i2, j1, j2) where a[i1:i2] becomes b[j1:j2]; bounded work on long sequences."""
    head = _common(a, b, lambda n: a[:n] == b[:n])
    tail = _common(a[head:], b[head:], lambda n: a[len(a) - n:] == b[len(b) - n:])
    end_a, end_b = len(a) - tail, len(b) - tail
    if head == end_a and head == end_b:
        return []
    if end_a - head > SEQ_DIFF_MAX or end_b - head > SEQ_DIFF_MAX or head == end_a or head == end_b:
        return [(head, end_a, head, end_b)]
    matcher = difflib.SequenceMatcher(None, a[head:end_a], b[head:end_b], autojunk=False)
    return [(head + i1, head + i2, head + j1, head + j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != "equal"]


def _set_map(root: Map, new: dict[str, Any]) -> None:
    current = dict(root.items())
    for gone in current.keys() - new.keys():
        del root[gone]
    for k, v in new.items():
        was = current.get(k)
        # A shared type a Yjs client put here is changed in place, so its own concurrent edits merge.
        if isinstance(was, Text) and isinstance(v, str):
            _set_text(was, v)
        elif isinstance(was, Map) and isinstance(v, dict):
            _set_map(was, v)
        elif isinstance(was, Array) and isinstance(v, list):
            _set_array(was, v)
        elif k not in current or _key(_plain(was, 2)) != _key(v):
            root[k] = v


def _set_array(root: Array, new: list[Any]) -> None:
    old = [_key(_plain(v, 2)) for v in root]
    for i1, i2, j1, j2 in reversed(_changes(old, [_key(v) for v in new])):
        if i2 > i1:
            del root[i1:i2]
        for offset, value in enumerate(new[j1:j2]):
            root.insert(i1 + offset, value)


def _set_xml(root: XmlFragment, new: list[xmltree.Parsed]) -> None:
    # Top-level children that did not change stay as they are, with any concurrent edits inside them.
    old = [xmltree.render(child) for child in root.children]
    for i1, i2, j1, j2 in reversed(_changes(old, [xmltree.dump(n) for n in new])):
        if i2 > i1:
            del root.children[i1:i2]
        for offset, node in enumerate(new[j1:j2]):
            root.children.insert(i1 + offset, xmltree.build(node))


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _utf8(text: str) -> str:
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise BadContent("Data holds an unpaired surrogate, which is not valid Unicode text.") from exc
    return text


def _storable(value: Any, depth: int) -> Any:
    """A JSON value as pycrdt stores it: checked depth and text, integers a double can carry."""
    if depth > MAX_DEPTH:
        raise BadContent(f"Data is nested deeper than {MAX_DEPTH} levels.")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, int):
        if -SAFE_INT <= value <= SAFE_INT:
            return value
        try:
            return float(value)
        except OverflowError as exc:
            raise BadContent("Data holds a number too large for a double.") from exc
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) <= SAFE_INT else value
    if isinstance(value, list):
        return [_storable(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_utf8(k): _storable(v, depth + 1) for k, v in value.items()}
    raise BadContent("Data holds a value JSON cannot express.")


def _plain(value: Any, depth: int) -> Any:
    """A stored value as JSON (nested shared types that Yjs clients wrote included)."""
    if depth > MAX_DEPTH:
        raise BadContent(f"The document is nested deeper than {MAX_DEPTH} levels.")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) <= SAFE_INT else value
    if isinstance(value, int):
        return value
    if isinstance(value, (dict, Map)):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, Array)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, Text):
        return str(value)
    if isinstance(value, (XmlFragment, XmlElement, XmlText)):
        return xmltree.render(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return None  # subdocuments and anything else JSON cannot hold
