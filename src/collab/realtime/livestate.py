"""Live state: values pushed to a document's subscribed sockets (livestate/broadcast), the last one kept."""

from typing import Any

import orjson

from collab.kit import fanout
from collab.kit.auth import Tenant
from collab.kit.errors import invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.permissions import repository as permissions_repo
from collab.realtime import protocol
from collab.realtime import repository as repo
from collab.realtime.schemas import BroadcastLiveState, GetLiveState, LiveState


def message(row: dict[str, Any]) -> bytes:
    """The type 100 message that delivers a value to a subscribed socket."""
    return protocol.livestate({"op": "data", **LiveState.wire(row)})


async def broadcast(svc: Services, *, tenant: Tenant, data: BroadcastLiveState) -> dict[str, Any]:
    """Keep the value (merged into the kept object with `merge`) and push it to the document's subscribers."""
    if data.data is None:
        raise invalid("Data is required.", [issue(["data"], "Data is required.", "invalid_type")])
    limit = svc.settings.realtime_max_message_bytes
    if len(orjson.dumps(data.data)) > limit:
        message_ = f"A live state value may hold at most {limit} bytes of JSON."
        raise invalid(message_, [issue(["data"], message_, "too_big")])
    key: dict[str, Any] = {
        "api_key_id": tenant.api_key_id, "organization_id": data.organizationId, "document_id": data.documentId
    }
    async with transaction(svc.pool, svc.redis) as tx:
        found = await permissions_repo.document_folders(tx.conn, api_key_id=tenant.api_key_id,
                                                        organization_id=data.organizationId, ids=[data.documentId])
        if data.documentId not in found:  # values follow their document (deleted and migrated with it)
            raise not_found("document")
        await repo.lock_document_live_states(tx.conn, **key)
        row = await repo.upsert_live_state(tx.conn, **key, live_state_data_id=data.liveStateDataId, data=data.data,
                                           merge=data.merge, now=svc.now_ms())
        _within_caps(svc, await repo.measure_live_state(tx.conn, **key, live_state_data_id=data.liveStateDataId))
    await fanout.publish(svc.redis, **key, editor_id="", topic=data.liveStateDataId, message=message(row))
    return {"success": True}


def _within_caps(svc: Services, held: dict[str, int]) -> None:
    """INVALID_ARGUMENT (the transaction rolls back: nothing kept) when the document would hold more values, or more
    bytes of them, than its caps; the byte cap keeps livestate/get's answer within COLLAB_MAX_RESPONSE_BYTES."""
    most, budget = svc.settings.realtime_live_states_per_document, svc.settings.max_response_bytes - 64 * 1024
    if held["count"] > most:
        message_ = f"A document keeps at most {most} live state values (COLLAB_REALTIME_LIVE_STATES_PER_DOCUMENT)."
        raise invalid(message_, [issue(["liveStateDataId"], message_, "too_big")])
    if held["bytes"] > budget:
        message_ = f"A document's live state values may hold at most {budget} bytes of JSON in all."
        raise invalid(message_, [issue(["data"], message_, "too_big")])


async def get(svc: Services, *, tenant: Tenant, data: GetLiveState) -> list[dict[str, Any]]:
    """The document's kept values (one when liveStateDataId is given), by id."""
    async with svc.pool.connection() as conn:
        rows = await repo.live_states(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                      document_id=data.documentId, live_state_data_id=data.liveStateDataId,
                                      limit=svc.settings.realtime_live_states_per_document)
    return [LiveState.wire(r) for r in rows]
