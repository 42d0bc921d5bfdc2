"""Query encodes of one event loop, batched by length: one forward pass at a time takes every core, and the texts
that arrive while it runs go in the next passes, those of like length together.

A batch pads every text to its longest, so the texts of a pass are of like length (within `SPREAD` of the oldest
waiting one's). With 16 concurrent clients this cost the worker 7.1-8.4 ms of CPU per search against 8.7-10.2 for
the one-thread session beside the all-cores one, and answered 113-131 searches/s against 101-123 (four alternating
pairs on one stack; ADR 0027, "Concurrent query encodes in passes of like length"). A query that comes
alone runs at once: nothing waits to fill a batch.
"""

import asyncio
import functools
import weakref
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

# The most texts in one pass: a bound on how long the last one in a batch waits (~1.3 ms a short query).
MAX_BATCH = 16
# A pass takes the texts whose length (in characters, for tokens) is within this factor of the oldest one's.
SPREAD = 1.5


class QueryBatches:
    """Waiting texts and the pass that runs, for one loop; `encode` is what a caller awaits."""

    def __init__(self, executor: Executor, *, max_batch: int = MAX_BATCH):
        self.executor, self.max_batch = executor, max_batch
        self.waiting: list[tuple[Any, str, asyncio.Future]] = []
        self.running = False

    async def encode(self, embedder, text: str) -> list[float]:
        """The text's vector from `embedder.encode_queries`, in the next pass."""
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((embedder, text, future))
        if not self.running:
            self._next()
        return await future

    def _next(self) -> None:
        """Start a pass over the oldest waiting text and those of its model and like length (the rest wait a pass)."""
        self.waiting = [w for w in self.waiting if not w[2].done()]  # callers that gave up (a timeout, an abort)
        if not self.waiting:
            self.running = False
            return
        embedder, oldest, _ = self.waiting[0]
        low, high = len(oldest) / SPREAD, len(oldest) * SPREAD
        batch = [w for w in self.waiting if w[0] is embedder and low <= len(w[1]) <= high][:self.max_batch]
        taken = {w[2] for w in batch}
        self.waiting = [w for w in self.waiting if w[2] not in taken]
        self.running = True
        try:
            job = asyncio.get_running_loop().run_in_executor(self.executor, embedder.encode_queries,
                                                             [w[1] for w in batch])
        except Exception as exc:  # the executor is shut down: these callers fail, the next ones try again
            self._settle(batch, None, exc)
            self.running = False
            return
        job.add_done_callback(functools.partial(self._done, batch))

    def _done(self, batch: list, job: asyncio.Future) -> None:
        self._settle(batch, None if job.exception() else job.result(), job.exception())
        self._next()

    @staticmethod
    def _settle(batch: list, vectors: list | None, error: BaseException | None) -> None:
        for i, (_, _, future) in enumerate(batch):
            if future.done():
                continue
            if error is not None:
                future.set_exception(error)
            else:
                assert vectors is not None  # a pass without an error has its result
                future.set_result(vectors[i])


# A loop runs one pass at a time; a second thread serves a second loop in the process (tests, a CLI beside a worker).
# Never the loop's default executor, which also runs bulk encodes, model loads and file decodes.
_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="query-encode")
_per_loop: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, QueryBatches]" = weakref.WeakKeyDictionary()


async def encode_query(embedder, text: str) -> list[float]:
    """One query's vector, in the running loop's next pass (its futures belong to it; tests run many loops)."""
    loop = asyncio.get_running_loop()
    found = _per_loop.get(loop)
    if found is None:
        found = _per_loop[loop] = QueryBatches(_THREADS)
    return await found.encode(embedder, text)
