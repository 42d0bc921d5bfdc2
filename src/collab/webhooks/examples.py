"""Test events: an example message sent to one endpoint (the console's "send a test event"), delivered and logged
like any other message, so its attempts show what the endpoint answers."""

from typing import Any

from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.webhooks import payload as payloads
from collab.webhooks import repository as repo
from collab.webhooks.delivery import MAX_ATTEMPTS
from collab.webhooks.schemas import EVENT_TYPES
from collab.webhooks.service import require_enabled
from collab.workspaces.config import get_webhook_config

EXAMPLE = {"test": True, "message": "A test event: no data changed."}


async def send_test(svc: Services, *, tenant: Tenant, endpoint_id: str, event_type: str) -> dict[str, Any]:
    """Queue an example message of `event_type` to one endpoint (its filters aside); {messageId, endpointId, status}."""
    if event_type not in EVENT_TYPES:
        raise invalid("Unknown event type.", [issue(["eventType"], "Unknown event type.")])
    await require_enabled(svc, tenant=tenant)
    config = await get_webhook_config(svc, tenant=tenant)
    now = svc.now_ms()
    message_id = new_id("msg_")
    shaped = payloads.message(id=message_id, event_type=event_type, now=now, api_key_id=tenant.api_key_id,
                              organization_id=None, document_id=None, action_user=None, payload=EXAMPLE)
    try:
        body, content_type = payloads.render(shaped, config)
    except payloads.RenderError as exc:
        raise ApiError("FAILED_PRECONDITION", str(exc)) from None
    async with transaction(svc.pool, svc.redis) as tx:
        endpoint = await repo.get_endpoint(tx.conn, api_key_id=tenant.api_key_id, ref=endpoint_id)
        if endpoint is None:
            raise not_found("endpoint")
        if endpoint["disabled"]:
            raise ApiError("FAILED_PRECONDITION", "The endpoint is disabled: enable it first.")
        key = {"api_key_id": tenant.api_key_id, "message_id": message_id, "endpoint_id": endpoint["id"]}
        await repo.insert_message(tx.conn, api_key_id=tenant.api_key_id, id=message_id, event_type=event_type,
                                  body=body, content_type=content_type, error=None, organization_id=None, user_ids=[],
                                  now=now)
        await repo.insert_delivery(tx.conn, **key, status="queued", max_attempts=MAX_ATTEMPTS, last_error=None, now=now)
        await tx.enqueue("deliver_webhook", **key, attempt=1)
    return {"messageId": message_id, "endpointId": endpoint["id"], "status": "queued"}
