"""Fencing: a try of a job commits only while it is the job's latest try.

A worker cut off from Redis (not from Postgres) keeps running its job after its lease ran out and another worker
took the job over (leases.py). Its late effects must not land a second time: every write transaction of a tracked
job (`outbox.transaction`) first locks the job's row as of its own try, and its outcome is recorded only by that
try (`tracking`). A try that was overtaken raises `Fenced` at its next write and stops there.
"""

from contextvars import ContextVar
from pathlib import Path

from collab.kit.db import Queries, fetch_one
from collab.kit.db.pool import Conn

q = Queries(Path(__file__).with_name("jobs.sql"))
# (job id, try) of the tracked job this task runs; None outside one (requests, awaited jobs, crons).
LEASE: ContextVar[tuple[str, int] | None] = ContextVar("collab_job_lease", default=None)


class Fenced(Exception):
    """A later try of this job started: this one must write nothing more."""


async def hold(conn: Conn) -> None:
    """In a write transaction of a tracked job: lock the job's row as of this try (Fenced if overtaken)."""
    lease = LEASE.get()
    if lease is None:
        return
    job_id, attempt = lease
    if await fetch_one(conn, q.hold_lease, {"id": job_id, "attempt": attempt}) is None:
        raise Fenced(f"job {job_id}: try {attempt} was overtaken by a later try")
