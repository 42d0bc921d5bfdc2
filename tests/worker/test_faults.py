"""Fault drills: workers killed mid-job, Redis stopped or frozen, Postgres crashed under load, providers that hang.

Every drill runs against servers of its own (faults_env.py): the session's Postgres and Redis are never
touched. Workers run in child processes, so a drill can `kill -9` one in the middle of a job and start
another; nothing waits on the clock except for events (a process exit, a lease running out, a row).
"""

import asyncio
import base64
import signal
import threading
import time

import httpx
import pytest

from collab.kit.db.pool import POOL_TIMEOUT_S, RECONNECT_TIMEOUT_S
from collab.kit.jobs import transaction
from collab.kit.redisclient import REDIS_TIMEOUT_S
from collab.testing import fake_models
from collab.users.deletion import TASKS
from collab.webhooks.delivery import LEASE_MARGIN_MS
from support.factories import ping, seed_document
from support.faults_env import FaultEnv, Load, Silent, tail, wait_for
from support.helpers import add_organization, error, new_tenant, post, result

TASK_NAMES = list(TASKS)
KILLED = -signal.SIGKILL
CSV = (b"Category,Check\n"
       b"Claims,Every price claim states whether tax is included\n"
       b"Privacy,Forms link to the privacy policy\n")
FILE = base64.b64encode(CSV).decode()
ASK = {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey"}
# "At once" and "no hang" are client timeouts: a call that hangs fails with httpx.ReadTimeout. Speed itself is
# measured in bench/, never asserted here.
AT_ONCE = 5.0


@pytest.fixture(scope="module")
def env(fake_providers):
    environment = FaultEnv({p: fake_providers.base_url(p) for p in ("openai", "anthropic", "gemini")})
    yield environment
    environment.close()


@pytest.fixture
def fake(fake_providers, model_client):
    fake_providers.reset()
    yield fake_providers
    fake_providers.reset()


@pytest.fixture
def client(env):
    with env.client() as c:
        yield c


# --- helpers ------------------------------------------------------------------------------------


def job_row(env, job_id):
    [row] = env.query("select status, attempts, error from jobs where id = %s", job_id)
    return row


def tenant_jobs(env, t):
    return env.query(
        "select id, function, status, attempts, enqueued_at from jobs where api_key_id = %s order by created_at",
        t.api_key)


def unfinished(env, t):
    """The tenant's jobs still queued or running."""
    return env.query("select id from jobs where api_key_id = %s and status in ('queued', 'running')", t.api_key)


def with_openai_key(client, t):
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-fault-key"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))


def with_webhooks(client, t, receiver, **fields):
    result(post(client, "/v2/workspace/advancedwebhookconfig/update", {"isEnabled": True}, t.headers))
    return result(
        post(client, "/v2/workspace/advancedwebhook/endpoints/create", {"url": receiver.url(), **fields}, t.headers))


def document_rows(env, t, doc):
    out = {}
    for table in ("documents", "grants", "notifications", "presence", "recordings", "crdt_editors"):
        column = {"documents": "id", "grants": "resource_id"}.get(table, "document_id")
        [row] = env.query(
            f"select count(*) as n from {table} where api_key_id = %s and organization_id = 'o1' and {column} = %s",
            t.api_key, doc)
        out[table] = row["n"]
    return out


def user_rows(env, t, user):
    sql = {
        "grants": "select count(*) as n from grants where api_key_id = %s and principal_id = %s",
        "notifications": "select count(*) as n from notifications where api_key_id = %s"
        " and (action_user->>'userId' = %s or notify_users_by_user_id ? %s)",
        "presence": "select count(*) as n from presence where api_key_id = %s and user_id = %s",
        "recordings": "select count(*) as n from recordings where api_key_id = %s and from_user->>'userId' = %s",
        "profile": "select count(*) as n from users where api_key_id = %s and id = %s"
    }
    out = {}
    for name, query in sql.items():
        params = (t.api_key, user, user) if name == "notifications" else (t.api_key, user)
        out[name] = env.query(query, *params)[0]["n"]
    return out


# --- (a) a worker killed in the middle of a job -----------------------------------------------------


def test_worker_killed_mid_user_data_deletion_finishes_each_task_once(env, client, tmp_path):
    t = new_tenant(client)
    seed_document(client, t, to="u3", notification_id="n-u1")
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u2"}]},
             t.headers))
    result(
        post(client, "/v2/presence/update", {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u2"}]},
             t.headers))
    ping(client, t, "u2", "u3", "n-u2")
    u1_before, u2_before = user_rows(env, t, "u1"), user_rows(env, t, "u2")
    assert all(u1_before.values())
    response = post(client, "/v2/users/data/delete", {"userIds": ["u1"]}, t.headers)
    assert response.status_code == 202, response.text
    job_id = response.json()["data"]["jobId"]

    killed, recovered = tmp_path / "killed.trace", tmp_path / "recovered.trace"
    assert (env.workers.run(env.settings, label="deletion-killed", kill_at="deletion_after_task_3",
                            trace=str(killed)) == KILLED)
    # Tasks 1-3 committed with their marks; task 4 ran its deletes, but they died uncommitted with the worker.
    assert env.query("select done from user_data_deletions where id = %s", job_id)[0]["done"] == TASK_NAMES[:3]
    assert job_row(env, job_id) == {"status": "running", "attempts": 1, "error": None}
    assert user_rows(env, t, "u1")["presence"] == 1
    assert (result(post(client, "/v2/users/data/delete/status", {"jobId": job_id},
                        t.headers))["tasksLeft"] == len(TASK_NAMES) - 3)

    env.wait_lease_over()
    env.workers.serve_until(env.settings, lambda: not unfinished(env, t), label="deletion-recovery",
                            trace=str(recovered))

    status = result(post(client, "/v2/users/data/delete/status", {"jobId": job_id}, t.headers))
    assert status["isDeleteCompleted"] is True and status["tasksLeft"] == 0
    assert env.query("select done from user_data_deletions where id = %s", job_id)[0]["done"] == TASK_NAMES
    assert job_row(env, job_id) == {"status": "succeeded", "attempts": 2, "error": None}
    # Which process ran which task: 1-4 in the killed one (4 uncommitted), 4 to the last after; 1-3 never again.
    assert killed.read_text().split() == [f"deletion:{n}" for n in TASK_NAMES[:4]]
    assert recovered.read_text().split() == [f"deletion:{n}" for n in TASK_NAMES[3:]]
    assert user_rows(env, t, "u1") == dict.fromkeys(u1_before, 0)
    assert user_rows(env, t, "u2") == u2_before


def test_worker_killed_mid_migration_copy_moves_everything_once(env, client, receiver):
    t = new_tenant(client)
    seed_document(client, t, to="u3", notification_id="n-u1")
    with_webhooks(client, t, receiver, filterTypes=["document.migrate"])
    before = document_rows(env, t, "d1")
    assert all(before.values())
    started = result(
        post(client, "/v2/organizations/documents/migrate",
             {"organizationId": "o1", "documentId": "d1", "newDocumentId": "d1-new"}, t.headers))
    migration_id = started["migrationId"]

    def status():
        return result(
            post(client, "/v2/organizations/documents/migrate/status",
                 {"organizationId": "o1", "migrationId": migration_id}, t.headers))

    assert env.workers.run(env.settings, label="migration-killed", kill_at="migration_mid_copy") == KILLED
    # The copy died half done inside its transaction: nothing of it is visible.
    assert status()["status"] == "in_progress"
    assert document_rows(env, t, "d1") == before
    assert document_rows(env, t, "d1-new") == dict.fromkeys(before, 0)

    env.wait_lease_over()
    env.workers.serve_until(env.settings, lambda: not unfinished(env, t) and receiver.requests,
                            label="migration-recovery")

    assert status() == {
        "migrationId": migration_id, "status": "completed", "documentId": "d1", "newDocumentId": "d1-new"
    }
    assert document_rows(env, t, "d1") == dict.fromkeys(before, 0)
    assert document_rows(env, t, "d1-new") == before
    [job] = [j for j in tenant_jobs(env, t) if j["function"] == "migrate_document"]
    assert (job["status"], job["attempts"]) == ("succeeded", 2)
    # One document.migrate event, delivered once.
    [message] = env.query("select id, event_type from webhook_messages where api_key_id = %s", t.api_key)
    assert message["event_type"] == "document.migrate"
    [request] = receiver.requests
    assert request.headers["webhook-id"] == message["id"]


def test_worker_killed_after_webhook_sent_resends_the_same_message_once(env, client, receiver):
    t = new_tenant(client)
    with_webhooks(client, t, receiver)
    add_organization(client, t, "o1", "d1")
    ping(client, t, "u1", "u2", "n1")

    assert env.workers.run(env.settings, label="webhook-killed", kill_at="webhook_after_send") == KILLED
    # The receiver has it; our record does not: the worker died before writing the attempt down.
    assert len(receiver.requests) == 1
    [delivery] = env.query("select status, attempts, lease_until from webhook_deliveries where api_key_id = %s",
                           t.api_key)
    assert (delivery["status"], delivery["attempts"]) == ("sending", 0)
    assert env.query("select * from webhook_attempts where api_key_id = %s", t.api_key) == []

    env.wait_lease_over()
    # The send's own lease (timeout + margin) has to pass before it counts as lost: the worker's clock is moved
    # past it rather than waited for.
    lease_s = (delivery["lease_until"] - int(time.time() * 1000)) / 1000 + 1
    assert lease_s * 1000 <= env.app.settings.webhooks_timeout_s * 1000 + LEASE_MARGIN_MS + 1000
    delivered = "select 1 from webhook_deliveries where api_key_id = %s and status in ('succeeded', 'failed')"
    env.workers.serve_until(env.settings, lambda: env.query(delivered, t.api_key) and not unfinished(env, t),
                            label="webhook-recovery", clock_offset_s=lease_s)

    # At least once, with a stable id: the receiver saw the same message twice; we recorded one attempt.
    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] and first.body == second.body
    [delivery] = env.query("select status, attempts from webhook_deliveries where api_key_id = %s", t.api_key)
    assert delivery == {"status": "succeeded", "attempts": 1}
    [attempt] = env.query("select attempt, status_code from webhook_attempts where api_key_id = %s", t.api_key)
    assert attempt == {"attempt": 1, "status_code": 200}
    assert {j["status"] for j in tenant_jobs(env, t)} == {"succeeded"}
    [message] = result(post(client, "/v2/workspace/advancedwebhook/messages/get", {}, t.headers))["messages"]
    assert len(message["attempts"]) == 1 and message["attempts"][0]["statusCode"] == 200


def test_worker_killed_mid_extraction_answers_the_waiting_call_once(env, client, fake):
    fake.responder = fake_models.answer
    t = new_tenant(client)
    with_openai_key(client, t)
    worker = env.workers.start(env.settings, label="extraction-killed", kill_at="extraction_after_model")
    answer = {}

    def call():
        answer["response"] = post(client, "/v2/agents/extract",
                                  {"fileBase64": FILE, "mimeType": "text/csv", "fileName": "c.csv"}, t.headers)

    caller = threading.Thread(target=call)
    caller.start()
    assert env.workers.join(worker) == KILLED
    assert len(fake.of("openai")) == 1  # the model answered; the answer died with the worker
    [source] = env.query("select id, status from knowledge_sources where api_key_id = %s", t.api_key)
    assert source["status"] == "processing" and caller.is_alive()  # the API call is still waiting

    env.wait_lease_over()
    env.workers.serve_until(env.settings, lambda: not caller.is_alive(), label="extraction-recovery")
    extracted = result(answer["response"])["extractionResult"]
    assert extracted["agents"] and extracted["memory"] == {"sourceId": source["id"]}
    [source] = env.query("select id, status, result from knowledge_sources where api_key_id = %s", t.api_key)
    assert source["status"] == "ready" and source["result"] == extracted
    assert len(fake.of("openai")) == 2  # asked again on the second try: nothing of the first was kept


def test_worker_stopped_mid_job_closes_cleanly(env, client, fake):
    # A graceful stop (SIGTERM) while a job waits on its provider: arq cancels the job; the process still runs
    # its whole close (heartbeat gone at once, pools closed) and exits 0, without a traceback.
    t = new_tenant(client)
    with_openai_key(client, t)
    fake.script("openai", {"hang": True})
    before = set(env.live_workers())
    worker = env.workers.start(env.settings, label="stop-mid-job")

    def ask():
        try:  # its answer is not this drill's concern (the API waits for it up to its deadline)
            post(client, "/v2/rewriter/ask-ai", ASK, t.headers, timeout=5)
        except httpx.HTTPError:
            pass

    call = threading.Thread(target=ask)
    call.start()
    try:
        wait_for(lambda: fake.of("openai"), timeout=30, what="the Ask AI job to call its provider")
        assert set(env.live_workers()) - before
    finally:
        env.workers.stop(worker)
        call.join(60)
    assert worker.exitcode == 0, tail(worker.log)
    assert "Traceback" not in worker.log.read_text(), tail(worker.log)
    assert set(env.live_workers()) <= before  # said goodbye: its jobs need not wait for its lease to end


def test_job_that_kills_its_worker_every_time_ends_failed_after_its_tries(env, tmp_path):

    async def enqueue():
        async with transaction(env.app.svc.pool, env.app.svc.redis) as tx:
            return await tx.enqueue("echo_tracked", api_key_id=None, value=1)

    job_id = env.app.run(enqueue())
    trace = tmp_path / "poison.trace"
    for attempt in (1, 2, 3):
        assert (env.workers.run(env.settings, label=f"poison-{attempt}", kill_at="echo_tracked",
                                trace=str(trace)) == KILLED)
        assert job_row(env, job_id) == {"status": "running", "attempts": attempt, "error": None}
        env.wait_lease_over()
    # The next worker gets it once more (arq allows one try past the job's own 3) and records the give-up.
    env.workers.serve_until(env.settings, lambda: job_row(env, job_id)["status"] != "running", label="poison-end",
                            kill_at="echo_tracked", trace=str(trace))
    row = job_row(env, job_id)
    assert row["status"] == "failed" and row["attempts"] == 4 and row["error"].startswith("Gave up after 3 tries")
    assert trace.read_text().split() == ["echo_tracked"] * 3  # it never ran a fourth time


def test_running_job_that_redis_lost_is_sent_again_by_the_sweep(env, tmp_path):

    async def enqueue():
        async with transaction(env.app.svc.pool, env.app.svc.redis) as tx:
            return await tx.enqueue("echo_tracked", api_key_id=None, value=2)

    job_id = env.app.run(enqueue())
    assert env.workers.run(env.settings, label="lost-killed", kill_at="echo_tracked") == KILLED
    with env.redis_client() as r:
        r.flushall()  # Redis came back without its data (no persistence, a failover to an empty replica)
    assert job_row(env, job_id) == {"status": "running", "attempts": 1, "error": None}
    # Only Postgres still knows of the job: the sweep finds it running with nothing in Redis, and sends it again.
    env.workers.serve_until(env.settings | {"job_sweep_after_s": 0},
                            lambda: job_row(env, job_id)["status"] != "running", label="lost-sweep")
    [row] = env.query("select status, attempts, result from jobs where id = %s", job_id)
    assert row == {"status": "succeeded", "attempts": 2, "result": {"value": 2}}


# --- (b) Redis stopped, then frozen ----------------------------------------------------------------


def test_redis_down_queue_calls_unavailable_crud_works_outbox_catches_up(env, client, fake, receiver):
    t = new_tenant(client)
    with_openai_key(client, t)
    with_webhooks(client, t, receiver, filterTypes=["notification.add"])
    add_organization(client, t, "o1", "d1", "d2")
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "documentId": "d1", "users": [{"userId": "u1"}]},
             t.headers))
    env.stop_redis()
    try:
        # Calls that wait on a worker answer UNAVAILABLE at once.
        for path, data in [("/v2/rewriter/ask-ai", ASK),
                           ("/v2/agents/extract", {"fileBase64": FILE, "mimeType": "text/csv"}),
                           ("/v2/memory/search", {"query": "price claims"})]:
            error(post(client, path, data, t.headers, timeout=AT_ONCE), "UNAVAILABLE")
        # CRUD works (the per-key rate limit fails open), each call at once.
        result(
            post(client, "/v2/organizations/documents/add",
                 {"organizationId": "o1", "documents": [{"documentId": "d3"}]}, t.headers, timeout=AT_ONCE))
        docs = result(post(client, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers))
        assert sorted(d["documentId"] for d in docs) == ["d1", "d2", "d3"]
        # Work that goes through the outbox is accepted, and waits in Postgres.
        migration = result(
            post(client, "/v2/organizations/documents/migrate",
                 {"organizationId": "o1", "documentId": "d2", "newDocumentId": "d2-new"}, t.headers))
        deletion = post(client, "/v2/users/data/delete", {"userIds": ["u1"]}, t.headers)
        assert deletion.status_code == 202, deletion.text
        ping(client, t, "u9", "u2", "n-outage")
        jobs = tenant_jobs(env, t)
        assert sorted(j["function"] for j in jobs) == ["delete_user_data", "deliver_webhook", "migrate_document"]
        assert all(j["status"] == "queued" and j["enqueued_at"] is None for j in jobs)
        assert fake.requests == [] and receiver.requests == []
    finally:
        env.start_redis()

    # Back: the worker's sweep sends what waited in Postgres, and calls that wait on a worker work again.
    answers = []

    def done():
        if not answers:
            migrated = result(
                post(client, "/v2/organizations/documents/migrate/status",
                     {"organizationId": "o1", "migrationId": migration["migrationId"]}, t.headers))
            deleted = result(
                post(client, "/v2/users/data/delete/status", {"jobId": deletion.json()["data"]["jobId"]}, t.headers))
            if not (migrated["status"] == "completed" and deleted["isDeleteCompleted"] and receiver.requests):
                return False
            # The app's Redis client stops trying for a second after a failure; readiness says when it is back.
            if client.get("/readyz").status_code != 200:
                return False
            answers.append(post(client, "/v2/rewriter/ask-ai", ASK, t.headers))
        return True

    env.workers.serve_until(env.settings | {"job_sweep_after_s": 0}, done, label="after-redis")
    [asked] = answers
    assert asked.status_code == 200 and asked.json()["result"]["success"] is True, asked.text
    assert {j["status"] for j in tenant_jobs(env, t)} == {"succeeded"}
    assert len(receiver.requests) == 1


def test_frozen_redis_does_not_make_every_request_wait(env, client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")

    def read(c, thread, n):
        return post(c, "/v2/organizations/documents/get", {"organizationId": "o1"}, t.headers)

    env.freeze_redis()  # it accepts connections and never answers: the worst case for a client
    try:
        # A request that waits on the frozen Redis beyond about one Redis timeout ends as a client timeout.
        load = Load(env.url, 4, read, timeout=REDIS_TIMEOUT_S + 3).start()
        wait_for(lambda: min(load.count(lambda o: True)) >= 5, timeout=60, what="reads while Redis is frozen")
        outcomes = load.finish()
        error(post(client, "/v2/rewriter/ask-ai", ASK, t.headers, timeout=REDIS_TIMEOUT_S + 3), "UNAVAILABLE")
    finally:
        env.thaw_redis()
    # Reads succeed (the rate limit fails open). One request in a cooldown waits out Redis' timeout; the
    # others fail fast on Redis instead of queueing behind it, so no request waits more than about one timeout.
    assert all(o["status"] == 200 for o in outcomes), [o for o in outcomes if o["status"] != 200][:3]
    result(read(client, 0, 0))


# --- (c) Postgres crashed and restarted under load ----------------------------------------------------


def test_postgres_crash_under_load_fails_cleanly_and_loses_no_acknowledged_write(env, client):
    t = new_tenant(client)

    def write(c, thread, n):
        return post(c, "/v2/organizations/add", {"organizations": [{"organizationId": f"w{thread}-{n}"}]}, t.headers)

    def ok(o):
        return o["status"] == 200

    # Nothing may hang: a request waits for a connection at most the pool timeout, else it ends as a client
    # timeout (status None), which the status check below refuses.
    load = Load(env.url, 4, write, timeout=POOL_TIMEOUT_S + 5).start()
    crashed = False
    try:
        wait_for(lambda: min(load.count(ok)) >= 3, timeout=30, what="writes before the crash")
        env.crash_postgres()
        crashed = True
        down = time.monotonic()
        # Two rounds of failures (each request waits the pool timeout): the outage outlasts the pool's own
        # reconnection attempts (RECONNECT_TIMEOUT_S), the case where it must reconnect on demand.
        wait_for(lambda: min(load.count(lambda o: not ok(o), since=down)) >= 2, timeout=60,
                 what="requests failing during the outage")
        assert time.monotonic() - down > RECONNECT_TIMEOUT_S, "scenario: the outage must outlast the reconnect window"
        env.start_postgres()
        crashed = False
        up = time.monotonic()
        wait_for(lambda: min(load.count(ok, since=up)) >= 5, timeout=60, what="writes to succeed again")
    finally:
        outcomes = load.finish()
        if crashed:
            env.start_postgres()

    assert {o["status"] for o in outcomes} <= {200, 503}, [o for o in outcomes if o["status"] not in (200, 503)][:3]
    failures = [o for o in outcomes if o["status"] == 503]
    assert failures
    for o in failures:
        assert o["body"]["error"]["status"] == "UNAVAILABLE" and o["headers"]["retry-after"] == "1", o
    # Every write acknowledged with success is there after the crash; the pool reconnected by itself.
    acknowledged = {f"w{i}-{o['n']}" for i, thread in enumerate(load.outcomes) for o in thread if ok(o)}
    stored = {r["id"] for r in env.query("select id from organizations where api_key_id = %s", t.api_key)}
    assert acknowledged <= stored
    for thread in load.outcomes:
        assert all(ok(o) for o in thread[-5:])


def test_postgres_restart_between_requests_costs_no_request(env, client):
    """Pooled connections the restart closed are noticed at checkout (no round trip) and replaced."""
    t = new_tenant(client)
    load = Load(env.url, 4, lambda c, thread, n: post(c, "/v2/organizations/get", {}, t.headers)).start()
    wait_for(lambda: min(load.count(lambda o: o["status"] == 200)) >= 3, timeout=30, what="the pool to fill")
    load.finish()
    assert env.app.run(_pool_size(env.app.svc.pool)) >= 2
    env.crash_postgres()
    env.start_postgres()
    with env.client() as fresh:
        for _ in range(8):
            result(post(fresh, "/v2/organizations/get", {}, t.headers))


async def _pool_size(pool):
    return pool.get_stats()["pool_size"]


# --- (d) providers and receivers that never answer -----------------------------------------------------


def test_ask_ai_provider_that_hangs_ends_at_the_api_deadline_and_frees_the_worker(env, client, fake):
    t = new_tenant(client)
    with_openai_key(client, t)
    fake.script("openai", {"hang": True})  # the first call never answers; the next one does
    settings = env.app.svc.settings
    budget, settings.ask_ai_timeout_s = settings.ask_ai_timeout_s, 2.0
    worker = env.workers.start(env.settings, label="ask-ai-hang")
    try:
        error(post(client, "/v2/rewriter/ask-ai", ASK, t.headers, timeout=2.0 + 5), "DEADLINE_EXCEEDED")

        async def aborted():
            return [
                r for r in await env.app.svc.redis.all_job_results()
                if r.function == "ask_ai" and isinstance(r.result, asyncio.CancelledError)
            ]

        # The job was aborted on the worker (not left waiting on the provider), and the worker serves the next call.
        wait_for(lambda: env.app.run(aborted()), timeout=10, what="the Ask AI job to be aborted")
        response = post(client, "/v2/rewriter/ask-ai", ASK, t.headers, timeout=AT_ONCE)
        assert response.status_code == 200 and response.json()["result"]["success"] is True, response.text
    finally:
        settings.ask_ai_timeout_s = budget
        env.workers.stop(worker)


def test_extraction_provider_that_never_answers_ends_at_its_budget(env, client, fake):
    t = new_tenant(client)
    with_openai_key(client, t)
    fake.script("openai", *[{"hang": True}] * 20)
    settings = env.app.svc.settings
    budget, settings.extraction_timeout_s = settings.extraction_timeout_s, 3.0
    worker = env.workers.start(env.settings | {"extraction_timeout_s": 3.0}, label="extract-hang")
    try:
        body = {"fileBase64": FILE, "mimeType": "text/csv"}
        error(post(client, "/v2/agents/extract", body, t.headers, timeout=3.0 + 5), "DEADLINE_EXCEEDED")
    finally:
        settings.extraction_timeout_s = budget
        env.workers.stop(worker)
    [source] = env.query("select status, error from knowledge_sources where api_key_id = %s", t.api_key)
    assert source["status"] == "failed" and source["error"].startswith("DEADLINE_EXCEEDED")


def test_webhook_receiver_that_never_answers_costs_one_timed_out_attempt(env, client):
    silent = Silent().start()
    try:
        t = new_tenant(client)
        with_webhooks(client, t, silent)
        add_organization(client, t, "o1", "d1")
        ping(client, t, "u1", "u2", "n1")
        attempted = "select * from webhook_attempts where api_key_id = %s"
        env.workers.serve_until(env.settings | {"webhooks_timeout_s": 1.0},
                                lambda: env.query(attempted, t.api_key) and not unfinished(env, t),
                                label="webhook-silent")
    finally:
        silent.stop()
    assert silent.held  # it was reached
    [attempt] = env.query(attempted, t.api_key)
    # Cut by its own timeout (the error says so), not left to hang: how long it took is the bench's business.
    assert attempt["status_code"] is None and attempt["error"].startswith("Timed out")
    # Recorded like any failure: the next attempt is scheduled, the job itself ended.
    [delivery] = env.query("select status, attempts, due_at from webhook_deliveries where api_key_id = %s", t.api_key)
    assert (delivery["status"], delivery["attempts"]) == ("pending", 1) and delivery["due_at"] > attempt["at"]
    assert {j["status"] for j in tenant_jobs(env, t)} == {"succeeded"}
