"""Messages beyond Svix's basics: list them with their attempts, and redeliver one to an endpoint."""

from typing import Any

from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.webhooks import delivery
from collab.webhooks import repository as repo
from collab.webhooks.payload import iso
from collab.webhooks.schemas import ListMessages, RetryMessage
from collab.webhooks.service import require_enabled

_IN_FLIGHT = ("pending", "queued", "sending")


def _status(statuses: list[str]) -> str:
    """A message's status over its deliveries: failed if any failed, pending while any is under way."""
    if "failed" in statuses:
        return "failed"
    if any(s in _IN_FLIGHT for s in statuses):
        return "pending"
    return "succeeded"


def _attempt(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "endpointId": row["endpoint_id"], "attempt": row["attempt"], "statusCode": row["status_code"],
        "at": iso(row["at"]), "durationMs": row["duration_ms"], "response": row["response"], "error": row["error"]
    }


async def list_messages(svc: Services, *, tenant: Tenant, data: ListMessages) -> dict[str, Any]:
    """A page of messages, newest first, each with its status and attempts: {messages, iterator, done}."""
    await require_enabled(svc, tenant=tenant)
    pager = paging.Pager(svc.keyring, f"{tenant.api_key_id}:webhook-messages:{data.endpointId}")
    after_ts, after_id = pager.after(data.iterator, 2)
    async with svc.pool.connection() as conn:
        endpoint_id = None
        if data.endpointId is not None:
            endpoint = await repo.get_endpoint(conn, api_key_id=tenant.api_key_id, ref=data.endpointId)
            if endpoint is None:
                raise not_found("endpoint")
            endpoint_id = endpoint["id"]
        rows = await repo.list_messages(conn, api_key_id=tenant.api_key_id, endpoint_id=endpoint_id, after_ts=after_ts,
                                        after_id=after_id, limit=data.limit + 1)
        rows, token = pager.page(rows, data.limit, "created_at", "id")
        attempts = await repo.list_attempts(conn, api_key_id=tenant.api_key_id, message_ids=[r["id"] for r in rows],
                                            endpoint_id=endpoint_id)
    by_message: dict[str, list[dict[str, Any]]] = {}
    for attempt in attempts:
        by_message.setdefault(attempt["message_id"], []).append(_attempt(attempt))
    messages = []
    for row in rows:
        status = _status(row["statuses"])
        message = {
            "id": row["id"], "eventType": row["event_type"], "timestamp": iso(row["created_at"]), "status": status,
            "attempts": by_message.get(row["id"], [])
        }
        if row["next_attempt_at"] is not None and status == "pending":
            message["nextAttemptAt"] = iso(row["next_attempt_at"])
        if row["error"]:
            message["error"] = row["error"]
        messages.append(message)
    return {"messages": messages, "iterator": token, "done": token is None}


async def retry(svc: Services, *, tenant: Tenant, data: RetryMessage) -> dict[str, Any]:
    """Send a message to an endpoint now: once more when finished, its scheduled retry pulled forward when waiting.

    One delivery per message and endpoint is ever under way: a retry of one already queued joins it (nothing more
    is queued), and one being sent right now is refused (its outcome decides what comes next).
    """
    await require_enabled(svc, tenant=tenant)
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        endpoint = await repo.get_endpoint(tx.conn, api_key_id=tenant.api_key_id, ref=data.endpointId)
        # Locked: the sweep skips this row meanwhile, and a concurrent retry waits for this one's outcome.
        row = endpoint and await repo.lock_delivery(tx.conn, api_key_id=tenant.api_key_id, message_id=data.messageId,
                                                    endpoint_id=endpoint["id"])
        if not row:
            raise not_found("webhook_message")
        if row["status"] == "sending":
            raise ApiError("FAILED_PRECONDITION",
                           "The message is being sent to this endpoint right now; retry once that attempt has ended.")
        if row["disabled"]:
            raise ApiError("FAILED_PRECONDITION", "The endpoint is disabled: enable it first.")
        if row["body"] is None:
            raise ApiError("FAILED_PRECONDITION", "The message body could not be made; it cannot be sent.")
        key = {"api_key_id": tenant.api_key_id, "message_id": row["message_id"], "endpoint_id": row["endpoint_id"]}
        if row["status"] == "pending":
            # A failed attempt waits for its next scheduled one: that attempt is made now (the schedule goes on
            # from it), exactly as the sweep would queue it when due.
            await delivery.queue(tx, row, now=now)
        elif row["status"] != "queued":  # a queued attempt is already on its way: this retry joins it
            await repo.requeue_delivery(tx.conn, **key, now=now)
            await tx.enqueue("deliver_webhook", **key, attempt=row["attempts"] + 1)
    return {"messageId": row["message_id"], "endpointId": row["endpoint_id"], "status": "queued"}
