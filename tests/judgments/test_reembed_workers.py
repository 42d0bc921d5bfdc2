"""A re-embed shared by worker processes (ADR 0062): two `collab worker --lane bulk` processes, one job at a time
each, take the ranges of one run from the bulk lane; together they embed every judgment once, and the run says
which processes took part. No coordinator: the ranges' rows and arq's queue are all there is."""

import os
import subprocess
import sys
import time
import uuid

import pytest
import redis

from collab.kit.jobs import WORKERS
from collab.kit.services import build_services, close_services
from support.api_process import settings_env
from support.factories import rejections_tenant
from support.settings import make_settings

pytestmark = pytest.mark.usefixtures("embedding_model")  # the export is cached: the processes load it in seconds

JUDGMENTS = 24


def own_queue(servers) -> str:
    """The session's Redis, another database: only these processes serve what is queued there."""
    url = servers["redis_url"]
    return url + ("&" if "?" in url else "?") + "db=7" if url.startswith("unix://") else url.rsplit("/", 1)[0] + "/7"


@pytest.fixture
def two_workers(servers, fake_providers):
    settings = make_settings(servers, fake_providers, redis_url=own_queue(servers), worker_max_jobs=1,
                             embedding_preload=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    env.update(settings_env(settings), COLLAB_LOG_LEVEL="WARNING")
    procs = [
        subprocess.Popen([sys.executable, "-m", "collab.cli", "worker", "--lane", "bulk"], env=env,
                         start_new_session=True) for _ in range(2)
    ]
    queue = redis.Redis.from_url(own_queue(servers))
    try:
        deadline = time.monotonic() + 120
        while queue.scard(WORKERS) < 2:  # both heartbeats registered: both poll the bulk lane
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "the workers did not start"
            time.sleep(0.05)  # polling for readiness, not waiting out a behaviour
        yield settings, procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
        queue.flushdb()
        queue.close()


def test_two_worker_processes_share_the_ranges_of_one_run(client, live, db, two_workers):
    settings, procs = two_workers
    t = rejections_tenant(client, live, [f"Decision {i}: the caption of figure {i} is vague" for i in range(JUDGMENTS)])
    target = f"copy-{uuid.uuid4().hex[:6]}"
    db.execute("insert into embedding_models (name, source, dimensions) values (%s, 'default', 384)", (target, ))

    from collab.judgments import reembed

    async def run_and_wait():
        svc = await build_services(settings)
        try:
            run = await reembed.start(svc, model=target, source="default", dimensions=384, only=t.api_key, batch_size=2,
                                      activate=True, parallel=8, range_size=3)
            deadline = time.monotonic() + 180
            while run["state"] != "done":  # the processes work; this one only reads the progress
                assert time.monotonic() < deadline, run
                assert all(p.poll() is None for p in procs), "a worker process died"
                await _tick()
                run = await reembed.progress(svc, run["id"])
            return run
        finally:
            await close_services(svc)

    run = live.run(run_and_wait(), timeout=240)
    assert run["ranges"] == 8 and run["ranges_done"] == 8 and run["judgments_done"] == JUDGMENTS
    assert run["processes"] == 2, "both worker processes took ranges"
    pids = {
        r["worker"].split("/")[0].rsplit(":", 1)[1]
        for r in db.execute("select worker from reembed_ranges where run_id = %s", (run["id"], )).fetchall()
    }
    assert pids == {str(p.pid) for p in procs}  # the two processes, not the session's own worker
    rows = db.execute(
        "select judgment_id, count(*) as n from judgment_embeddings where api_key_id = %s and model = %s group by 1",
        (t.api_key, target)).fetchall()
    assert len(rows) == JUDGMENTS and all(r["n"] == 1 for r in rows)
    assert db.execute("select embedding_model from api_keys where id = %s",
                      (t.api_key, )).fetchone()["embedding_model"] == target


async def _tick() -> None:
    import asyncio

    await asyncio.sleep(0.1)  # polling a run another process works on, as `collab reembed` does
