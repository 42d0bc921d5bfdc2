"""What one tenant's knowledge may cost the others: the extraction slots its ingests share, and the uploads one API
process receives at a time (docs/adr/0057, "Bounds")."""

from collections.abc import Iterator
from contextlib import contextmanager

from collab.kit.errors import ApiError

BUSY = "Too many extractions and knowledge ingests in flight for this workspace; retry when one has finished."
SERVER_BUSY = "This server is receiving as many knowledge uploads as it takes at a time; retry shortly."


def slot_bucket(workspace_id: str) -> str:
    """The concurrency bucket that a workspace's extractions (extraction/service.py), ingests and updates share."""
    return f"extract:{workspace_id}"


class _Receiving:
    """Uploads this process is receiving (each holds up to its declared size in memory)."""

    count = 0


@contextmanager
def receiving(limit: int) -> Iterator[None]:
    """Hold one of this process's `limit` upload places; RESOURCE_EXHAUSTED (Retry-After: 1) when all are taken."""
    if _Receiving.count >= limit:
        raise ApiError("RESOURCE_EXHAUSTED", SERVER_BUSY, headers={"Retry-After": "1"})
    _Receiving.count += 1
    try:
        yield
    finally:
        _Receiving.count -= 1
