"""A tracked job's row: queued → running → succeeded/failed, its tries, and the reasons tenants read."""

import asyncio
import functools
import logging
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Awaitable, Callable

import psycopg
from arq import Retry
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from collab.kit.db import Queries, execute, fetch_one
from collab.kit.db.pool import connection_lost, failed_statement
from collab.kit.errors import ApiError
from collab.kit.jobs import fencing

log = logging.getLogger("collab.jobs")
q = Queries(Path(__file__).with_name("jobs.sql"))


class PermanentError(Exception):
    """A job failure that retrying cannot fix; recorded as `failed` with this reason (tenants read it)."""


class JobFailure(Exception):
    """A failure worth retrying whose message is written for tenants; recorded as the reason once tries run out.

    Any other exception is recorded with a generic reason: its text (a driver's DETAIL, a provider's message)
    goes to `jobs.error_detail` and the log only. In an awaited job it answers the caller with `code`.
    """

    def __init__(self, message: str, *, code: str = "INTERNAL"):
        super().__init__(message)
        self.code = code


def reports_failures(fn: Callable[..., Awaitable[Any]]):
    """Wrap an awaited (`run_sync`) job: an ApiError or JobFailure it raises comes back as its typed failure.

    Returned, not raised: arq pickles a raised exception, and ApiError's arguments are keyword-only. `run_sync`
    raises it again on the API side (`errors.raise_failure`), so every awaiting endpoint answers it the same way.
    """

    @functools.wraps(fn)
    async def run(ctx: dict, **kwargs: Any) -> Any:
        try:
            return await fn(ctx, **kwargs)
        except ApiError as exc:
            return exc.as_failure()
        except JobFailure as exc:
            return ApiError(exc.code, str(exc)).as_failure()

    return run


GENERIC_FAILURE = "The job failed after {tries} tries because of an internal error."


def tracked(*, max_tries: int = 5, backoff_s: float = 2.0):
    """Wrap a job so its row moves queued → running → succeeded/failed, idempotently."""

    def decorate(fn: Callable[..., Awaitable[Any]]):

        @functools.wraps(fn)
        async def run(ctx: dict, job_id: str) -> Any:
            pool: AsyncConnectionPool = ctx["pool"]
            async with pool.connection() as conn:
                row = await fetch_one(conn, q.start_job, {"id": job_id})
            if row is None:
                return None  # finished already, or unknown: at-least-once delivery makes this normal
            attempt = row["attempts"]
            if attempt > max_tries:
                # The earlier tries ended with no outcome (their worker died, or arq's timeout cancelled them):
                # a job that kills its worker every time must stop being retried.
                error = f"Gave up after {max_tries} tries that ended without an outcome (worker lost or timed out)."
                await _finish(pool, job_id, attempt, "failed", error=error)
                return None
            lease = fencing.LEASE.set((job_id, attempt))  # its writes hold the row as of this try (fencing.py)
            try:
                args = dict(row["args"])
                if row["api_key_id"] is not None:
                    args["api_key_id"] = row["api_key_id"]  # the tenant is a column, not an argument
                result = await fn(ctx, **args)
            except fencing.Fenced as exc:
                log.warning("job %s (%s) stopped: %s", job_id, fn.__name__, exc)
                return None
            except PermanentError as exc:
                await _finish(pool, job_id, attempt, "failed", error=str(exc))
                return None
            except Exception as exc:
                if connection_lost(exc):
                    return await _connection_lost(pool, job_id, fn.__name__, exc, attempts=attempt, backoff_s=backoff_s)
                if attempt >= max_tries:
                    detail = f"{type(exc).__name__}: {exc}"
                    reason = str(exc) if isinstance(exc, JobFailure) else GENERIC_FAILURE.format(tries=attempt)
                    log.warning("job %s (%s) failed for good: %s", job_id, fn.__name__, detail)
                    await _finish(pool, job_id, attempt, "failed", error=reason, detail=detail[:4000])
                    return None
                raise Retry(defer=timedelta(seconds=backoff_s * 2**(attempt - 1))) from exc
            finally:
                fencing.LEASE.reset(lease)
            await _finish(pool, job_id, attempt, "succeeded", result=result)
            return result

        run.__name__ = fn.__name__
        run.max_tries = max_tries  # type: ignore[attr-defined]  # the worker gives arq one more (worker.py)
        return run

    return decorate


# A job whose statements lost their connection to a crashed server runs once more; the next loss fails it for good.
# (A statement that kills its backend takes every tenant's connections with it: retried like any error it would
# crash the server at each try.)
CONNECTION_LOSSES_ALLOWED = 1


async def _connection_lost(pool: AsyncConnectionPool, job_id: str, function: str, exc: Exception, *, attempts: int,
                           backoff_s: float) -> None:
    """Count a lost connection against the job; retry it once, fail it for good (with its reason) the second time."""
    statement = failed_statement(exc) or "(not a named statement)"
    losses = await _count_loss(pool, job_id)
    if losses > CONNECTION_LOSSES_ALLOWED:
        log.error(
            "job %s (%s) failed for good: its database connection was lost %d times, the last in statement %s: %s",
            job_id, function, losses, statement, exc)
        detail = f"connection lost {losses} times, the last in statement {statement}: {type(exc).__name__}: {exc}"
        await _finish(pool, job_id, attempts, "failed", error=GENERIC_FAILURE.format(tries=attempts),
                      detail=detail[:4000])
        return None
    log.warning("job %s (%s) lost its database connection in statement %s; it runs once more: %s", job_id, function,
                statement, exc)
    raise Retry(defer=timedelta(seconds=backoff_s * 2**(attempts - 1))) from exc


async def _count_loss(pool: AsyncConnectionPool, job_id: str, wait_s: float = 60.0) -> int:
    """Record a lost connection on the job's row; how many it has now. Waits for a crashed server to recover."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            async with pool.connection() as conn:
                row = await fetch_one(conn, q.count_connection_loss, {"id": job_id})
            return row["connection_losses"] if row else 0
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)  # the server is still restarting after the crash


async def _finish(pool: AsyncConnectionPool, job_id: str, attempt: int, status: str, *, result: Any = None,
                  error: str | None = None, detail: str | None = None):
    """Record the outcome of try `attempt`: nothing when a later try took the job over (fencing.py)."""
    async with pool.connection() as conn:
        await execute(
            conn, q.finish_job, {
                "id": job_id, "attempt": attempt, "status": status,
                "result": Jsonb(result) if result is not None else None, "error": error, "detail": detail
            })
