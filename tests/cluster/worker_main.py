"""`collab worker`, writing down what it runs: `python worker_main.py TRACE_FILE`, then the usual command line.

The worker is the real one (collab.cli's `worker` command); this only appends a line to TRACE_FILE for each cron
tick it runs (`cron <arq job id>`: a scheduled tick's id names its second, so a tick run twice across the cluster
shows), each user-data deletion task it committed (`deletion <task>`) and each job it finished handling (`ran <job
id>`, after arq's bookkeeping).
"""

import contextvars
import functools
import os
import sys
from contextlib import asynccontextmanager

# The deletion task run in the current transaction (set by the task, read once the transaction committed).
_TASK: contextvars.ContextVar[str | None] = contextvars.ContextVar("cluster_deletion_task", default=None)


def _trace(path: str, line: str) -> None:
    # One small O_APPEND write per line: lines from concurrent jobs never interleave.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _arm(path: str) -> None:
    from collab import worker
    from collab.users import deletion
    from collab.users import tasks as user_tasks

    real_cron = worker.cron

    def cron(coroutine, **options):

        @functools.wraps(coroutine)
        async def traced(ctx, *args, **kwargs):
            _trace(path, f"cron {ctx['job_id']}")
            return await coroutine(ctx, *args, **kwargs)

        return real_cron(traced, **options)

    worker.cron = cron

    for name, task in list(deletion.TASKS.items()):

        async def traced_task(conn, _name=name, _task=task, **scope):
            await _task(conn, **scope)
            _TASK.set(_name)

        deletion.TASKS[name] = traced_task

    transaction = user_tasks.transaction

    @asynccontextmanager
    async def committed(*args, **kwargs):
        _TASK.set(None)
        async with transaction(*args, **kwargs) as tx:
            yield tx
        if _TASK.get() is not None:  # only a transaction that committed gets here
            _trace(path, f"deletion {_TASK.get()}")

    user_tasks.transaction = committed

    run_job = worker.LaneWorker.run_job

    async def traced_run(self, job_id, score):
        try:
            return await run_job(self, job_id, score)
        finally:
            _trace(path, f"ran {job_id}")

    worker.LaneWorker.run_job = traced_run


def main() -> int:
    trace = sys.argv[1]
    _arm(trace)
    from collab.cli import main as collab

    return collab(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
