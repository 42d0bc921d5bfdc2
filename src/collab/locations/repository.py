"""SQL of the location operations (the threads and notifications that carry a location)."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, fetch_all
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def migrate_location(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str, old_id: str,
                           location: dict[str, Any], location_id: str | None, merge: bool, now: int) -> list[str]:
    """Move the document's threads at `old_id` to `location`; the ids of the threads moved."""
    rows = await fetch_all(
        conn, q.migrate_location, {
            "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "old_id": old_id,
            "location": Jsonb(location), "location_id": location_id, "merge": merge, "now": now
        })
    return [r["id"] for r in rows]


async def delete_location_notifications(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                                        location_id: str) -> list[str]:
    """Delete the document's notifications at a location; their ids."""
    rows = await fetch_all(
        conn, q.delete_location_notifications, {
            "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
            "location_id": location_id
        })
    return [r["id"] for r in rows]
