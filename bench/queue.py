"""Queue hop latencies, of a polled lane and of a woken one, in one run: python -m bench queue.

before: the bulk queue as every awaited job used it (arq's 10 ms poll, result polled every 2 ms).
after: `run_sync` on the search lane (a wake-up push, the result's done push).
Hops: enqueue→start (the job function's first line) and done→answered (its return until the caller has the
result). The API side and the worker run in one process here (one clock for both ends of a hop).
"""

import shutil
import tempfile
import time
from pathlib import Path

from bench.common import pct
from collab.config import Settings
from collab.kit import embedded

N = 300


def _stamped(name: str):

    async def job(ctx: dict, **kwargs):
        return {"start": time.perf_counter(), **kwargs, "end": time.perf_counter()}

    job.__name__ = job.__qualname__ = name
    return job


async def _measure(redis, *, after: bool) -> tuple[list[float], list[float]]:
    from collab.kit.jobs import BULK_QUEUE, run_sync

    starts, answers = [], []
    for _ in range(N):
        sent = time.perf_counter()
        if after:
            out = await run_sync(redis, "ping", timeout_s=10)
        else:
            job = await redis.enqueue_job("echo", _queue_name=BULK_QUEUE)
            out = await job.result(timeout=10, poll_delay=0.002)
        answered = time.perf_counter()
        starts.append((out["start"] - sent) * 1000)
        answers.append((answered - out["end"]) * 1000)
    return starts, answers


def main() -> str:
    from collab import worker
    from collab.testing.live import Live

    worker.echo, worker.ping = _stamped("echo"), _stamped("ping")  # both lanes' round trips report when they ran
    root = Path(tempfile.mkdtemp(prefix="collab-bench-queue-"))
    redis = embedded.EmbeddedRedis(root)
    try:
        settings = Settings(
            database_url=embedded.start_postgres(root, database="collab_bench"),
            redis_url=redis.start(),
            data_dir=root,
            secret_key="bench-secret-key-0123456789-abcdefghij",
            log_json=False,
            # "before" enqueues without the wake push: the bulk lane's old 10 ms poll finds it
            worker_poll_delay_s=0.01)

        live = Live(settings).start()
        try:
            rows = []
            for name, after in (("before: a queue polled every 10 ms, result polled every 2 ms", False),
                                ("after: search lane, wake push, done push", True)):
                live.run(_measure(live.svc.redis, after=after), timeout=300)  # warm-up
                starts, answers = live.run(_measure(live.svc.redis, after=after), timeout=300)
                rows.append(f"| {name} | {pct(starts, 50):.2f} | {pct(starts, 99):.2f} | "
                            f"{pct(answers, 50):.2f} | {pct(answers, 99):.2f} |")
        finally:
            live.stop()
    finally:
        redis.stop()
        embedded.stop_postgres()
        shutil.rmtree(root, ignore_errors=True)
    head = (
        f"Queue hops, {N} sequential jobs each, ms\n\n| path | enqueue→start p50 | p99 | done→answered p50 | p99 |\n"
        "|---|---:|---:|---:|---:|")
    return "\n".join([head, *rows])


if __name__ == "__main__":
    print(main())
