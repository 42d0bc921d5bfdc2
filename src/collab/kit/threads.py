"""Thread pools by kind of work: what waits on a tenant's peer, or computes long on a tenant's input, runs in a pool
of its own, never in the event loop's default executor.

The default executor (about six threads on two cores) is lent to everything short in a process: name resolution
of every outgoing call (httpx and litellm resolve there), Yjs merges of live documents, CRDT reads. One tenant's
SMTP server that never answers took all of it for 30 s and with it every other tenant's socket edits, Ask AI and
extraction (found by tests/fairness). Each kind here is bounded on its own, so a tenant that fills one waits on
itself, and others' work of that kind only queues behind it for the pool's own timeout.
"""

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

T = TypeVar("T")

# Threads per process for each kind: a DNS lookup of a webhook, page, provider or SMTP host (bounded at 5 s each);
# an SMTP exchange (smtplib blocks, COLLAB_EMAIL_TIMEOUT_S each); a key's insights (COLLAB_INSIGHTS_COMPUTE_BUDGET_S);
# an execution's page to text (512 KiB at most).
SIZES = {"dns": 8, "smtp": 4, "insights": 2, "pages": 2}


@functools.cache
def pool(kind: str) -> ThreadPoolExecutor:
    """The process's pool for `kind` (one of SIZES), made on first use."""
    return ThreadPoolExecutor(max_workers=SIZES[kind], thread_name_prefix=f"collab-{kind}")


async def run(kind: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in the pool for `kind`, awaited from the loop."""
    return await asyncio.get_running_loop().run_in_executor(pool(kind), functools.partial(fn, *args, **kwargs))
