"""Endpoint management (Svix-shaped): create, list, update, delete, and the signing secret (get, rotate)."""

from collections.abc import Sequence
from typing import Any

from collab.kit import paging, safety
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db import constraints
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.webhooks import repository as repo
from collab.webhooks import secret
from collab.webhooks.schemas import CreateEndpoint, EndpointRef, ListEndpoints, UpdateEndpoint, WebhookEndpoint
from collab.workspaces.config import get_webhook_config

UID_TAKEN = "Another endpoint of this API key has this uid."
constraints.register("webhook_endpoints_uid", message=UID_TAKEN)
_COLUMNS = {
    "url": "url", "description": "description", "filterTypes": "filter_types", "channels": "channels",
    "disabled": "disabled", "rateLimit": "rate_limit", "uid": "uid", "metadata": "metadata"
}


async def require_enabled(svc: Services, *, tenant: Tenant) -> None:
    """FAILED_PRECONDITION unless the stored advanced webhook config has isEnabled: true."""
    config = await get_webhook_config(svc, tenant=tenant)
    if not config.get("isEnabled"):
        raise ApiError("FAILED_PRECONDITION",
                       "Advanced webhooks are disabled: enable them with workspace/advancedwebhookconfig/update.")


async def _check_url(svc: Services, url: str) -> None:
    reason = await safety.check_registration(url, allow_private=svc.settings.webhooks_allow_private_targets)
    if reason is not None:
        message = f"The URL is not an allowed webhook target: {reason}"
        raise invalid(message, [issue(["url"], message)])


def _distinct(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


async def create(svc: Services, *, tenant: Tenant, data: CreateEndpoint) -> dict[str, Any]:
    """Register an endpoint with a fresh `whsec_` secret; its id is `ep_…`."""
    await require_enabled(svc, tenant=tenant)
    await _check_url(svc, data.url)
    endpoint_id = new_id("ep_")
    sealed = secret.seal(svc, secret.new_secret(), api_key_id=tenant.api_key_id, endpoint_id=endpoint_id)
    with constraints.mapped():
        async with transaction(svc.pool, svc.redis) as tx:
            await repo.lock_api_key(tx.conn, api_key_id=tenant.api_key_id)
            if await repo.count_endpoints(tx.conn, api_key_id=tenant.api_key_id) >= svc.settings.webhooks_max_endpoints:
                raise ApiError("RESOURCE_EXHAUSTED",
                               f"An API key has at most {svc.settings.webhooks_max_endpoints} webhook endpoints.")
            row = await repo.insert_endpoint(tx.conn, api_key_id=tenant.api_key_id, id=endpoint_id, url=data.url,
                                             description=data.description, filter_types=_distinct(data.filterTypes),
                                             channels=_distinct(data.channels), disabled=data.disabled,
                                             rate_limit=data.rateLimit, uid=data.uid, metadata=data.metadata,
                                             secret_enc=sealed, now=svc.now_ms())
    return WebhookEndpoint.wire(row)


async def list_endpoints(svc: Services, *, tenant: Tenant, data: ListEndpoints) -> dict[str, Any]:
    """A page of endpoints, oldest first: {data, iterator, prevIterator, done}."""
    await require_enabled(svc, tenant=tenant)
    scope = f"{tenant.api_key_id}:webhook-endpoints"
    direction, ts, last_id = (paging.decode(data.iterator, 3, keyring=svc.keyring, scope=scope) if data.iterator else
                              (None, None, None))
    backward = direction == "before"
    async with svc.pool.connection() as conn:
        rows = await repo.list_endpoints(conn, api_key_id=tenant.api_key_id, backward=backward, limit=data.limit + 1,
                                         after_ts=None if backward else ts, after_id=None if backward else last_id,
                                         before_ts=ts if backward else None, before_id=last_id if backward else None)
    more = len(rows) > data.limit
    rows = rows[:data.limit]
    if backward:
        rows.reverse()
    has_next = True if backward else more
    has_prev = more if backward else data.iterator is not None

    def token(kind: str, row: dict[str, Any]) -> str:
        return paging.encode(kind, row["created_at"], row["id"], keyring=svc.keyring, scope=scope)

    return {
        "data": [WebhookEndpoint.wire(r) for r in rows],
        "iterator": token("after", rows[-1]) if rows and has_next else None,
        "prevIterator": token("before", rows[0]) if rows and has_prev else None, "done": not has_next
    }


async def _endpoint(conn, *, tenant: Tenant, ref: str) -> dict[str, Any]:
    row = await repo.get_endpoint(conn, api_key_id=tenant.api_key_id, ref=ref)
    if row is None:
        raise not_found("endpoint")
    return row


async def update(svc: Services, *, tenant: Tenant, data: UpdateEndpoint) -> dict[str, Any]:
    """Change the sent fields of an endpoint (by id or uid); a new URL is checked like a new endpoint's."""
    await require_enabled(svc, tenant=tenant)
    sent = data.model_dump(exclude_unset=True)
    if "url" in sent:
        await _check_url(svc, data.url)
    changes = {_COLUMNS[k]: v for k, v in sent.items() if k in _COLUMNS}
    for column in ("filter_types", "channels"):
        if column in changes:
            changes[column] = _distinct(changes[column])
    with constraints.mapped():
        async with transaction(svc.pool, svc.redis) as tx:
            row = await _endpoint(tx.conn, tenant=tenant, ref=data.endpointId)
            row = await repo.update_endpoint(tx.conn, api_key_id=tenant.api_key_id, id=row["id"], changes=changes,
                                             now=svc.now_ms())
    return WebhookEndpoint.wire(row)


async def delete(svc: Services, *, tenant: Tenant, data: EndpointRef) -> dict[str, Any]:
    """Delete an endpoint with its deliveries and their attempts."""
    await require_enabled(svc, tenant=tenant)
    async with transaction(svc.pool, svc.redis) as tx:
        row = await _endpoint(tx.conn, tenant=tenant, ref=data.endpointId)
        await repo.delete_endpoint(tx.conn, api_key_id=tenant.api_key_id, id=row["id"])
    return {"id": row["id"], "deleted": True}


async def get_secret(svc: Services, *, tenant: Tenant, data: EndpointRef) -> dict[str, Any]:
    """The endpoint's current signing secret: {key: "whsec_…"}."""
    await require_enabled(svc, tenant=tenant)
    async with svc.pool.connection() as conn:
        row = await _endpoint(conn, tenant=tenant, ref=data.endpointId)
    return {"key": secret.unseal(svc, row["secret_enc"], api_key_id=tenant.api_key_id, endpoint_id=row["id"])}


async def rotate_secret(svc: Services, *, tenant: Tenant, data: EndpointRef) -> dict[str, Any]:
    """A new secret; the old one keeps signing beside it (a second `v1,` entry) for 24 hours."""
    await require_enabled(svc, tenant=tenant)
    fresh = secret.new_secret()
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        row = await _endpoint(tx.conn, tenant=tenant, ref=data.endpointId)
        sealed = secret.seal(svc, fresh, api_key_id=tenant.api_key_id, endpoint_id=row["id"])
        await repo.rotate_secret(tx.conn, api_key_id=tenant.api_key_id, id=row["id"], secret_enc=sealed,
                                 until=now + secret.ROTATION_OVERLAP_MS, now=now)
    return {"key": fresh}
