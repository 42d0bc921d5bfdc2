"""Deleting all data of users: a job runs one task per kind of data, each once, and records progress.

A feature that stores data created by users adds a task here; `tasksCount` grows with it.
"""

from typing import Any, Awaitable, Callable

from collab.comments.service import forget_users as forget_commenters
from collab.crdt import repository as crdt_repo
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db.pool import Conn
from collab.kit.errors import not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.notifications import repository as notifications_repo
from collab.presence import repository as presence_repo
from collab.recordings import repository as recordings_repo
from collab.users import repository as repo
from collab.users.schemas import DeleteUserData, DeletionStatus, UserDataDeleteStatus
from collab.webhooks import repository as webhooks_repo


async def _access(conn: Conn, **scope: Any) -> None:
    """Their grants and group memberships."""
    await repo.delete_user_grants(conn, **scope)


async def _activities(conn: Conn, **scope: Any) -> None:
    """Activities they performed (judgments derived from them go too)."""
    await repo.delete_user_activities(conn, **scope)


async def _notifications(conn: Conn, **scope: Any) -> None:
    """Notifications they caused; their @mentions and recipient entries in everyone else's."""
    await notifications_repo.forget_user(conn, **scope)


async def _presence(conn: Conn, **scope: Any) -> None:
    """Where they were present."""
    await presence_repo.forget_user(conn, **scope)


async def _recordings(conn: Conn, **scope: Any) -> None:
    """Recording versions they made."""
    await recordings_repo.forget_user(conn, **scope)


async def _crdt(conn: Conn, **scope: Any) -> None:
    """Their name as the last editor of CRDT content (the content is the document's, and stays)."""
    await crdt_repo.forget_user(conn, **scope)


async def _comments(conn: Conn, **scope: Any) -> None:
    """Their threads, comments, reactions and read marks, and the mentions of them in others' comments."""
    await forget_commenters(conn, **scope)


async def _webhooks(conn: Conn, **scope: Any) -> None:
    """Webhook messages about them (their delivery log)."""
    await webhooks_repo.forget_user(conn, **scope)


async def _contacts(conn: Conn, **scope: Any) -> None:
    """Their contact-list entry (name, e-mail), once no access is left."""
    await repo.delete_contacts(conn, **scope)


# Run in this order: contacts go last, when the access they depend on is gone.
TASKS: dict[str, Callable[..., Awaitable[None]]] = {
    "access": _access, "activities": _activities, "notifications": _notifications, "presence": _presence,
    "recordings": _recordings, "crdt": _crdt, "comments": _comments, "webhooks": _webhooks, "contacts": _contacts
}


async def start(svc: Services, *, tenant: Tenant, data: DeleteUserData) -> dict[str, Any]:
    """Queue the deletion; its job id reads the progress."""
    job_id = new_id("job_")
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.insert_deletion(tx.conn, api_key_id=tenant.api_key_id, id=job_id, user_ids=data.userIds,
                                   organization_ids=data.organizationIds, tasks=list(TASKS), now=svc.now_ms())
        await tx.enqueue("delete_user_data", api_key_id=tenant.api_key_id, _job_id=job_id, deletion_id=job_id)
    return {"jobId": job_id, "tasksCount": len(TASKS)}


async def status(svc: Services, *, tenant: Tenant, data: UserDataDeleteStatus) -> dict[str, Any]:
    """Progress of a deletion: done or not, tasks left, when the last task finished."""
    async with svc.pool.connection() as conn:
        row = await repo.get_deletion(conn, api_key_id=tenant.api_key_id, id=data.jobId)
    if row is None:
        raise not_found("deletion_job")
    return DeletionStatus.wire(row)
