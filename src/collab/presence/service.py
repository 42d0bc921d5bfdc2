"""Presence of users on a document: update (heartbeat), delete, and get with staleness applied."""

from typing import Any

from collab.kit.auth import Tenant
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.presence import repository as repo
from collab.presence.schemas import DeletePresence, GetPresence, Presence, UpdatePresence

ONLINE, AWAY, OFFLINE = "online", "away", "offline"


def effective_status(stored: str, last_seen: int, now: int, *, away_ms: float, offline_ms: float) -> str:
    """What a stored status reads at `now`: staleness beats it, but a stale `offline` never turns `away`."""
    age = now - last_seen
    if age >= offline_ms:
        return OFFLINE
    if age >= away_ms:
        return OFFLINE if stored == OFFLINE else AWAY
    return stored


async def upsert(svc: Services, *, tenant: Tenant, data: UpdatePresence) -> dict[str, Any]:
    """Mark users present on a document now (status `online` unless sent); name and e-mail kept when absent."""
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        # One lock order for every writer: two heartbeats naming the same users cannot deadlock.
        for user in sorted(data.users, key=lambda u: u.userId):
            await repo.upsert(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                              document_id=data.documentId, user_id=user.userId, name=user.name, email=user.email,
                              status=user.status or ONLINE, last_seen=now)
    return {"success": True}


async def delete(svc: Services, *, tenant: Tenant, data: DeletePresence) -> dict[str, Any]:
    """Remove users' presence from a document (absent users are no error)."""
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.delete(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                          document_id=data.documentId, user_ids=data.userIds)
    return {"success": True}


async def get(svc: Services, *, tenant: Tenant, data: GetPresence) -> list[dict[str, Any]]:
    """Every user seen on a document, by userId, with the status they read now."""
    now = svc.now_ms()
    away_ms = svc.settings.presence_away_s * 1000
    offline_ms = svc.settings.presence_offline_s * 1000
    async with svc.pool.connection() as conn:
        rows = await repo.list_users(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                     document_id=data.documentId)
    return [
        Presence.wire(r, effective_status(r["status"], r["last_seen"], now, away_ms=away_ms, offline_ms=offline_ms))
        for r in rows
    ]


async def set_live(svc: Services, *, api_key_id: str, organization_id: str, document_id: str,
                   users: list[tuple[str, str | None, str | None, str]]) -> None:
    """Record what live (realtime) connections say of users: (userId, name, email, status), seen now.

    The same rows as REST heartbeats: a connected user is kept `online` (or `away` once idle) by the realtime
    heartbeat, and set `offline` when their last connection to the document closes.
    """
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        for user_id, name, email, status in sorted(users, key=lambda u: u[0]):
            await repo.upsert(tx.conn, api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                              user_id=user_id, name=name, email=email, status=status, last_seen=now)
