"""Jobs: enqueue after commit, dropped on rollback, swept when Redis was down, sync deadline and outage."""

from dataclasses import replace

import pytest

from collab.kit.errors import ApiError
from collab.kit.jobs import run_sync, sweep, transaction
from collab.kit.redisclient import redis_client


def _job(db, job_id):
    return db.execute("select * from jobs where id = %s", (job_id, )).fetchone()


async def _enqueue_and_wait(live, **args):
    async with transaction(live.svc.pool, live.svc.redis) as tx:
        job_id = await tx.enqueue("echo_tracked", api_key_id=None, **args)
    from arq.jobs import Job

    await Job(job_id, live.svc.redis).result(timeout=20, poll_delay=0.01)
    return job_id


def test_job_runs_after_commit_and_records_success(live, db):
    job_id = live.run(_enqueue_and_wait(live, value=42))
    row = _job(db, job_id)
    assert row["status"] == "succeeded" and row["result"] == {"value": 42} and row["attempts"] == 1
    assert row["enqueued_at"] is not None


def test_rollback_drops_the_job(live, db):

    class Boom(Exception):
        pass

    async def go():
        ids = []
        with pytest.raises(Boom):
            async with transaction(live.svc.pool, live.svc.redis) as tx:
                ids.append(await tx.enqueue("echo_tracked", api_key_id=None, value=1))
                raise Boom()
        return ids[0]

    job_id = live.run(go())
    assert _job(db, job_id) is None
    assert live.run(live.svc.redis.exists(f"arq:job:{job_id}")) == 0


def test_redis_down_at_commit_leaves_job_for_the_sweep(live, db, tmp_path):
    dead = redis_client(f"unix://{tmp_path}/none.sock")

    async def commit_while_down():
        async with transaction(live.svc.pool, dead) as tx:
            return await tx.enqueue("echo_tracked", api_key_id=None, value=7)

    job_id = live.run(commit_while_down())
    row = _job(db, job_id)
    assert row["status"] == "queued" and row["enqueued_at"] is None
    # The sweep re-sends it once it is older than the sweep threshold.
    db.execute("update jobs set created_at = now() - interval '1 hour' where id = %s", (job_id, ))
    ctx = {"pool": live.svc.pool, "redis": live.svc.redis, "settings": live.settings}
    assert live.run(sweep(ctx)) >= 1

    async def wait():
        from arq.jobs import Job

        return await Job(job_id, live.svc.redis).result(timeout=20, poll_delay=0.01)

    assert live.run(wait()) == {"value": 7}
    assert _job(db, job_id)["status"] == "succeeded"


def test_a_job_committed_without_a_queue_is_not_marked_sent(live, db):

    async def commit_without_redis():
        async with transaction(live.svc.pool, None) as tx:
            return await tx.enqueue("echo_tracked", api_key_id=None, value=3)

    job_id = live.run(commit_without_redis())
    row = _job(db, job_id)
    assert row["status"] == "queued" and row["enqueued_at"] is None  # the sweep will send it
    assert live.run(live.svc.redis.exists(f"arq:job:{job_id}")) == 0


def test_failing_job_retries_then_records_failure(live, db):

    async def go():
        # Recorded but not queued (no Redis for this transaction): the live worker must not run it beside us.
        async with transaction(live.svc.pool, None) as tx:
            job_id = await tx.enqueue("echo_tracked", api_key_id=None, fail="broken input")
        # Run the job function directly, as the worker would on each delivery.
        from collab.kit.jobs.probes import echo_tracked

        ctx = {"pool": live.svc.pool}
        from arq.worker import Retry

        for _ in range(2):
            with pytest.raises(Retry):
                await echo_tracked(ctx, job_id)
        assert await echo_tracked(ctx, job_id) is None  # third try: recorded as failed
        assert await echo_tracked(ctx, job_id) is None  # a late redelivery is a no-op
        return job_id

    job_id = live.run(go())
    row = _job(db, job_id)
    assert row["status"] == "failed" and "broken input" in row["error"] and row["attempts"] == 3


def test_run_sync_returns_the_result(live):
    assert live.run(run_sync(live.svc.redis, "echo", timeout_s=10, a=1)) == {"a": 1}


def test_run_sync_without_redis_is_unavailable(live, tmp_path):
    dead = redis_client(f"unix://{tmp_path}/none.sock")
    with pytest.raises(ApiError) as caught:
        live.run(run_sync(dead, "echo", timeout_s=5))
    assert caught.value.code == "UNAVAILABLE"


def test_run_sync_past_deadline(live, monkeypatch):
    from collab.kit import jobs

    # No worker serves this lane's queue, so the job cannot finish inside its budget.
    monkeypatch.setitem(jobs.JOBS, "echo", replace(jobs.load()["echo"], lane=jobs.Lane("bulk", "collab:nobody")))

    async def go():
        return await run_sync(live.svc.redis, "echo", timeout_s=0.2)

    with pytest.raises(ApiError) as caught:
        live.run(go())
    assert caught.value.code == "DEADLINE_EXCEEDED"


def test_reap_leaves_the_ticks_of_named_crons_alone(live):
    from arq.constants import in_progress_key_prefix

    from collab.kit.jobs import reap

    queue = "collab:test:reap"
    lock_s = 3600.0
    # A tick of a named cron and a plain job, both locked for far longer than the lease by no live worker.
    jobs = ["flush_notifications:1795490250123", "job_orphan"]

    async def go():
        redis = live.svc.redis
        for job_id in jobs:
            await redis.zadd(queue, {job_id: 1})
            await redis.psetex(in_progress_key_prefix + job_id, 60_000, b"1")  # set an hour minus a minute ago
        ctx = {"redis": redis, "lease_s": 20, "lanes": {queue: lock_s}, "cron_names": {"flush_notifications"}}
        try:
            return await reap(ctx)
        finally:
            await redis.delete(queue, *(in_progress_key_prefix + j for j in jobs))

    assert live.run(go()) == ["job_orphan"]


def test_enqueue_writes_arqs_job_once_per_id(live):
    """One script call puts a job where arq reads it; a second enqueue of the same id is refused, as arq's is."""
    import uuid

    from arq.constants import job_key_prefix
    from arq.jobs import Job

    from collab.kit.jobs import enqueue

    async def scenario():
        redis, job_id = live.svc.redis, "test-" + uuid.uuid4().hex
        queue = "collab:test-queue:" + job_id  # no worker serves it: the job stays queued
        first = await enqueue(redis, "echo", 1, job_id=job_id, queue=queue, expires_ms=60_000, value=2)
        again = await enqueue(redis, "echo", 1, job_id=job_id, queue=queue, expires_ms=60_000, value=2)
        info = await Job(job_id, redis, _queue_name=queue).info()
        ttl = await redis.pttl(job_key_prefix + job_id)
        await redis.delete(job_key_prefix + job_id, queue)
        return first, again, info, ttl

    first, again, info, ttl = live.run(scenario())
    assert (first, again) == (True, False)
    assert (info.function, info.args, info.kwargs, info.job_try) == ("echo", (1, ), {"value": 2}, None)
    assert 0 < ttl <= 60_000
