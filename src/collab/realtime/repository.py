"""SQL of realtime: the API key a token names, and live state values; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def api_key(conn: Conn, *, api_key_id: str) -> dict[str, Any] | None:
    """The API key's tenant and token key version; None when there is no such key."""
    return await fetch_one(conn, q.api_key, {"api_key_id": api_key_id})


async def upsert_live_state(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                            live_state_data_id: str, data: Any, merge: bool, now: int) -> dict[str, Any]:
    """Keep the value (merged into an object kept when `merge`); the value kept."""
    row = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "live_state_data_id": live_state_data_id, "data": Jsonb(data), "merge": merge, "now": now
    }
    return await fetch_row(conn, q.upsert_live_state, row)


async def measure_live_state(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                             live_state_data_id: str) -> dict[str, int]:
    """The document's count of live state values and their JSON bytes, the value just kept (and sized) included."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "live_state_data_id": live_state_data_id
    }
    return await fetch_row(conn, q.measure_live_state, params)


async def lock_document_live_states(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str) -> None:
    """Serialise broadcasts to one document until the transaction ends."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id}
    await fetch_one(conn, q.lock_document_live_states, params)


async def live_states(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str,
                      live_state_data_id: str | None, limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "live_state_data_id": live_state_data_id, "limit": limit
    }
    return await fetch_all(conn, q.live_states, params)
