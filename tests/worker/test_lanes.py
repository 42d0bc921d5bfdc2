"""No kind of work waits behind another's slots: search, Ask AI, extraction and bulk each have their own queue and
worker slots (kit/jobs.py LANES)."""

import asyncio
import base64
import math
import threading
import uuid
from dataclasses import replace

from collab.judgments.tasks import ActiveModel, active_embedder
from collab.kit.jobs import AWAITED_RESULT_S, BULK_QUEUE, LANES, lane, run_sync
from collab.testing import fake_models
from support.factories import batches, delayed_batch_and_failed_delivery, judged, release, wait_for, with_own_key
from support.helpers import enable_activities, new_tenant, post, result, settle_jobs

CHECKS = b"Category,Check\nClaims,Every price claim states whether tax is included\n"
ASK = {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey"}


def searcher_with_judgments(client, live):
    t = new_tenant(client)
    enable_activities(client, t)
    result(
        post(
            client, "/v2/activities/add", {
                "organizationId": "org1", "documentId": "doc1", "activities": [
                    judged("price", "The discount claim needs the original price shown next to the sale price."),
                    judged("alt", "Images are missing alternative text for screen readers.")
                ]
            }, t.headers))
    settle_jobs(live, t)
    return t


def search_finds_price(client, t) -> None:
    response = post(client, "/v2/memory/search", {"query": "show the previous cost beside the reduced price"},
                    t.headers)
    assert response.status_code == 200, response.text
    assert "price" in [r["recordId"] for r in response.json()["result"]["results"]]


def hold_extraction_slots(client, llm, live) -> list[threading.Thread]:
    """Fill every extraction slot with an extraction hanging on its model call (a workspace each)."""
    slots = live.settings.worker_extraction_max_jobs
    llm.script("openai", *[{"hang": True}] * slots)
    runners = []
    for _ in range(slots):
        t = with_own_key(client)
        data = {"fileBase64": base64.b64encode(CHECKS).decode(), "mimeType": "text/csv"}
        runner = threading.Thread(target=lambda t=t, data=data: post(client, "/v2/agents/extract", data, t.headers))
        runner.start()
        runners.append(runner)
    wait_for(lambda: len(llm.of("openai")) >= slots, "every extraction slot to hold a slow extraction")
    return runners


def test_functions_are_routed_to_their_lane():
    assert {name: lane.queue for name, lane in LANES.items()}["bulk"] == BULK_QUEUE  # older queued jobs still served
    assert len({lane.queue for lane in LANES.values()}) == len(LANES)
    for function in ("search_judgments", "embed_query", "ping"):
        assert lane(function).name == "search"
    assert lane("ask_ai").name == "ai"
    assert lane("extract_agents").name == "extraction"
    for function in ("derive_judgments", "deliver_webhook", "delete_user_data", "migrate_document", "echo"):
        assert lane(function).name == "bulk"


def test_each_lane_runs_in_the_worker(live):
    assert sorted(w.lane.name for w in live.worker.workers) == sorted(LANES)
    assert live.worker["search"].max_jobs == live.settings.worker_search_max_jobs
    assert live.worker["ai"].max_jobs == live.settings.worker_ai_max_jobs
    assert live.worker["extraction"].max_jobs == live.settings.worker_extraction_max_jobs
    assert live.worker["bulk"].max_jobs == live.settings.worker_max_jobs


def test_search_lane_answers_awaited_jobs_and_keeps_results_briefly(live):
    redis = live.svc.redis
    assert live.run(run_sync(redis, "ping", timeout_s=10, a=1)) == {"a": 1}

    async def ttls():
        keys = [k async for k in redis.scan_iter(match="arq:result:sync_*")]
        return [await redis.pttl(k) for k in keys]

    # The caller gets the result from the worker's done push, before arq stores its own copy a moment later.
    kept: list = []
    wait_for(lambda: kept.extend(live.run(ttls())) or kept, "the awaited job's result to be stored")
    assert all(0 < ttl <= AWAITED_RESULT_S * 1000 for ttl in kept)


def test_a_lane_claims_only_due_jobs_that_run_nowhere_else(live):
    """The lane's one-script claim keeps arq's rules: a job in progress elsewhere, one not yet due, and one no
    longer queued are not started; a due one is started once (marked in progress for the worker's timeout)."""
    from arq.constants import in_progress_key_prefix
    from arq.utils import timestamp_ms

    from collab.kit.jobs import enqueue

    worker = live.worker["search"]
    ids = {name: "test-" + uuid.uuid4().hex for name in ("running", "later", "gone", "due")}

    async def scenario():
        redis, now = live.svc.redis, timestamp_ms()
        queue = worker.queue_name
        await redis.psetex(in_progress_key_prefix + ids["running"], 60_000, b"1")
        await redis.zadd(queue, {ids["running"]: now, ids["later"]: now + 60_000})
        counter = worker.job_counter
        await worker.start_jobs([ids[name].encode() for name in ("running", "later", "gone")])
        untouched = (worker.job_counter == counter, [ids[n] in worker.tasks
                                                     for n in ("running", "later", "gone")], await
                     redis.exists(in_progress_key_prefix + ids["later"]))
        await redis.zrem(queue, ids["running"], ids["later"])
        await redis.delete(in_progress_key_prefix + ids["running"])
        # A due job: queued without waking the lane, then claimed here, so this call is the one that starts it.
        await enqueue(redis, "ping", job_id=ids["due"], queue=queue, expires_ms=60_000, x=1)
        await worker.start_jobs([ids["due"].encode()])
        started = ids["due"] in worker.tasks or await redis.exists("arq:result:" + ids["due"])
        lease = await redis.pttl(in_progress_key_prefix + ids["due"])
        return untouched, started, lease

    (same_count, started_ones, later_marked), started, lease = live.run(scenario())
    assert same_count and started_ones == [False, False, False] and not later_marked
    assert started
    assert lease == -2 or 0 < lease <= worker.in_progress_timeout_s * 1000  # gone again once it finished


def test_search_answers_while_every_ai_slot_is_held_by_other_workspaces(client, live, llm, tune):
    """Ask AI calls of other workspaces that hang hold every Ask AI slot; a search still answers."""
    llm.responder = fake_models.answer
    searcher = searcher_with_judgments(client, live)
    tune(ask_ai_timeout_s=60, llm_call_timeout_s=60)
    slots = live.settings.worker_ai_max_jobs
    per_workspace = live.settings.ai_max_concurrency
    llm.script("openai", *[{"hang": True}] * slots)
    answers: list = []
    askers = []
    for w in range(math.ceil(slots / per_workspace)):
        t = with_own_key(client)
        for _ in range(min(per_workspace, slots - w * per_workspace)):
            asker = threading.Thread(
                target=lambda t=t: answers.append(post(client, "/v2/rewriter/ask-ai", ASK, t.headers)))
            asker.start()
            askers.append(asker)
    try:
        wait_for(lambda: len(llm.of("openai")) >= slots, "every Ask AI slot to hold a hanging call")
        search_finds_price(client, searcher)
    finally:
        release(llm)
        for asker in askers:
            asker.join(60)
    assert [r.status_code for r in answers] == [200] * slots  # the Ask AI calls were only slow, never dropped


def test_bulk_crons_run_while_every_extraction_slot_is_held(client, live, llm, receiver, clock):
    """Hanging extractions hold every extraction slot; a delayed notification and a webhook retry still arrive."""
    llm.responder = fake_models.answer
    b, first = delayed_batch_and_failed_delivery(client, live, receiver)
    runners = hold_extraction_slots(client, llm, live)
    try:
        clock["now"] += 20  # the delayed notification falls due; the webhook's retry (5 s ± 10 %) too
        # Nothing here runs the crons: the worker's bulk lane does, on its own ticks.
        wait_for(lambda: batches(client, b) == [["b1"]], "the delayed notification (flush cron)")

        def retried():
            return [h.headers["webhook-id"] for h in receiver.to("/b")].count(first.headers["webhook-id"]) == 2

        wait_for(retried, "the webhook retry (webhook sweep cron)")
    finally:
        release(llm)
        for runner in runners:
            runner.join(120)


def test_search_answers_while_the_bulk_and_extraction_lanes_are_full(client, live, llm):
    """Every extraction slot runs a slow extraction and 1,000 judgments wait to be embedded; a search still answers."""
    llm.responder = fake_models.answer
    searcher = searcher_with_judgments(client, live)
    runners = hold_extraction_slots(client, llm, live)
    try:
        bulk = new_tenant(client)
        enable_activities(client, bulk)
        for batch in range(2):  # 500 activities a request at most
            activities = [
                judged(f"bulk{batch}-{i}", f"Bulk reasoning {batch}-{i} about claims and prices.") for i in range(500)
            ]
            result(
                post(client, "/v2/activities/add",
                     {"organizationId": "org1", "documentId": "doc1", "activities": activities}, bulk.headers))
        search_finds_price(client, searcher)
    finally:
        release(llm)
        for runner in runners:
            runner.join(120)
    settle_jobs(live, bulk)  # the bulk work was only waiting, never dropped


def test_the_embedder_is_loaded_once_per_process_and_survives_job_context_copies(live, db):
    held = ActiveModel()
    base = {"svc": live.svc, "active_model": held}

    async def go():
        # Two lanes' jobs at once, each with its own copy of the worker's ctx (as arq passes them).
        first, second = await asyncio.gather(active_embedder(dict(base)), active_embedder(dict(base)))
        return first, second

    first, second = live.run(go(), timeout=120)
    assert first is second is held.embedder
    assert db.execute("select count(*) as n from embedding_models where active").fetchone()["n"] == 1


def test_a_wake_token_that_came_when_every_slot_filled_is_handed_on(live):
    from collab.kit.jobs import WAKE_KEY, Lane
    from collab.kit.jobs.probes import echo
    from collab.worker import LaneWorker

    redis = live.svc.redis

    async def go():
        queue = f"collab:test:{uuid.uuid4().hex}"
        full = LaneWorker(functions=[echo], queue_name=queue, redis_pool=redis, lane=Lane("t", queue), max_jobs=1,
                          poll_delay=0.01, handle_signals=False)
        popped = asyncio.get_running_loop().create_future()
        popped.set_result((WAKE_KEY + queue, b"1"))
        full._wake, full.job_counter = popped, 1  # the token arrived, but the only slot filled meanwhile
        await full._idle()
        handed_on = await redis.llen(WAKE_KEY + queue)
        await redis.delete(WAKE_KEY + queue)
        return handed_on

    assert live.run(go()) == 1  # another worker of the lane gets it


def test_a_slot_that_frees_brings_a_poll_only_where_every_slot_was_taken(live):
    # A worker with room takes wake-ups, so announced jobs reach it; one that was full did not, so it must look.
    from collab.kit.jobs import Lane
    from collab.kit.jobs.probes import echo
    from collab.worker import LaneWorker

    queue = f"collab:test:{uuid.uuid4().hex}"

    async def go():
        worker = LaneWorker(functions=[echo], queue_name=queue, redis_pool=live.svc.redis, lane=Lane("t", queue),
                            max_jobs=2, poll_delay=3600, handle_signals=False)
        await worker.sem.acquire()  # one job runs
        worker.job_counter = 1
        worker._job_ended(None)
        with_room = worker._freed.is_set()
        await worker.sem.acquire()  # two jobs run: every slot taken
        await worker.sem.acquire()
        worker.job_counter = 2
        worker._job_ended(None)
        return with_room, worker._freed.is_set()

    assert live.run(go()) == (False, True)


def test_aborted_jobs_are_looked_up_a_few_times_a_second_not_on_every_poll(live):
    from collab.kit.jobs import Lane
    from collab.kit.jobs.probes import echo
    from collab.worker import ABORT_CHECK_S, LaneWorker

    looks = []

    queue = f"collab:test:{uuid.uuid4().hex}"

    async def go():
        worker = LaneWorker(functions=[echo], queue_name=queue, redis_pool=live.svc.redis, lane=Lane("t", queue),
                            max_jobs=2, poll_delay=3600, handle_signals=False, allow_abort_jobs=True)
        now = [1000.0]
        worker.clock = lambda: now[0]

        async def look():
            looks.append(worker.clock())

        worker._abort = look  # this worker's only: the session's own lanes poll in the same loop
        for step in (0.0, 0.01, 0.1, ABORT_CHECK_S, 0.01):
            now[0] += step
            await worker._poll()

    live.run(go())
    assert looks == [1000.0, 1000.0 + 0.01 + 0.1 + ABORT_CHECK_S]


def test_a_background_job_wakes_its_lane_instead_of_waiting_for_a_poll(live, db, monkeypatch):
    # An idle worker used to poll the bulk queue every 10 ms (~8% of a core); now the job's enqueue after commit
    # wakes it, and the poll (0.25 s by default) only finds retries and fires the crons.
    from collab.kit import jobs
    from collab.kit.jobs.probes import echo
    from collab.worker import LaneWorker

    queue = f"collab:test:{uuid.uuid4().hex}"
    lane = jobs.Lane("bulk", queue)  # a bulk queue only this test serves
    monkeypatch.setitem(jobs.JOBS, "echo_tracked", replace(jobs.load()["echo_tracked"], lane=lane))
    redis = live.svc.redis

    async def go():
        idle = LaneWorker(functions=[echo], queue_name=queue, redis_pool=redis, lane=lane, max_jobs=1, poll_delay=3600,
                          handle_signals=False)
        waiting = asyncio.ensure_future(idle._idle())
        async with jobs.transaction(live.svc.pool, redis) as tx:
            job_id = await tx.enqueue("echo_tracked", api_key_id=None, value=1)
        await asyncio.wait_for(waiting, timeout=30)  # an hour's poll otherwise
        queued = await redis.zcard(queue)
        await redis.delete(queue, jobs.WAKE_KEY + queue)
        return job_id, queued

    job_id, queued = live.run(go())
    db.execute("delete from jobs where id = %s", (job_id, ))  # nobody runs it: this queue is gone
    assert queued == 1  # woken with the job still queued: the next poll iteration takes it
