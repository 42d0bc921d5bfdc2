"""Jobs of users: deleting all data of users, one task of users/deletion.py at a time, each recorded once done."""

from typing import Any

from collab.kit.jobs import job, transaction
from collab.kit.services import Services
from collab.users import repository as repo
from collab.users.deletion import TASKS
from collab.webhooks import events as webhook_events


@job(timeout=3600, max_tries=8)
async def delete_user_data(ctx: dict, *, api_key_id: str, deletion_id: str) -> dict[str, Any] | None:
    """Run each deletion task not yet done, each in its own transaction with its progress mark."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        row = await repo.get_deletion(conn, api_key_id=api_key_id, id=deletion_id)
    if row is None:
        return None
    scope = {"api_key_id": api_key_id, "user_ids": row["user_ids"], "organization_ids": row["organization_ids"]}
    for name in row["tasks"]:
        if name in row["done"]:
            continue
        async with transaction(svc.pool, svc.redis) as tx:
            await TASKS[name](tx.conn, **scope)
            await repo.task_done(tx.conn, api_key_id=api_key_id, id=deletion_id, task=name, now=svc.now_ms())
            if name == row["tasks"][-1]:  # the last task: the deletion is complete with this commit
                await webhook_events.emit(
                    tx, now=svc.now_ms(), api_key_id=api_key_id, event_type="user_data.delete",
                    channels=row["organization_ids"] or [], dedupe=f"user_data.delete:{deletion_id}", payload={
                        "jobId": deletion_id, "userIds": row["user_ids"], "organizationIds": row["organization_ids"]
                    })
    return {"tasks": len(row["tasks"])}
