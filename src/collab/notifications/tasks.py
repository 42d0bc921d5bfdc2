"""Jobs of notifications: the cron that flushes due batches (the engine is notifications/engine.py)."""

from collab.kit.services import Services
from collab.notifications.engine import FLUSH_LIMIT, flush


async def flush_due(ctx: dict) -> int:
    """Cron: flush every tenant's due batches, a few hundred per transaction, each batch in its own savepoint."""
    svc: Services = ctx["svc"]
    total = 0
    while True:
        async with svc.pool.connection() as conn:
            async with conn.transaction():
                count = await flush(conn, svc=svc)
        total += count
        if count < FLUSH_LIMIT:
            return total
