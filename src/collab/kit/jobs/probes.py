"""Jobs that do nothing but answer: they measure the queue (bench/queue.py) and prove a worker is serving."""

from typing import Any

from collab.kit.jobs.registry import job
from collab.kit.jobs.tracking import JobFailure


@job(awaited=True)
async def echo(ctx: dict, **kwargs: Any) -> dict[str, Any]:
    """Return the arguments (an awaited job on the bulk lane, woken only by its poll or a push)."""
    return kwargs


@job(lane="search", awaited=True)
async def ping(ctx: dict, **kwargs: Any) -> dict[str, Any]:
    """`echo` on the search lane (bench/queue.py measures both a polled and a woken lane's hops)."""
    return kwargs


@job(max_tries=3)
async def echo_tracked(ctx: dict, **kwargs: Any) -> dict[str, Any]:
    """A tracked job that returns its stored arguments; fails permanently when asked to (tests, drills)."""
    if kwargs.get("fail"):
        raise JobFailure(str(kwargs["fail"]))
    return kwargs
