"""Fencing (kit/jobs/fencing.py): a try of a job that another try took over (its worker lost Redis past its lease,
then came back) writes nothing more and records no outcome; the try that took over is the one that counts."""

import asyncio

from collab.kit.jobs import PermanentError, tracked, transaction


def _job(db, job_id):
    return db.execute("select * from jobs where id = %s", (job_id, )).fetchone()


def _children(db, job_id):
    return db.execute("select args->>'by' as by from jobs where args->>'child_of' = %s", (job_id, )).fetchall()


def test_an_overtaken_try_commits_no_effect_and_no_outcome(live, db):
    gates = {"A": asyncio.Event(), "B": asyncio.Event()}
    waiting = {"A": asyncio.Event(), "B": asyncio.Event()}

    async def effect(ctx: dict, **args):
        waiting[ctx["label"]].set()
        await gates[ctx["label"]].wait()
        async with transaction(ctx["pool"], None) as tx:  # the job's effect: a row written in its transaction
            await tx.enqueue("echo_tracked", api_key_id=None, child_of=args["me"], by=ctx["label"])
        return {"by": ctx["label"]}

    run = tracked(max_tries=3)(effect)

    async def go():
        async with transaction(live.svc.pool, None) as tx:
            job_id = await tx.enqueue("echo_tracked", api_key_id=None)
        async with live.svc.pool.connection() as conn:
            await conn.execute("update jobs set args = args || jsonb_build_object('me', id) where id = %s", (job_id, ))
        first = asyncio.ensure_future(run({"pool": live.svc.pool, "label": "A"}, job_id))
        await waiting["A"].wait()  # try 1 started, then its worker went quiet past its lease
        gates["B"].set()
        taken_over = await run({"pool": live.svc.pool, "label": "B"}, job_id)  # try 2, on another worker
        gates["A"].set()  # the first worker comes back and carries on
        return job_id, taken_over, await first

    job_id, taken_over, late = live.run(go())
    assert taken_over == {"by": "B"} and late is None
    row = _job(db, job_id)
    assert row["status"] == "succeeded" and row["result"] == {"by": "B"} and row["attempts"] == 2
    assert [r["by"] for r in _children(db, job_id)] == ["B"]  # one effect, the latest try's


def test_an_overtaken_try_does_not_overwrite_the_outcome(live, db):
    gate, waiting = asyncio.Event(), asyncio.Event()

    async def slow(ctx: dict, **args):
        if ctx["label"] == "A":
            waiting.set()
            await gate.wait()
            raise PermanentError("the late try fails")  # would record a failure, were it still the job's
        return {"by": ctx["label"]}

    run = tracked(max_tries=3)(slow)

    async def go():
        async with transaction(live.svc.pool, None) as tx:
            job_id = await tx.enqueue("echo_tracked", api_key_id=None)
        first = asyncio.ensure_future(run({"pool": live.svc.pool, "label": "A"}, job_id))
        await waiting.wait()
        await run({"pool": live.svc.pool, "label": "B"}, job_id)
        gate.set()
        await first
        return job_id

    job_id = live.run(go())
    row = _job(db, job_id)
    assert row["status"] == "succeeded" and row["result"] == {"by": "B"} and row["error"] is None
