"""Group commit of realtime updates: the appends of every socket of a process share transactions.

A socket waits for its update to be committed before it relays it (the durability promise), so one transaction
per update would make the database's commit rate the ceiling of the whole process. Updates queued while a
commit is in flight go together in the next one (no timer: a lone update is committed at once).
"""

import asyncio
import logging
from typing import Any

from psycopg.errors import ForeignKeyViolation

from collab.crdt import repository as crdt_repo
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.webhooks import events as webhook_events

log = logging.getLogger("collab.realtime")
FLUSHERS = 4  # transactions in flight at once
BATCH = 500  # updates in one transaction at most


class Appender:
    """The process's queue of updates to store, and the tasks that commit them in batches."""

    def __init__(self, svc: Services):
        self.svc = svc
        self.queue: list[tuple[dict[str, Any], bool, asyncio.Future]] = []
        self.wake = asyncio.Event()
        self.tasks: list[asyncio.Task] = []

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self._run()) for _ in range(FLUSHERS)]

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def append(self, row: dict[str, Any], *, webhook: bool) -> None:
        """Store one update (`crdt_repo.append_update`'s fields) and return once it is committed; with `webhook`,
        count it towards the editor's `crdt.update_data` window in the same transaction."""
        done = asyncio.get_running_loop().create_future()
        if not self.tasks or all(task.done() for task in self.tasks):  # stopping: no flusher left, commit alone
            await self._flush([(row, webhook, done)])
            return await done
        self.queue.append((row, webhook, done))
        self.wake.set()
        await done

    async def _run(self) -> None:
        while True:
            await self.wake.wait()
            batch, self.queue = self.queue[:BATCH], self.queue[BATCH:]
            if not self.queue:
                self.wake.clear()
            if batch:
                await self._flush(batch)

    async def _flush(self, batch: list[tuple[dict[str, Any], bool, asyncio.Future]]) -> None:
        svc = self.svc
        try:
            async with transaction(svc.pool, svc.redis) as tx:
                await crdt_repo.append_updates(tx.conn, [row for row, _, _ in batch])
                for row, webhook, _ in batch:
                    if webhook:
                        await webhook_events.crdt_changed(tx.conn, now=row["now"], api_key_id=row["api_key_id"],
                                                          organization_id=row["organization_id"],
                                                          document_id=row["document_id"], editor_id=row["editor_id"],
                                                          user_id=row["user_id"])
        except ForeignKeyViolation as exc:
            if len(batch) > 1:  # an editor deleted meanwhile: the others' updates still go in, each alone
                for item in batch:
                    await self._flush([item])
                return
            _settle(batch, exc)
        except BaseException as exc:  # noqa: BLE001 - every waiting socket hears of it
            _settle(batch, exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        else:
            _settle(batch, None)


def _settle(batch: list[tuple[dict[str, Any], bool, asyncio.Future]], exc: BaseException | None) -> None:
    for _, _, done in batch:
        if not done.done():
            if exc is None:
                done.set_result(None)
            else:
                done.set_exception(exc if isinstance(exc, Exception) else RuntimeError("appender stopped"))
