"""An editor's document as one API process holds it while its sockets are open: sync answers come from it, and
every update a socket sends is tried on it before it is stored, to REST's standard (crdt/ydoc.try_update).

Nothing here is authoritative. The document is built from Postgres (its state and pending updates), then follows
every update this process stores or hears of from another process or REST; updates tried here whose append has not
committed yet are kept aside, so a rebuild meanwhile does not lose them. One lock per editor: pycrdt documents are
not for two threads at once, and updates apply in the order they were tried.
"""

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable

from pycrdt import Doc

from collab.crdt import ydoc

log = logging.getLogger("collab.realtime")
# A sync answers from a document built at most this long ago (an update announced while Redis was away is missed
# here, and reaches new sockets within this time).
SYNC_MAX_AGE_S = 5.0
# Smaller updates of text editors are tried on the event loop: at most ~500 structs, well under a millisecond even
# when every struct is one byte of GC (a keystroke's update is under 100 bytes); the rest in a thread.
INLINE_BYTES = 1024


class TooLarge(Exception):
    """An update would take the document past its byte cap."""


class Missing(Exception):
    """The editor does not exist (any more)."""


class EditorDoc:
    """One editor's document in this process (DocumentRoom.docs), built on first use."""

    def __init__(self) -> None:
        self.doc: Doc | None = None
        self.kind, self.key = "text", ""
        self.built = 0.0  # time.monotonic() of the last build
        self.size = 0  # bytes of the document when built plus every update applied since (the size cap's gauge)
        self.lock = asyncio.Lock()
        self.inflight: list[bytes] = []  # updates tried here whose append has not committed yet

    async def _ready(self, read: Callable[[], Awaitable[dict[str, Any] | None]], max_age: float | None,
                     missed: Callable[[bytes], None] | None = None) -> bool:
        """Build the document from `read()` (the editor's row with its pending updates) unless it is built and at
        most `max_age` seconds old; False when the editor does not exist. Under the lock. `missed(update)` gets
        what storage held that the document built before did not: updates stored by a process whose publish never
        arrived (cut off from Redis), which this process's sockets have not seen either."""
        if self.doc is not None and (max_age is None or time.monotonic() - self.built < max_age):
            return True
        row = await read()
        if row is None:
            self.doc = None
            return False
        self.kind, self.key = row["type"], row["content_key"]
        before = self.doc
        built, self.size = await asyncio.to_thread(self._build, row["state"], row["pending"] or [])
        self.doc, self.built = built, time.monotonic()
        if before is not None and missed is not None:
            update = await asyncio.to_thread(_news, built, before)
            if update is not None:
                missed(update)
        return True

    def _build(self, state: bytes, pending: list[bytes]) -> tuple[Doc, int]:
        doc, bad = ydoc.fold(self.kind, self.key, state, pending)
        if bad:
            log.warning("realtime: stored updates left out of an editor's document (compaction quarantines them): %s",
                        bad)
        for update in self.inflight:
            doc.apply_update(update)
        return doc, len(state) + sum(len(u) for u in pending) + sum(len(u) for u in self.inflight)

    async def run(self, fn: Callable[[Doc], Any], read: Callable[[], Awaitable[dict[str, Any] | None]], *,
                  max_age: float | None, missed: Callable[[bytes], None] | None = None) -> Any:
        """`fn(doc)` in a thread, alone with the document, built first from `read()` where it is not or is older
        than `max_age` seconds (`missed`: see `_ready`); Missing when the editor does not exist."""
        async with self.lock:
            if not await self._ready(read, max_age, missed):
                raise Missing()
            assert self.doc is not None  # _ready built it
            return await asyncio.to_thread(fn, self.doc)

    async def attempt(self, update: bytes, read: Callable[[], Awaitable[dict[str, Any] | None]], *, cap: int,
                      max_structs: int) -> bool:
        """Apply a socket's update if it meets REST's standard (BadContent when not), and keep it aside until
        `stored()`; False when the editor does not exist. Built first where it is not (from `read()`); a result
        that does not read back leaves the document to be built again. TooLarge past `cap` bytes."""
        async with self.lock:
            if not await self._ready(read, None):
                return False
            if self.size + len(update) > cap:
                raise TooLarge(cap)
            doc = self.doc
            assert doc is not None  # _ready built it
            inline = len(update) <= INLINE_BYTES and self.kind in ("text", "xmltext")
            try:
                if inline:
                    ydoc.try_update(doc, self.kind, self.key, update, max_structs=max_structs)
                else:
                    await asyncio.to_thread(ydoc.try_update, doc, self.kind, self.key, update, max_structs=max_structs)
            except ydoc.Spoiled:
                self.doc = None  # it reached the document: build that again from storage
                raise
            self.size += len(update)
            self.inflight.append(update)
            return True

    def stored(self, update: bytes, *, committed: bool) -> None:
        """An update `attempt()` took was appended (or not: then the document is built again without it)."""
        self.inflight.remove(update)
        if not committed:
            self.doc = None

    async def learn(self, update: bytes) -> None:
        """Apply an update another process or REST stored (a document that cannot take it is built again)."""
        async with self.lock:
            if self.doc is None:
                return
            self.size += len(update)
            try:
                await asyncio.to_thread(ydoc.apply, self.doc, update)
            except ydoc.BadContent:
                self.doc = None


def _news(now: Doc, before: Doc) -> bytes | None:
    """The update taking `before` to `now` when `now` holds structs `before` lacks (None when it holds none: a
    deletion alone is not told, as it does not show in the state vector)."""
    seen = before.get_state()
    return now.get_update(seen) if now.get_state() != seen else None
