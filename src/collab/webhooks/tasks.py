"""Jobs of advanced webhooks: one delivery attempt of a message to an endpoint, and the sweep cron that queues
due attempts (and flushes CRDT event windows). The mechanics (sending, signing, the schedule) are in delivery.py.
"""

import logging
import time

from collab.kit import usage
from collab.kit.jobs import job, past, transaction
from collab.kit.services import Services
from collab.webhooks import delivery, events, secret
from collab.webhooks import repository as repo
from collab.workspaces import basic_webhooks

log = logging.getLogger("collab.webhooks")


@job(timeout=past("webhooks_timeout_s", 30), max_tries=3)
async def deliver_webhook(ctx: dict, *, api_key_id: str, message_id: str, endpoint_id: str,
                          attempt: int) -> dict | None:
    """Make attempt `attempt` of a message to an endpoint, record it, and schedule the next one."""
    svc: Services = ctx["svc"]
    now = svc.now_ms()
    key = {"api_key_id": api_key_id, "message_id": message_id, "endpoint_id": endpoint_id}
    lease = now + int(svc.settings.webhooks_timeout_s * 1000) + delivery.LEASE_MARGIN_MS
    async with svc.pool.connection() as conn:
        claimed = await repo.claim_delivery(conn, **key, attempt=attempt, now=now, lease_until=lease)
        if claimed is None:
            return None  # this attempt was made already (at-least-once delivery), or the row is gone
        if claimed["disabled"] or claimed["body"] is None:
            reason = "The endpoint is disabled." if claimed["disabled"] else "The message body could not be made."
            await repo.fail_delivery(conn, **key, error=reason, now=now)
            return {"status": "failed", "reason": reason}
        if claimed["rate_limit"] and await delivery.over_rate(svc, endpoint_id=endpoint_id, api_key_id=api_key_id,
                                                              limit=claimed["rate_limit"], now=now):
            # Over the endpoint's rateLimit: try again in the next one-second window; no attempt is used up.
            await repo.reschedule_delivery(conn, **key, due_at=(now // 1000 + 1) * 1000, now=now)
            return {"status": "rescheduled"}
    timestamp = now // 1000
    headers = {
        "content-type": claimed["content_type"], "user-agent": "collab-webhooks/1", "webhook-id": message_id,
        "webhook-timestamp": str(timestamp)
    }
    if claimed["secret_enc"] is not None:  # an advanced endpoint: signed per Standard Webhooks
        keys = secret.for_signing(svc, claimed, api_key_id=api_key_id, endpoint_id=endpoint_id, now=now)
        headers["webhook-signature"] = " ".join(secret.sign(k, message_id, timestamp, claimed["body"]) for k in keys)
    if claimed["basic_token_enc"] is not None:  # Velt's basic service: its auth token, as Velt sends it
        token = basic_webhooks.unseal_token(svc, bytes(claimed["basic_token_enc"]), api_key_id=api_key_id)
        headers["authorization"] = f"Basic {token}"
    started = time.perf_counter()
    result = await delivery.post(svc, url=claimed["url"], body=claimed["body"], headers=headers)
    duration_ms = int((time.perf_counter() - started) * 1000)
    status, due_at, error = delivery.outcome(result, attempt=attempt, max_attempts=claimed["max_attempts"], now=now)
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await repo.record_attempt(conn, **key, attempt=attempt, status_code=result["status_code"],
                                      response=result["response"], transport_error=result["error"],
                                      duration_ms=duration_ms, status=status, due_at=due_at, error=error, now=now)
            if status == "succeeded":
                await repo.endpoint_succeeded(conn, api_key_id=api_key_id, id=endpoint_id)
            else:
                await repo.endpoint_failed(conn, api_key_id=api_key_id, id=endpoint_id, now=now,
                                           gone=result["status_code"] == 410,
                                           disable_after_ms=delivery.DISABLE_AFTER_MS)
    usage.count(svc, "webhooks_succeeded" if status == "succeeded" else "webhooks_failed", api_key_id=api_key_id)
    return {"status": status, "statusCode": result["status_code"]}


async def sweep(ctx: dict, *, limit: int = 500) -> int:
    """Cron: emit due CRDT events, then queue every delivery whose time has come; the number queued.

    Every tenant's rows share this loop, so each row is its own savepoint: one that raises is given up
    (with a reason its tenant sees) and the others go on.
    """
    svc: Services = ctx["svc"]
    now = svc.now_ms()
    try:
        async with transaction(svc.pool, svc.redis) as tx:
            await events.flush_crdt(tx, now=now)
    except Exception:
        log.exception("CRDT events not flushed this tick; deliveries are queued regardless")
    async with transaction(svc.pool, svc.redis) as tx:
        due = await repo.due_deliveries(tx.conn, now=now, limit=limit)
        for row in due:
            key = {k: row[k] for k in ("api_key_id", "message_id", "endpoint_id")}
            if row["status"] == "sending" and row["lost_leases"] >= delivery.MAX_LOST_LEASES:
                log.warning("webhook delivery %s to %s given up after %s lost attempts", row["message_id"],
                            row["endpoint_id"], row["lost_leases"] + 1)
                await repo.give_up_delivery(tx.conn, **key, error=delivery.LOST, now=now)
                continue
            try:
                async with events.savepoint(tx):
                    await delivery.queue(tx, row, now=now)
            except Exception:
                log.exception("webhook delivery %s to %s could not be queued", row["message_id"], row["endpoint_id"])
                await repo.give_up_delivery(tx.conn, **key, error=delivery.NOT_QUEUED, now=now)
    return len(due)
