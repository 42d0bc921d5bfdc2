"""Background jobs: rows in Postgres hold the state users see; arq on Redis only delivers them (docs/jobs.md).

- `registry`: `@job(lane=..., awaited=..., timeout=..., max_tries=...)` beside a job's function declares it; the
  workers serve what is declared, and every enqueue finds the job's lane there.
- `outbox`: `transaction()` — a job enqueued in a write transaction is sent to Redis after commit; the sweep sends
  what did not get there.
- `tracking`: a tracked job's row (queued → running → succeeded/failed), its tries and its reasons.
- `awaited`: `run_sync` — an endpoint runs a job and waits for the result the worker pushes to it.
- `lanes`: a queue per kind of work (search, ai, extraction, bulk), woken by a push on every enqueue.
- `leases`: the heartbeat and `reap`, so a dead worker's jobs run again after the lease.
- `fencing`: a try of a tracked job writes, and records its outcome, only while it is the job's latest try.
"""

from collab.kit.jobs.awaited import AWAITED_RESULT_S, DONE_KEY, DONE_TOKEN, SYNC_PREFIX, run_sync
from collab.kit.jobs.lanes import BULK_QUEUE, LANES, WAKE_KEY, Lane, enqueue, wake
from collab.kit.jobs.leases import DEFAULT_LEASE_S, WORKER_KEY, WORKERS, Heartbeat, reap
from collab.kit.jobs.outbox import Tx, committed, send, sweep, transaction
from collab.kit.jobs.registry import JOBS, JobSpec, job, lane, load, past
from collab.kit.jobs.tracking import (
    CONNECTION_LOSSES_ALLOWED,
    GENERIC_FAILURE,
    JobFailure,
    PermanentError,
    reports_failures,
    tracked,
)

__all__ = [
    "AWAITED_RESULT_S", "BULK_QUEUE", "CONNECTION_LOSSES_ALLOWED", "DEFAULT_LEASE_S", "DONE_KEY", "DONE_TOKEN",
    "GENERIC_FAILURE", "JOBS", "LANES", "SYNC_PREFIX", "WAKE_KEY", "WORKERS", "WORKER_KEY", "Heartbeat", "JobFailure",
    "JobSpec", "Lane", "PermanentError", "Tx", "committed", "enqueue", "job", "lane", "load", "past", "reap",
    "reports_failures", "run_sync", "send", "sweep", "tracked", "transaction", "wake"
]
