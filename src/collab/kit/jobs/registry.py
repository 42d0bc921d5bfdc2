"""The job registry: `@job(...)` beside a job's function declares it once; the workers and every enqueue read it."""

import functools
import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Coroutine

from collab.kit.jobs.lanes import LANES, Lane
from collab.kit.jobs.tracking import reports_failures, tracked


@dataclass(frozen=True)
class JobSpec:
    """One declared job: what arq runs, on which lane, with which timeout and tries."""

    name: str
    run: Callable[..., Coroutine[Any, Any,
                                 Any]]  # the function as the worker runs it (tracked or reporting its failures)
    lane: Lane
    awaited: bool
    timeout: float | Callable[[Any], float] | None  # seconds, or read from the settings
    max_tries: int

    def timeout_s(self, settings: Any) -> float | None:
        """The job's timeout under these settings."""
        return self.timeout(settings) if callable(self.timeout) else self.timeout


JOBS: dict[str, JobSpec] = {}


def job(*, lane: str = "bulk", awaited: bool = False, timeout: float | Callable[[Any], float] | None = None,
        max_tries: int | None = None, backoff_s: float = 2.0):
    """Declare a job: registered under its function's name, served by `lane`'s workers.

    A plain job is tracked: enqueued in a transaction (`tx.enqueue(name, ...)`), its row moves queued → running →
    succeeded/failed, and it runs again on failure (`max_tries`, default 5, `backoff_s` doubling). An awaited job
    is what an endpoint waits for (`run_sync(redis, name, ...)`): no row, its failures come back to the caller,
    and a second try (`max_tries` default 1) only when the first ended without an outcome. `timeout` is seconds,
    or a function of the settings.
    """
    if lane not in LANES:
        raise ValueError(f"lane must be one of {', '.join(LANES)}, not {lane!r}")

    def declare(fn: Callable[..., Awaitable[Any]]):
        tries = max_tries if max_tries is not None else (1 if awaited else 5)
        run = reports_failures(fn) if awaited else tracked(max_tries=tries, backoff_s=backoff_s)(fn)
        known = JOBS.get(fn.__name__)
        # `run` wraps the declared function (functools.wraps): its __wrapped__, which a Callable does not declare.
        first = _where(known.run.__wrapped__) if known is not None else None  # type: ignore[attr-defined]
        if first is not None and first != _where(fn):
            raise ValueError(f"two jobs are named {fn.__name__}: {first} and {_where(fn)}")
        JOBS[fn.__name__] = JobSpec(fn.__name__, run, LANES[lane], awaited, timeout, tries)
        return run

    return declare


def _where(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def past(setting: str, margin_s: float = 5) -> Callable[[Any], float]:
    """A timeout just past the API deadline a setting names: an awaited job outlives its caller's wait, briefly."""
    return lambda settings: getattr(settings, setting) + margin_s


@functools.cache
def load() -> dict[str, JobSpec]:
    """Every declared job: the `tasks` module of each part of collab is imported once (declaring is importing)."""
    import collab

    for part in pkgutil.iter_modules(collab.__path__):
        if part.ispkg and importlib.util.find_spec(f"collab.{part.name}.tasks") is not None:
            importlib.import_module(f"collab.{part.name}.tasks")
    importlib.import_module("collab.kit.jobs.probes")
    return JOBS


def spec(name: str) -> JobSpec:
    """The declared job `name` (KeyError naming it when there is none)."""
    found = JOBS.get(name) or load().get(name)
    if found is None:
        raise KeyError(f"no job is declared as {name!r} (declare it with @job in its part's tasks.py)")
    return found


def lane(name: str) -> Lane:
    """The lane the job `name` runs on."""
    return spec(name).lane
