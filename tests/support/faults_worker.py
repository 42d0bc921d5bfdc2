"""A worker process for the fault tests: the normal worker, optionally armed to SIGKILL itself at one step.

Started from a fork server that has already imported the worker's modules (see faults_env.py), so a
process costs a fork, not ten seconds of imports. Kill points, each a `kill -9` of the whole process:

- `deletion_after_task_3`: user-data deletion, inside task 4's transaction once its statements ran;
  tasks 1-3 are committed with their progress marks, task 4's work is not.
- `webhook_after_send`: webhook delivery, after the receiver answered, before the attempt is recorded.
- `migration_mid_copy`: document migration, inside the move transaction after 5 of its statements.
- `extraction_after_model`: extraction, after the model answered, before the result is stored.
- `echo_tracked`: the tracked test job kills its worker every time it runs (a poison job).
"""

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

# What the fork server imports once (faults_env.py); each child then forks with them loaded.
PRELOAD = [
    "collab.llm.preload",  # the model client, imported once here rather than by every drilled worker
    "collab.worker",
    "collab.app",
    "collab.ask_ai.tasks",
    "collab.documents.migration",
    "collab.extraction.tasks",
    "collab.judgments.tasks",
    "collab.notifications.engine",
    "collab.users.deletion",
    "collab.webhooks.delivery",
    "support.faults_worker"
]


def _die() -> None:
    logging.getLogger("faults").warning("kill point reached: SIGKILL")
    logging.shutdown()
    os.kill(os.getpid(), signal.SIGKILL)


def _trace(path: Path | None, line: str) -> None:
    if path is not None:
        with path.open("a") as f:
            f.write(line + "\n")


def _arm(kill_at: str | None, trace: Path | None) -> None:
    from collab.documents import repository as documents
    from collab.extraction import tasks as extraction
    from collab.users import deletion
    from collab.webhooks import delivery

    # Every deletion task this process runs is written down, so a test can tell which ran where.
    for index, (name, task) in enumerate(list(deletion.TASKS.items())):

        async def traced(conn, _name=name, _task=task, _index=index, **scope):
            await _task(conn, **scope)
            _trace(trace, f"deletion:{_name}")
            if kill_at == "deletion_after_task_3" and _index == 3:
                _die()  # task 4's deletes ran in its transaction, which is not committed

        deletion.TASKS[name] = traced

    original_post = delivery.post

    async def post(svc, **kwargs):
        outcome = await original_post(svc, **kwargs)
        _trace(trace, f"webhook:{outcome['status_code']}")
        if kill_at == "webhook_after_send":
            _die()
        return outcome

    delivery.post = post

    original_execute = documents.execute
    statements = 0

    async def execute(conn, sql, params=None):
        nonlocal statements
        count = await original_execute(conn, sql, params)
        statements += 1
        if kill_at == "migration_mid_copy" and statements == 5:
            _die()  # renamed, grants moved, some feature tables moved: all uncommitted
        return count

    documents.execute = execute

    original_run = extraction.run

    async def run(*args, **kwargs):
        outcome = await original_run(*args, **kwargs)
        _trace(trace, "extraction:answered")
        if kill_at == "extraction_after_model":
            _die()
        return outcome

    extraction.run = run

    if kill_at == "echo_tracked":
        from dataclasses import replace

        from collab.kit.jobs import JOBS, load, tracked

        async def echo_tracked(ctx, **kwargs):
            _trace(trace, "echo_tracked")
            _die()

        load()  # the declared jobs, this one then swapped for the poison
        JOBS["echo_tracked"] = replace(JOBS["echo_tracked"], run=tracked(max_tries=3)(echo_tracked))


def main(config: dict[str, Any]) -> None:
    """Run a worker with `config`: settings, lease_s, burst, kill_at, trace, log, clock_offset_s."""
    logging.basicConfig(filename=config["log"], level=logging.INFO,
                        format=f"%(asctime)s {os.getpid()} %(name)s %(message)s")
    from collab import worker as worker_module
    from collab.config import Settings
    from collab.judgments import tasks as judgments

    trace = Path(config["trace"]) if config.get("trace") else None
    _arm(config.get("kill_at"), trace)

    async def no_model(ctx):
        return None  # none of the drilled jobs embeds; loading the model would cost seconds per process

    judgments.active_embedder = no_model
    offset = config.get("clock_offset_s", 0.0)
    if offset:
        build = worker_module.build_services

        async def shifted(settings):
            svc = await build(settings)
            svc.clock = lambda: time.time() + offset
            return svc

        worker_module.build_services = shifted
    settings = Settings(**config["settings"])
    worker = worker_module.make_worker(settings, redis_url=settings.redis_url, lease_s=config["lease_s"],
                                       burst=config.get("burst", False))
    worker.run()
