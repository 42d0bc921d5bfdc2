"""Cross-process fan-out of live messages: one Redis pub/sub channel per document.

Any process may publish (a REST write in crdt, a socket edit in realtime, a livestate broadcast); every API
process that holds a realtime room of that document is subscribed and relays the message, already framed for
the y-websocket protocol, to its connections. Pub/sub carries messages only: the stored document stays the truth,
so a message lost with Redis costs a client nothing that its next sync does not bring back.
"""

import hashlib
import logging

from pycrdt import create_update_message
from redis.exceptions import RedisError

from collab.kit import lib0
from collab.kit.lib0 import Reader

log = logging.getLogger("collab.fanout")
PREFIX = "collab:rt:"
NO_ORIGIN = b"\x00" * 16  # a publisher that is no realtime process: every process relays it, its own included


def channel(api_key_id: str, organization_id: str, document_id: str) -> str:
    """The document's channel (a digest: ids may hold any character, and the name stays short)."""
    digest = hashlib.blake2b("\x00".join((api_key_id, organization_id, document_id)).encode(), digest_size=16)
    return PREFIX + digest.hexdigest()


def pack(*, origin: bytes, editor_id: str, topic: str, message: bytes) -> bytes:
    """A published payload: the origin process, the editor (or "" for the whole document), a livestate topic
    (or ""), then the framed message that recipients send as is."""
    return origin + lib0.buf(editor_id.encode()) + lib0.buf(topic.encode()) + message


def unpack(payload: bytes) -> tuple[bytes, str, str, bytes]:
    """(origin, editor id, topic, message) of a published payload."""
    r = Reader(payload)
    r.skip(16)
    editor, topic = r.string(), r.string()
    return payload[:16], editor, topic, payload[r.pos:]


def sync_update(update: bytes) -> bytes:
    """A Yjs update framed as the y-websocket sync message that carries it."""
    return create_update_message(update)


async def publish(redis, *, api_key_id: str, organization_id: str, document_id: str, editor_id: str, message: bytes,
                  topic: str = "", origin: bytes = NO_ORIGIN) -> None:
    """Send a framed message to every process holding a room of the document; Redis down: logged, not raised
    (the write is stored, and clients get it on their next sync)."""
    if redis is None:
        return
    try:
        await redis.publish(channel(api_key_id, organization_id, document_id),
                            pack(origin=origin, editor_id=editor_id, topic=topic, message=message))
    except (RedisError, OSError) as exc:
        log.warning("realtime fan-out of %s/%s failed: %s", document_id, editor_id, exc)
