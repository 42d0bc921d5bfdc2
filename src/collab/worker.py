"""The arq worker: one process holds the pool, the model clients and every background job."""

import logging
from typing import Any

from arq import cron, func
from arq.connections import RedisSettings
from arq.worker import Worker

from collab.app import build_services, close_services
from collab.config import Settings, get_settings
from collab.kit.crypto import new_id
from collab.kit.jobs import Heartbeat, reap, sweep, tracked
from collab.kit.services import Services

log = logging.getLogger("collab.worker")


async def echo(ctx: dict, **kwargs: Any) -> dict[str, Any]:
    """Return the arguments: measures the queue round trip (bench) and proves a worker is serving."""
    return kwargs


@tracked(max_tries=3)
async def echo_tracked(ctx: dict, **kwargs: Any) -> dict[str, Any]:
    """A tracked job that returns its stored arguments; fails permanently when asked to (tests, drills)."""
    if kwargs.get("fail"):
        raise RuntimeError(str(kwargs["fail"]))
    return kwargs


def tracked_func(fn, *, timeout: float | None = None):
    """A `tracked` job for arq, allowed one try more than the job's own `max_tries`.

    Tries that end without an outcome (the worker died, see kit/jobs.py) count on both sides; the extra try
    reaches our wrapper, which records the job `failed` at once, instead of arq dropping it unrecorded.
    """
    return func(fn, name=fn.__name__, timeout=timeout, max_tries=fn.max_tries + 1)


def functions(settings: Settings) -> list:
    """Every job the worker serves, with its own timeout and tries."""
    from collab.ask_ai.tasks import ask_ai
    from collab.documents.migration import migrate_document
    from collab.extraction.tasks import extract_agents
    from collab.judgments.tasks import derive_judgments, embed_query
    from collab.users.deletion import delete_user_data
    from collab.webhooks.delivery import deliver_webhook

    return [
        echo,
        tracked_func(echo_tracked),
        # Awaited by the API: a timeout just past the API's own deadline; a second try only when the first
        # ended without an outcome (its worker died or was stopped), while the caller still waits.
        func(ask_ai, name="ask_ai", timeout=settings.ask_ai_timeout_s + 5, max_tries=2),
        func(extract_agents, name="extract_agents", timeout=settings.extraction_timeout_s + 5, max_tries=2),
        tracked_func(derive_judgments, timeout=300),
        func(embed_query, name="embed_query", timeout=settings.search_timeout_s + 5, max_tries=1),
        tracked_func(migrate_document, timeout=600),
        tracked_func(delete_user_data, timeout=3600),
        tracked_func(deliver_webhook, timeout=settings.webhooks_timeout_s + 30),
    ]

def _cron_jobs() -> list:
    from collab.notifications.engine import flush_due
    from collab.webhooks.delivery import sweep as webhook_sweep

    return [
        cron(sweep, second={0, 10, 20, 30, 40, 50}, run_at_startup=True, unique=True),
        # Jobs of workers that died mid-job run again once their lease is over (see kit/jobs.py).
        cron(reap, second=set(range(0, 60, 5)), run_at_startup=True, unique=True),
        # Delayed and batched notifications fall due at any second; a 5 s tick bounds their lateness.
        cron(flush_due, name="flush_notifications", second=set(range(0, 60, 5)), run_at_startup=True, unique=True),
        # Webhook retries (5 s and up) and CRDT event windows fall due at any second: sweep every second.
        cron(webhook_sweep, name="webhook_sweep", second=set(range(60)), run_at_startup=True, unique=True),
    ]


def make_worker(
    settings: Settings, svc: Services | None = None, *, redis_url: str, lease_s: float | None = None, **overrides: Any
) -> Worker:
    """An arq Worker wired to the services; `svc` shares already-built ones (tests).

    `lease_s`: how long after its last heartbeat a silent worker still owns its jobs (default
    COLLAB_WORKER_LEASE_S, 20 s): a worker that dies mid-job has its jobs run again that long after.
    """
    lease = lease_s if lease_s is not None else settings.worker_lease_s

    async def startup(ctx: dict) -> None:
        # Heartbeat first: a job is only picked after startup, but its claim must be visible from the start.
        ctx["lease_s"] = lease
        ctx["in_progress_s"] = worker.in_progress_timeout_s
        ctx["queue_name"] = worker.queue_name
        ctx["heartbeat"] = heartbeat = Heartbeat(ctx["redis"], lambda: list(worker.tasks), lease_s=lease,
                                                 worker_id=new_id("wkr_"))
        heartbeat.start()
        ctx["svc"] = svc or await build_services(settings)
        ctx["pool"] = ctx["svc"].pool
        ctx["settings"] = settings
        # Load the embedding model now (imports take seconds), not on the first search.
        from collab.judgments.tasks import active_embedder

        await active_embedder(ctx)

    async def shutdown(ctx: dict) -> None:
        if "heartbeat" in ctx:
            await ctx["heartbeat"].stop()
        if svc is None and "svc" in ctx:
            await close_services(ctx["svc"])

    options: dict[str, Any] = dict(
        functions=functions(settings),
        cron_jobs=_cron_jobs(),
        redis_settings=RedisSettings.from_dsn(redis_url),
        on_startup=startup,
        on_shutdown=shutdown,
        # Poll every 10 ms, not arq's 0.5 s: synchronous endpoints wait on these jobs.
        poll_delay=settings.worker_poll_delay_s,
        max_jobs=settings.worker_max_jobs,
        handle_signals=True,
        keep_result=300,
        # An awaited job past its API deadline is aborted (cancelled), not left running.
        allow_abort_jobs=True,
    )
    options.update(overrides)
    worker = Worker(**options)
    return worker


def run(settings: Settings | None = None) -> None:
    """Run a worker until stopped (collab worker)."""
    settings = settings or get_settings()
    from collab.kit import embedded

    redis_url = settings.redis_url or embedded.EmbeddedRedis(settings.data_dir).start()
    make_worker(settings, redis_url=redis_url).run()
