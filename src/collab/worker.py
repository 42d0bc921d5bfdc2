"""The arq workers: one process holds the pool, the model clients and the lanes of jobs.

Each lane of `kit.jobs.LANES` (search, ai, extraction, bulk) is an arq worker on its own queue with its own slots,
so no kind of work waits behind another kind's slots. Every lane waits for work on a Redis list that a job's
enqueue pushes to (no poll delay); its poll only finds retries and fires the crons. A lane tells a `run_sync`
caller that its job ended with a push on the job's own list (no result polling); see docs/jobs.md.
"""

import asyncio
import logging
import signal
import time
from typing import Any

from arq import cron, func
from arq.connections import RedisSettings
from arq.constants import abort_job_max_age, abort_jobs_ss, in_progress_key_prefix
from arq.utils import timestamp_ms
from arq.worker import Worker
from redis.exceptions import RedisError

from collab.config import Settings, get_settings
from collab.kit import heap
from collab.kit.crypto import new_id
from collab.kit.jobs import (
    AWAITED_RESULT_S,
    DONE_KEY,
    DONE_TOKEN,
    LANES,
    SYNC_PREFIX,
    WAKE_KEY,
    Heartbeat,
    Lane,
    lane,
    load,
    reap,
    sweep,
    wake,
)
from collab.kit.redisclient import RedisTarget, plain_client
from collab.kit.services import Services, build_services, close_services, redis_target
from collab.llm.client import load_litellm

log = logging.getLogger("collab.worker")


def functions(settings: Settings) -> list:
    """Every declared job (kit/jobs/registry.py) as arq runs it, with its timeout and tries; each lane serves its own.

    A tracked job gets one try more than its own `max_tries`: tries that end without an outcome (the worker died,
    see kit/jobs/leases.py) count on both sides, and the extra try reaches the job's wrapper, which records it
    `failed` at once instead of arq dropping it unrecorded. An awaited job's result is read at once, so it stays
    in Redis only briefly (AWAITED_RESULT_S).
    """
    return [
        func(
            spec.run,
            name=spec.name,
            timeout=spec.timeout_s(settings),
            max_tries=spec.max_tries if spec.awaited else spec.max_tries + 1,
            keep_result=AWAITED_RESULT_S if spec.awaited else None  # None: arq's default
        ) for spec in load().values()
    ]


def _cron_jobs() -> list:
    from collab.agents.tasks import sweep_executions
    from collab.extraction.tasks import drop_old_content
    from collab.insights.tasks import insights_sweep
    from collab.kit.usage import drop_old as drop_old_usage
    from collab.knowledge.tasks import knowledge_sweep
    from collab.llm.quota import drop_past_days as drop_old_platform_usage
    from collab.notifications.tasks import email_sweep, flush_due
    from collab.realtime.tasks import compact_sweep
    from collab.webhooks.tasks import sweep as webhook_sweep

    return [
        cron(sweep, second={0, 10, 20, 30, 40, 50}, run_at_startup=True, unique=True),
        # Jobs of workers that died mid-job run again once their lease is over (see kit/jobs/leases.py).
        cron(reap, second=set(range(0, 60, 5)), run_at_startup=True, unique=True),
        # Delayed and batched notifications fall due at any second; a 5 s tick bounds their lateness.
        cron(flush_due, name="flush_notifications", second=set(range(0, 60, 5)), run_at_startup=True, unique=True),
        # Notification e-mails whose batch window or retry time has come (a 5 s tick, like the batches).
        cron(email_sweep, name="notification_email_sweep", second=set(range(2, 60, 5)), run_at_startup=True,
             unique=True),
        # Webhook retries (5 s and up) and CRDT event windows fall due at any second: sweep every second.
        cron(webhook_sweep, name="webhook_sweep", second=set(range(60)), run_at_startup=True, unique=True),
        # Uploaded bytes past their retention (COLLAB_KNOWLEDGE_SOURCE_RETENTION_DAYS) are dropped hourly.
        cron(drop_old_content, name="drop_old_source_content", minute={17}, second={0}, run_at_startup=True,
             unique=True),
        # Realtime updates that no API process folded into their editor's state (docs/realtime.md, compaction).
        cron(compact_sweep, name="realtime_compact_sweep", second={7, 37}, run_at_startup=True, unique=True),
        # Usage counters older than COLLAB_USAGE_RETENTION_DAYS (kit/usage.py) are deleted hourly.
        cron(drop_old_usage, name="drop_old_usage", minute={23}, second={0}, run_at_startup=True, unique=True),
        # Platform-key quota counters of past days (llm/quota.py): only the current day's are read.
        cron(drop_old_platform_usage, name="drop_old_platform_usage", minute={29}, second={0}, run_at_startup=True,
             unique=True),
        # Upload slots of knowledge/upload-url past use (their bytes with them), and ingests no try can finish.
        cron(knowledge_sweep, name="knowledge_sweep", minute=set(range(1, 60, 5)), second={0}, run_at_startup=True,
             unique=True),
        # Agent executions left running past their time budget (worker lost, job cancelled) end as `error`.
        cron(sweep_executions, name="agent_execution_sweep", second={15, 45}, run_at_startup=True, unique=True),
        # Memory insights of keys whose judgments changed: one bounded computation per key (insights/tasks.py).
        cron(insights_sweep, name="insights_sweep", second={11, 41}, run_at_startup=True, unique=True)
    ]


# How often a lane asks Redis for aborted jobs (arq asks on every poll, i.e. on every wake-up of a busy lane).
ABORT_CHECK_S = 0.25

# A job's claim: not in progress anywhere, still queued and due (its score), then marked in progress.
_CLAIM = """
if redis.call('exists', KEYS[1]) == 1 then return nil end
local score = redis.call('zscore', KEYS[2], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return nil end
redis.call('psetex', KEYS[1], ARGV[3], '1')
return score
"""


class LaneWorker(Worker):
    """An arq worker that waits for work on its lane's wake list and tells `run_sync` callers when a job ends.

    arq sleeps `poll_delay` between polls; this one also ends that wait as soon as a job is announced (a push on
    the lane's wake list, see kit/jobs/lanes.py `wake`) or one of its own jobs ends (a slot is free again).
    `poll_delay` stays as the fallback for jobs nobody announced (retries, jobs unlocked by `reap`).
    """

    def __init__(self, *args: Any, lane: Lane, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lane = lane
        # arq keeps its settings only when it makes the client; their retries still pace the wait for Redis.
        self.start_settings: RedisSettings = kwargs.get("redis_settings") or RedisSettings()
        self._freed = asyncio.Event()
        self._wake: asyncio.Task | None = None
        self._next_abort_check = 0.0
        self.clock = time.monotonic

    def _job_ended(self, _task: asyncio.Task) -> None:
        """A job's task ended: its slot is free again."""
        full = self.job_counter >= self.max_jobs
        self.job_counter -= 1
        self.sem.release()
        # Only a full worker stopped taking wake-ups, so only then can announced jobs be waiting for this slot; a
        # poll after every job would cost a search two Redis round trips more. A burst run polls to see its end.
        if full or self.burst:
            self._freed.set()

    def _started(self) -> int:
        """Jobs this worker started (a burst run stops at `max_burst_jobs`)."""
        return self.jobs_complete + self.jobs_retried + self.jobs_failed + len(self.tasks)

    async def _poll(self) -> None:
        """One poll, as arq's own but on its public attributes: start the jobs due, look for aborted ones, forget
        the tasks that ended, beat."""
        count = self.queue_read_limit
        if self.burst and self.max_burst_jobs >= 0:
            count = min(count, self.max_burst_jobs - self._started())
            if count < 1:
                return
        if self.allow_pick_jobs and self.job_counter < self.max_jobs:
            job_ids = await self.pool.zrangebyscore(self.queue_name, min=float("-inf"), max=timestamp_ms(), start=0,
                                                    num=count)
            await self.start_jobs(job_ids)
        # An abort comes from a caller that has already answered (past its deadline): a few looks a second are
        # enough, rather than a Redis round trip on every poll. The lane's fallback poll brings the next look.
        if self.allow_abort_jobs and self.clock() >= self._next_abort_check:
            self._next_abort_check = self.clock() + ABORT_CHECK_S
            await self._abort()
        for job_id, task in list(self.tasks.items()):
            if task.done():
                del self.tasks[job_id]
                task.result()  # an error of run_job itself surfaces here, as in arq
        await self.heart_beat()

    async def _abort(self) -> None:
        """Cancel the jobs running here that a caller aborted (arq's abort set; entries past their age dropped)."""
        async with self.pool.pipeline(transaction=True) as pipe:
            pipe.zrange(abort_jobs_ss, start=0, end=-1)
            pipe.zremrangebyscore(abort_jobs_ss, min=timestamp_ms() + abort_job_max_age, max=float("inf"))
            wanted, _ = await pipe.execute()
        aborted = set()
        for job_id in (j.decode() for j in wanted):
            task = self.job_tasks.get(job_id)
            if task is not None:
                aborted.add(job_id)
                task.cancel()
        if aborted:
            self.aborting_tasks.update(aborted)
            await self.pool.zrem(abort_jobs_ss, *aborted)

    async def _done(self, job_id: str, result_data: bytes | None) -> None:
        """Tell a `run_sync` caller its job ended: the result itself where there is one (no further read)."""
        if job_id.startswith(SYNC_PREFIX):
            try:
                async with self.pool.pipeline(transaction=False) as pipe:
                    pipe.lpush(DONE_KEY + job_id, result_data or DONE_TOKEN)
                    pipe.pexpire(DONE_KEY + job_id, 60_000)
                    await pipe.execute()
            except (RedisError, OSError) as exc:  # the caller reads the result on its next look anyway
                log.warning("done push for %s failed: %s", job_id, exc)

    async def finish_job(self, job_id: str, finish: bool, result_data: bytes | None, *args: Any) -> None:
        # A result goes to the waiting caller before arq's bookkeeping (which stores a copy of it): one round trip
        # less on the answer's way. Without one, the caller reads arq's result key, so the push comes after.
        if finish and result_data:
            await self._done(job_id, result_data)
        await super().finish_job(job_id, finish, result_data, *args)
        if finish and not result_data:
            await self._done(job_id, None)

    async def finish_failed_job(self, job_id: str, result_data: bytes | None) -> None:
        await super().finish_failed_job(job_id, result_data)
        await self._done(job_id, result_data)

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        # arq's start_jobs, with its claim of each job (WATCH, EXISTS, ZSCORE, MULTI/EXEC: four round trips) in
        # one script: a searched-for job starts ~1 ms sooner. Same keys, same outcome.
        for job_id_b in job_ids:
            await self.sem.acquire()
            if self.job_counter >= self.max_jobs:
                self.sem.release()
                return
            self.job_counter += 1
            job_id = job_id_b.decode()
            # redis-py types its sync and async clients' replies as one union
            # redis-py types script arguments and timeouts narrower than it takes (ints, a float timeout)
            try:
                score = await self.pool.eval(  # type: ignore[misc]
                    _CLAIM,
                    2,
                    in_progress_key_prefix + job_id,
                    self.queue_name,
                    job_id,
                    timestamp_ms(),  # type: ignore[arg-type]
                    int(self.in_progress_timeout_s * 1000)  # type: ignore[arg-type]
                )
            except BaseException:  # Redis away or read-only (a failover): the slot is free again, the poll retries
                self.job_counter -= 1
                self.sem.release()
                raise
            if score is None:  # running elsewhere, finished, or re-queued for later
                self.job_counter -= 1
                self.sem.release()
                continue
            task = self.loop.create_task(self.run_job(job_id, int(float(score))))
            task.add_done_callback(self._job_ended)
            self.tasks[job_id] = task

    async def main(self) -> None:
        # arq's `main`, with `_idle` in place of its fixed sleep between polls; the Redis client is given (see
        # make_worker), so none is made here. Redis is waited for as arq's own start-up does (its retries).
        for attempt in range(self.start_settings.conn_retries, -1, -1):
            try:
                await self.pool.ping()
                break
            except (RedisError, OSError) as exc:
                if not attempt:
                    raise
                log.warning("Redis not answering at start (%s); %d tries left", exc, attempt)
                await asyncio.sleep(self.start_settings.conn_retry_delay)
        self.ctx["redis"] = self.pool
        if self.on_startup:
            await self.on_startup(self.ctx)
        while True:
            try:
                await self._poll()
            except (RedisError, OSError) as exc:
                # Redis restarting or failing over (arq's own loop would end the process): the jobs running go on,
                # the next poll finds Redis again (behind Sentinel, the new master).
                log.warning("polling the %s queue failed, polling again: %s", self.queue_name, exc)
                await asyncio.sleep(self.start_settings.conn_retry_delay)
                continue
            if self.burst:
                if 0 <= self.max_burst_jobs <= self._started():
                    await asyncio.gather(*self.tasks.values())
                    return None
                if await self.pool.zcard(self.queue_name) == 0:
                    await asyncio.gather(*self.tasks.values())
                    return None
            await self._idle()

    async def _idle(self) -> None:
        """Wait until a job is announced, a slot frees, or `poll_delay` passes, whichever comes first."""
        if self._wake is None and self.job_counter < self.max_jobs:
            # Blocks at most 1 s, then is issued again (redis-py gives up on a blocked reply it never gets).
            # redis-py types its sync and async clients' replies as one union
            popping = self.pool.blpop([WAKE_KEY + self.queue_name], timeout=1)
            self._wake = asyncio.ensure_future(popping)  # type: ignore[arg-type]
        freed = asyncio.ensure_future(self._freed.wait())
        waits = {freed} | ({self._wake} if self._wake is not None else set())
        try:
            done, _ = await asyncio.wait(waits, timeout=self.poll_delay_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            freed.cancel()
        self._freed.clear()
        if self._wake is not None and self._wake.done():
            token, self._wake = self._wake, None
            if not token.cancelled() and token.exception() is not None:
                log.warning("waiting on the %s wake list failed: %s", self.queue_name, token.exception())
                await asyncio.sleep(self.poll_delay_s)
            elif not token.cancelled() and token.result() is not None and self.job_counter >= self.max_jobs:
                # The token came while every slot filled up: this worker cannot start the job, so hand the token
                # on to a worker that can (else that one waits for its fallback poll).
                try:
                    await wake(self.pool, self.queue_name)
                except (RedisError, OSError) as exc:
                    log.warning("handing on a wake token of %s failed: %s", self.queue_name, exc)

    async def close(self) -> None:
        if self._wake is not None:
            self._wake.cancel()
            await asyncio.gather(self._wake, return_exceptions=True)
            self._wake = None
        # arq's close waits for the jobs its stop cancelled without return_exceptions: a job that ends cancelled
        # (one stopped while its result was being written) raised there and skipped the rest of the close (the
        # heartbeat's goodbye, the pools), and the process exited 1. Settle them here; arq then waits on none.
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        self.tasks.clear()
        await super().close()


class Lanes:
    """The lane workers of one process, run and stopped together (what `make_worker` returns)."""

    def __init__(self, workers: list[LaneWorker], *, handle_signals: bool):
        self.workers = workers
        self.handle_signals = handle_signals

    def __getitem__(self, name: str) -> LaneWorker:
        """The worker of lane `name` in this process (KeyError when it runs elsewhere)."""
        for w in self.workers:
            if w.lane.name == name:
                return w
        raise KeyError(name)

    async def main(self) -> None:
        """Run every lane until stopped."""
        tasks = []
        for w in self.workers:
            w.main_task = task = asyncio.ensure_future(w.main())
            tasks.append(task)
        await asyncio.gather(*tasks)

    async def close(self) -> None:
        """Stop every lane: arq cancels what it runs (those jobs run again elsewhere, see kit/jobs/leases.py)."""
        await asyncio.gather(*(w.close() for w in self.workers))

    def _signal(self, signum: signal.Signals) -> None:
        for w in self.workers:
            w.handle_sig(signum)

    def run(self) -> None:
        """Run until SIGINT/SIGTERM, then close (the `collab worker` process)."""
        load_litellm()  # the model client's import (seconds), before any job waits on it
        loop = self.workers[0].loop
        if self.handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, self._signal, signum)
        task = loop.create_task(self.main())
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        finally:
            loop.run_until_complete(self.close())


def make_worker(settings: Settings, svc: Services | None = None, *, redis_url: RedisTarget,
                lease_s: float | None = None, lanes: str = "all", handle_signals: bool = True,
                **overrides: Any) -> Lanes:
    """The lane workers of one process, wired to the services; `svc` shares already-built ones (tests).

    `lanes`: "all" (every lane, the default) or one lane's name (search, ai, extraction, bulk: a process per
    lane). `lease_s`: how long after its last heartbeat a silent worker still owns its jobs (default
    COLLAB_WORKER_LEASE_S, 20 s): a worker that dies mid-job has its jobs run again that long after.
    """
    if lanes != "all" and lanes not in LANES:
        raise ValueError(f"lanes must be all or one of {', '.join(LANES)}, not {lanes!r}")
    lease = lease_s if lease_s is not None else settings.worker_lease_s
    every = functions(settings)
    from collab.judgments.tasks import ActiveModel

    # One embedder holder per process, shared by every lane and job (arq copies ctx per job, see judgments/tasks.py).
    shared: dict[str, Any] = {"users": 0, "active_model": ActiveModel(upgrades=True)}
    served: dict[str, float] = {}  # queue → its workers' in-progress lock (seconds), for `reap`
    crons = _cron_jobs()
    cron_names = {c.name for c in crons}  # `reap` leaves their ticks alone

    async def services() -> Services:
        # One pool and one set of clients per process, whichever lane starts first.
        if "svc" not in shared:
            shared["svc"] = asyncio.ensure_future(build_services(settings)) if svc is None else None
        shared["users"] += 1
        return svc or await shared["svc"]

    def build(where: Lane, fns: list, *, crons: list, max_jobs: int, poll_delay: float) -> LaneWorker:

        async def startup(ctx: dict) -> None:
            # Heartbeat first: a job is only picked after startup, but its claim must be visible from the start.
            ctx["lease_s"] = lease
            ctx["in_progress_s"] = worker.in_progress_timeout_s
            ctx["queue_name"] = worker.queue_name
            ctx["lanes"] = served
            ctx["cron_names"] = cron_names
            ctx["heartbeat"] = heartbeat = Heartbeat(ctx["redis"], lambda: list(worker.tasks), lease_s=lease,
                                                     worker_id=new_id("wkr_"))
            heartbeat.start()
            ctx["svc"] = await services()
            ctx["pool"] = ctx["svc"].pool
            ctx["settings"] = settings
            ctx["active_model"] = shared["active_model"]
            # Load the embedding model now (imports take seconds), not on the first search; jobs that need no
            # model run meanwhile (one that does waits for the same process-wide load; every lane starts it, one
            # loads and registers). COLLAB_EMBEDDING_PRELOAD=false leaves it to the first job that needs it.
            if not settings.embedding_preload:
                return
            from collab.judgments.tasks import active_embedder

            ctx["model_loading"] = asyncio.ensure_future(active_embedder(ctx))
            if svc is None and not shared.get("settling"):  # a process of its own (tests share theirs)
                shared["settling"] = True
                # Once the model is loaded, start-up's objects leave later collections (kit/heap.py).
                ctx["model_loading"].add_done_callback(lambda _: heap.settle(ctx["svc"].loop_lag))

        async def shutdown(ctx: dict) -> None:
            if "model_loading" in ctx:
                await asyncio.gather(ctx["model_loading"], return_exceptions=True)
            if "heartbeat" in ctx:
                await ctx["heartbeat"].stop()
            if "svc" in ctx:
                shared["users"] -= 1
                if shared["users"] == 0:
                    await shared["active_model"].stop()
                    if svc is None:
                        await close_services(ctx["svc"])

        options: dict[str, Any] = dict(
            functions=fns,
            cron_jobs=crons,
            queue_name=where.queue,
            # arq's pool is given (plain_client: a URL or the Sentinels' master), so these are only its start-up
            # retries for Redis.
            redis_settings=RedisSettings(),
            # arq's own client, made here (connections are opened on first use) rather than by arq's start-up.
            redis_pool=plain_client(redis_url, queue=where.queue),
            on_startup=startup,
            on_shutdown=shutdown,
            # The fallback poll; a wake-up push ends the wait at once (LaneWorker).
            poll_delay=poll_delay,
            max_jobs=max_jobs,
            keep_result=300,
            # An awaited job past its API deadline is aborted (cancelled), not left running.
            allow_abort_jobs=True,
            # The lanes share a loop: `Lanes.run` handles the signals for them.
            handle_signals=False)
        options.update(overrides)
        worker = LaneWorker(**options, lane=where)
        served[where.queue] = worker.in_progress_timeout_s
        return worker

    slots = {
        "search": settings.worker_search_max_jobs, "ai": settings.worker_ai_max_jobs,
        "extraction": settings.worker_extraction_max_jobs, "bulk": settings.worker_max_jobs
    }
    # Every lane is built even when one runs here: the bulk lane's `reap` unlocks the other lanes' jobs too.
    built = {
        name: build(where, [f for f in every if lane(f.name) is where], crons=crons if name == "bulk" else [],
                    max_jobs=slots[name],
                    poll_delay=settings.worker_poll_delay_s if name == "bulk" else settings.worker_lane_poll_delay_s)
        for name, where in LANES.items()
    }
    chosen = list(built.values()) if lanes == "all" else [built[lanes]]
    return Lanes(chosen, handle_signals=handle_signals)


def run(settings: Settings | None = None, *, lanes: str = "all") -> None:
    """Run a worker process until stopped (collab worker [--lane all|search|ai|extraction|bulk])."""
    settings = settings or get_settings()
    from collab.kit import embedded

    target = redis_target(settings) or embedded.EmbeddedRedis(settings.data_dir).start()
    make_worker(settings, redis_url=target, lanes=lanes).run()
