"""Faults across machines (issue #36 item 3): nodes in network namespaces, real TCP between real addresses.

One cluster per module (cluster.py): pg1 + pg2 (primary, synchronous standby), r1-r3 (Redis master, two replicas,
a Sentinel on each), lb (HAProxy, the shipped haproxy.cfg), a1 + a2 (`collab api`), w1 + w2 (`collab worker`). The
test driver and the fake model providers are in the root namespace. Every test starts from a healthy cluster
(`healthy`) and puts back what it broke; nothing waits on the clock but the faults themselves (a freeze's length).
"""

import inspect
import signal
import statistics
import time
import uuid
from collections import Counter

import arq
import pytest

from cluster.cluster import DRAIN_S, LEASE_S, REPORT, collab_command
from cluster.load import acknowledged, answered, not_ok, ok, org_writes, unexpected
from cluster.nodes import Watch
from collab.kit.db.migrate import available
from collab.kit.db.pool import POOL_TIMEOUT_S
from collab.users.deletion import TASKS
from support.faults_env import Load, wait_for
from support.helpers import add_organization, new_tenant, post, result
from support.js_clients import Clients, YjsClient

pytestmark = pytest.mark.usefixtures("healthy")
FEW_S = 10  # "503 for a few seconds": awaited jobs answer again within this long of Sentinel naming a new master

TASK_NAMES = list(TASKS)
FREEZE_S = 30.0  # the freeze
ASK = {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey"}
CONVERGE_S = 30.0  # a client cut from its node reconnects (backoff <= 300 ms) and resyncs well within this

# --- helpers ---------------------------------------------------------------------------------------------------


class Room:
    """One text editor of a fresh tenant's document, set up through the load balancer."""

    def __init__(self, cluster, data: str = ""):
        self.cluster = cluster
        self.org, self.doc, self.editor = "org-c", f"doc-{uuid.uuid4().hex[:6]}", "editor-1"
        with cluster.http() as http:
            self.tenant = new_tenant(http)
            add_organization(http, self.tenant, self.org, self.doc)
            body = {"organizationId": self.org, "documentId": self.doc, "editorId": self.editor, "type": "text"}
            result(post(http, "/v2/crdt/add", {**body, "data": data}, self.tenant.headers))

    def join(self, clients: Clients, url: str, user: str) -> YjsClient:
        """A synced client of `user` connected to `url` (the load balancer, or one node)."""
        resource = {"type": "document", "id": self.doc, "organizationId": self.org, "accessRole": "editor"}
        with self.cluster.http() as http:
            token = result(
                post(http, "/v2/auth/generate_token", {"userId": user, "permissions": {"resources": [resource]}},
                     self.tenant.headers))["token"]
        return clients.open(url, organization=self.org, document=self.doc, editor=self.editor, token=token).synced()

    def stored(self) -> str:
        """The editor's content as crdt/get reads it (through the load balancer)."""
        with self.cluster.http() as http:
            body = {"organizationId": self.org, "documentId": self.doc, "editorId": self.editor}
            return result(post(http, "/v2/crdt/get", body, self.tenant.headers))[0]["data"]


def edit(members: list[YjsClient], phase: str) -> list[str]:
    """Each client appends a marker of its own; the markers."""
    markers = []
    for i, member in enumerate(members):
        marker = f"[{phase}{i}]"
        member.insert("end", marker)
        markers.append(marker)
    return markers


def converge(room: Room, members: list[YjsClient], markers: list[str], timeout: float = CONVERGE_S) -> str:
    """Every client holds the same text, with every marker exactly once, and crdt/get reads that text."""

    def same():
        texts = {m.text() for m in members}
        if len(texts) != 1:
            return None
        [text] = texts
        return text if all(marker in text for marker in markers) and room.stored() == text else None

    try:
        text = wait_for(same, timeout=timeout, what="the clients and crdt/get to converge", every=0.2)
    except AssertionError as exc:
        states = [{k: m.state()[k] for k in ("connected", "connects", "content")} for m in members]
        raise AssertionError(f"{exc}: clients {states}, crdt/get {room.stored()!r}") from None
    assert all(text.count(marker) == 1 for marker in markers), text  # nothing applied twice
    return text


def join_on(cluster, room: Room, clients: Clients, server: str, user: str) -> YjsClient:
    """A client through the load balancer, placed on `server` (api1 or api2): the other server drains for the moment
    of its connect (takes no new socket, keeps its own: maintenance would cut them, on-marked-down)."""
    other = "api2" if server == "api1" else "api1"
    cluster.lb.command(f"set server realtime/{other} state drain")
    try:
        return room.join(clients, cluster.lb.url, user)
    finally:
        cluster.lb.command(f"set server realtime/{other} state ready")
        cluster.lb.wait_status(other, "UP", backend="realtime")


def spread(cluster, room: Room, clients: Clients, count: int = 4) -> list[YjsClient]:
    """`count` clients through the load balancer, half of them on each API node."""
    return [join_on(cluster, room, clients, ("api1", "api2")[i % 2], f"user-{i}") for i in range(count)]


def placed(failed: list[dict], zero: float, watch: Watch) -> str:
    """When the failed requests ended and what HAProxy did meanwhile, in seconds after the fault."""
    return (f"they ended at {[round(o['ended'] - zero, 2) for o in failed[:6]]} s after the fault; HAProxy's "
            f"servers: {watch.describe(zero)}")


def exited(cluster) -> str:
    """Which collab processes ended by themselves, with the last line of their log."""
    gone = [p for p in cluster.collab() if not p.process.alive()]
    return "; ".join(f"{p.kind} on {p.node.name} exited ({p.process.popen.returncode}), its log ends: "
                     f"{p.process.tail(1)[:300]}" for p in gone)


def moved(members: list[YjsClient]) -> bool:
    """The clients `spread` placed on api1 (every other one) connected again (to a2: a1 is out)."""
    return all(m.state()["connects"] >= 2 for m in members[0::2])


def stored_orgs(cluster, tenant) -> Counter:
    rows = cluster.query("select id from organizations where api_key_id = %s", tenant.api_key)
    return Counter(r["id"] for r in rows)


def with_openai_key(cluster, t):
    with cluster.http() as http:
        body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-cluster-key"}]}
        result(post(http, "/v2/workspace/apikeyconfig/update", body, t.headers))


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


# --- deletion jobs held on a row lock (F3, F4) ----------------------------------------------------------------------


def deletion_target(cluster):
    """A tenant whose user u1 has a grant and a presence row on o1/d1."""
    with cluster.http() as http:
        t = new_tenant(http)
        add_organization(http, t, "o1", "d1")
        where = {"organizationId": "o1", "documentId": "d1"}
        result(post(http, "/v2/users/add", {**where, "users": [{"userId": "u1"}]}, t.headers))
        result(post(http, "/v2/presence/update", {**where, "users": [{"userId": "u1"}]}, t.headers))
    assert cluster.query("select 1 from presence where api_key_id = %s and user_id = 'u1'", t.api_key)
    return t


def lock_waiters(cluster) -> list[str]:
    """Addresses of the clients whose statement waits on a lock now."""
    rows = cluster.query("select host(client_addr) as addr from pg_stat_activity"
                         " where wait_event_type = 'Lock' and backend_type = 'client backend'")
    return [r["addr"] for r in rows]


def deletion_state(cluster, t, job_id):
    [job] = cluster.query("select status, attempts, result from jobs where id = %s", job_id)
    [deletion] = cluster.query("select done from user_data_deletions where api_key_id = %s and id = %s", t.api_key,
                               job_id)
    return job, deletion["done"]


def trace_marks(cluster) -> dict:
    return {name: len(w.traced()) for name, w in cluster.workers.items()}


def traced_since(worker, marks, name: str, kind: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in worker.traced()[marks[name]:] if line.startswith(kind + " ")]


def start_held_deletion(cluster, t, lock):
    """Lock u1's presence row in `lock`'s open transaction, ask for u1's data deletion, and return (job id, the
    worker whose job waits on that row: tasks 1-3 committed, task 4 (presence) blocked)."""
    lock.execute("select 1 from presence where api_key_id = %s and user_id = 'u1' for update", (t.api_key, ))
    with cluster.http() as http:
        response = post(http, "/v2/users/data/delete", {"userIds": ["u1"]}, t.headers)
    assert response.status_code == 202, response.text
    job_id = response.json()["data"]["jobId"]
    workers = {w.node.ip: w for w in cluster.workers.values()}
    address = wait_for(lambda: next((a for a in lock_waiters(cluster) if a in workers), None), timeout=30,
                       what="a worker's deletion to wait on the locked presence row")
    job, done = deletion_state(cluster, t, job_id)
    assert done == TASK_NAMES[:3] and (job["status"], job["attempts"]) == ("running", 1), (job, done)
    return job_id, workers[address]


# --- F9: cold start ----------------------------------------------------------------------------------------------


def test_f9_cold_start_migrates_once_and_runs_each_cron_tick_once(cluster):
    # The module's cluster was a cold start: a1, a2, w1 and w2 started at once on an empty database.
    files = [path.name for _, path in available()]
    rows = cluster.query("select name from schema_migrations order by version")
    assert [r["name"] for r in rows] == files
    applied: Counter = Counter()
    for process in cluster.collab():
        for line in process.log_lines():
            if '"applied migration ' in line:
                applied[line.split('"applied migration ', 1)[1].split('"', 1)[0]] += 1
    assert applied == Counter(files), "each migration applied by exactly one of the four processes"

    # arq schedules every tick of a cron at the same fraction of its second (cron's `microsecond`); a start-up run
    # (run_at_startup: one per worker start, by design) is stamped with the moment its worker started instead.
    offset_ms = inspect.signature(arq.cron).parameters["microsecond"].default // 1000

    def scheduled() -> dict[str, list[tuple[str, int]]]:
        """Per worker, the scheduled cron ticks it ran, as (cron, second)."""
        ticks = {}
        for name, worker in cluster.workers.items():
            runs = [line.split(" ", 1)[1].rsplit(":", 1) for line in worker.traced() if line.startswith("cron ")]
            ticks[name] = [(cron, int(ms) // 1000) for cron, ms in runs if int(ms) % 1000 == offset_ms]
        return ticks

    def enough():
        ticks = scheduled()
        return ticks if sum(cron == "webhook_sweep" for t in ticks.values() for cron, _ in t) >= 10 else None

    # Both workers enqueue every tick (webhook_sweep each second, reap and flush each 5 s, ...): each tick must run
    # once, on one worker, whatever its id.
    ticks = wait_for(enough, timeout=60, what="ten scheduled webhook_sweep ticks", every=0.2)
    runs = Counter(tick for t in ticks.values() for tick in t)
    twice = [tick for tick, n in runs.items() if n > 1]
    assert not twice, f"cron ticks (cron, second) run more than once across the cluster: {twice[:5]}"
    split = {name: len(t) for name, t in ticks.items()}
    REPORT.append(f"F9 scheduled cron ticks run per worker since the cold start: {split}")


# --- measurement: cross-node fan-out --------------------------------------------------------------------------------


def test_fan_out_latency_across_nodes_against_one_node(cluster, clients):
    room = Room(cluster)

    def fan_out(a: YjsClient, b: YjsClient, label: str, rounds: int = 100) -> list[float]:
        took = []
        for i in range(rounds):
            marker = f"<{label}{i}>"
            started = time.perf_counter()
            a.insert("end", marker)
            b.call("wait_text", includes=marker)
            took.append((time.perf_counter() - started) * 1000)
        return took

    cross = fan_out(join_on(cluster, room, clients, "api1", "ana"), join_on(cluster, room, clients, "api2", "ben"), "x")
    same = fan_out(join_on(cluster, room, clients, "api1", "cy"), join_on(cluster, room, clients, "api1", "di"), "s")
    pipes = []  # the test's own share: one command's round trip to a Node client and back
    for _ in range(100):
        started = time.perf_counter()
        clients.opened[-1].call("text")
        pipes.append((time.perf_counter() - started) * 1000)
    p50 = (statistics.median(cross), statistics.median(same))
    p99 = (percentile(cross, 99), percentile(same, 99))
    REPORT.append(f"fan-out through the LB, an edit on one client until the other holds it (100 edits, ms): across "
                  f"nodes (a1 -> a2) p50 {p50[0]:.1f} p99 {p99[0]:.1f}; within a1 p50 {p50[1]:.1f} p99 {p99[1]:.1f}; "
                  f"ratio p50 {p50[0] / p50[1]:.2f} p99 {p99[0] / p99[1]:.2f} (of which the test's pipes to the Node "
                  f"clients: two round trips of p50 {statistics.median(pipes):.1f} each)")


# --- F1: an API node killed with open sockets --------------------------------------------------------------------


def test_f1_api_node_killed_clients_resume_on_the_other_and_converge(cluster, clients):
    room = Room(cluster, data="F1:")
    members = spread(cluster, room, clients)
    markers = edit(members, "a")
    converge(room, members, markers)

    a1 = cluster.apis["a1"]
    a1.process.kill()
    markers += edit(members, "b")  # a1's clients edit while their socket is gone; they send it once back
    converge(room, members, markers)
    assert moved(members), "a1's clients connected again"
    a1.start().wait_ready()
    cluster.lb.wait_status("api1", "UP")


# --- F2: a rolling restart under load ------------------------------------------------------------------------------


def test_f2_rolling_restart_under_load_fails_no_request_and_loses_no_write(cluster, clients):
    room = Room(cluster, data="F2:")
    members = spread(cluster, room, clients, count=2)
    with cluster.http() as http:
        t = new_tenant(http)
    load = Load(cluster.lb.url, 4, org_writes(t, "r"), timeout=30).start()
    events = {}  # what happened when (time.monotonic()), to place a failure
    with Watch(cluster.lb) as watch:
        try:
            wait_for(lambda: min(load.count(ok)) >= 3, timeout=30, what="writes before the restart")
            for name, server in (("a1", "api1"), ("a2", "api2")):
                api = cluster.apis[name]
                api.process.signal(signal.SIGTERM)
                events[f"SIGTERM {name}"] = time.monotonic()
                # Draining: /readyz says 503 at once, so HAProxy takes it out while it still serves.
                events[f"{server} DOWN"] = cluster.lb.wait_status(server, "DOWN", timeout=DRAIN_S + 5)
                # A clean end (uvicorn stops, then ends by the signal it was sent).
                assert api.process.wait(DRAIN_S + 30) in (0, -signal.SIGTERM), api.process.tail()
                events[f"{name} exited"] = time.monotonic()
                api.start().wait_ready()
                events[f"{server} UP"] = cluster.lb.wait_status(server, "UP")
                since = time.monotonic()
                wait_for(lambda: min(load.count(ok, since=since)) >= 3, timeout=30, what=f"writes after {name} is back")
        finally:
            outcomes = load.finish()
    failed = [o for o in outcomes if not ok(o)]
    zero = events["SIGTERM a1"]
    assert not failed, (f"{len(failed)} of {len(outcomes)} requests failed, e.g. {unexpected(failed[:3], {200})}; "
                        f"{placed(failed, zero, watch)}; the restart: "
                        f"{ {k: round(v - zero, 2) for k, v in events.items()} }")
    missing = acknowledged(load, "r") - set(stored_orgs(cluster, t))
    assert not missing, f"acknowledged writes not stored: {sorted(missing)[:5]}"
    # The sockets both nodes closed (1001) came back through the balancer.
    converge(room, members, edit(members, "after"))


# --- F3: a worker killed mid-job -----------------------------------------------------------------------------------


def test_f3_worker_killed_mid_deletion_the_other_finishes_each_task_once(cluster):
    t = deletion_target(cluster)
    marks = trace_marks(cluster)
    with cluster.db() as lock:
        with lock.transaction():
            job_id, victim = start_held_deletion(cluster, t, lock)
            victim.process.kill()
        # The lock is gone with the transaction: the dead worker's statement ends uncommitted with its connection.
    survivor = next(w for w in cluster.workers.values() if w is not victim)
    vname, sname = victim.node.name, survivor.node.name

    wait_for(lambda: deletion_state(cluster, t, job_id)[0]["status"] == "succeeded", timeout=LEASE_S + 30,
             what="the other worker to finish the deletion")
    job, done = deletion_state(cluster, t, job_id)
    assert done == TASK_NAMES
    assert (job["status"], job["attempts"], job["result"]) == ("succeeded", 2, {"tasks": len(TASK_NAMES)})
    # Tasks 1-3 committed on the killed worker, 4-9 on the other: each once.
    assert traced_since(victim, marks, vname, "deletion") == TASK_NAMES[:3]
    assert traced_since(survivor, marks, sname, "deletion") == TASK_NAMES[3:]
    for table in ("presence", "grants"):
        column = "user_id" if table == "presence" else "principal_id"
        assert cluster.query(f"select 1 from {table} where api_key_id = %s and {column} = 'u1'", t.api_key) == []
    victim.start().wait_ready()


# --- F4: a worker cut from Redis past its lease (a zombie) ----------------------------------------------------------


def test_f4_worker_cut_from_redis_past_its_lease_reruns_elsewhere_with_no_second_effect(cluster):
    t = deletion_target(cluster)
    marks = trace_marks(cluster)
    redis_nodes = [r.node for r in cluster.redis.values()]
    with cluster.db() as lock:
        with lock.transaction():
            job_id, zombie = start_held_deletion(cluster, t, lock)
            other = next(w for w in cluster.workers.values() if w is not zombie)
            cluster.topology.partition(zombie.node, redis_nodes)  # Postgres stays reachable
            # Its heartbeat stops; after the lease the other worker takes the job: its try waits on the job's row,
            # which the zombie's task holds (the zombie itself waits on our lock).
            wait_for(lambda: other.node.ip in lock_waiters(cluster), timeout=LEASE_S + 30,
                     what="the other worker to take the job over")
            assert zombie.process.alive(), f"scenario: the cut-off worker keeps running; log:\n{zombie.process.tail()}"
        # Our lock released: the zombie's task 4 goes on, late, still cut from Redis.
    zname, oname = zombie.node.name, other.node.name
    wait_for(lambda: deletion_state(cluster, t, job_id)[0]["status"] == "succeeded", timeout=60,
             what="the other worker to finish the deletion")
    cluster.topology.heal()
    # The zombie's try has ended (and arq's bookkeeping of it, once Redis answers it again).
    wait_for(lambda: f"ran {job_id}" in zombie.traced()[marks[zname]:], timeout=60,
             what="the zombie's try to end after the heal")

    job, done = deletion_state(cluster, t, job_id)
    assert done == TASK_NAMES
    assert (job["status"], job["attempts"], job["result"]) == ("succeeded", 2, {"tasks": len(TASK_NAMES)})
    committed = {
        zname: traced_since(zombie, marks, zname, "deletion"), oname: traced_since(other, marks, oname, "deletion")
    }
    # The zombie's task 4 held the job's row when the other worker took over, so it commits; at a later task it
    # finds the other's try and stops there (fencing; which task depends on who gets the row's lock first). Each
    # task once, in order: the zombie's first, the rest by the other worker.
    zombie_did, other_did = committed[zname], committed[oname]
    assert zombie_did + other_did == TASK_NAMES and zombie_did[:4] == TASK_NAMES[:4], committed
    if other_did:
        assert "was overtaken by a later try" in zombie.process.tail(400), zombie.process.tail(20)


# --- F6: an API node cut from Redis --------------------------------------------------------------------------------


def test_f6_api_node_cut_from_redis_is_taken_out_and_its_clients_move(cluster, clients):
    room = Room(cluster, data="F6:")
    members = spread(cluster, room, clients)
    markers = edit(members, "a")
    converge(room, members, markers)
    a1 = cluster.apis["a1"]
    cluster.topology.partition(a1.node, [r.node for r in cluster.redis.values()])
    try:
        cluster.lb.wait_status("api1", "DOWN", timeout=30)
        with cluster.http(a1.url) as direct:
            assert direct.get("/readyz", timeout=10).status_code == 503
        markers += edit(members, "b")
        converge(room, members, markers)
        assert moved(members), "a1's clients were cut by HAProxy and connected again"
    finally:
        cluster.topology.heal()
    a1.wait_ready()  # its Redis clients found the master again
    cluster.lb.wait_status("api1", "UP")
    converge(room, members, markers + edit(members, "c"))


# --- F10: a node frozen 30 s ----------------------------------------------------------------------------------------


def test_f10_frozen_node_is_failed_out_and_resumes_without_double_delivery(cluster, clients):
    room = Room(cluster, data="F10:")
    members = spread(cluster, room, clients)
    markers = edit(members, "a")
    converge(room, members, markers)
    with cluster.http() as http:
        t = new_tenant(http)
    # A write in flight on a1 when it froze may fail (or wait for a1): each id is tried once, never again, so a
    # retry cannot wait on the frozen node's open transaction of the same row.
    load = Load(cluster.lb.url, 2, org_writes(t, "z"), timeout=FREEZE_S + 30).start()
    a1 = cluster.apis["a1"]
    try:
        wait_for(lambda: min(load.count(ok)) >= 3, timeout=30, what="writes before the freeze")
        a1.process.signal(signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            # a1's clients edit into a socket nobody reads; HAProxy fails a1 out and cuts them; they move.
            markers += edit(members, "b")
            down = cluster.lb.wait_status("api1", "DOWN", timeout=15)
            converge(room, members, markers)
            assert moved(members), "a1's clients were cut by HAProxy and connected again"
            wait_for(lambda: sum(load.count(ok, since=down)) >= 10, timeout=30, what="writes while a1 is frozen")
            time.sleep(max(0.0, FREEZE_S - (time.monotonic() - frozen)))  # the freeze itself lasts 30 s
        finally:
            a1.process.signal(signal.SIGCONT)
        # On resume a1 reads what its sockets held (frozen edits, requests): none of it may land twice.
        a1.wait_ready()
        up = cluster.lb.wait_status("api1", "UP")
        markers += edit(members, "c")
        converge(room, members, markers)
        wait_for(lambda: sum(load.count(ok, since=up)) >= 10, timeout=30, what="writes after the resume")
    finally:
        outcomes = load.finish()
    REPORT.append(f"F10 REST writes during the 30 s freeze of a1: {len(unexpected(outcomes, {200}))} of "
                  f"{len(outcomes)} not answered 200 (those in flight on a1)")
    stored = stored_orgs(cluster, t)
    assert acknowledged(load, "z") <= set(stored)
    ids = []
    with cluster.http() as http:
        body = {"pageSize": 1000}
        while True:  # every page of the tenant's organizations, as a client reads them
            page = post(http, "/v2/organizations/get", body, t.headers).json()["result"]
            ids += [o["organizationId"] for o in page["data"]]
            if not page["pageToken"]:
                break
            body["pageToken"] = page["pageToken"]
    assert len(ids) == len(set(ids)) and sorted(ids) == sorted(stored), "each write stored once, and listed once"


# --- F5: the Redis master killed (Sentinel failover) ----------------------------------------------------------------


def test_f5_redis_master_killed_sentinel_fails_over_crud_unaffected_clients_converge(cluster, clients):
    cluster.fake.reset()
    room = Room(cluster, data="F5:")
    # One client on each node connected to the node itself (the relay between them is Redis), and one on each
    # through the load balancer.
    members = [room.join(clients, api.url, f"user-{name}") for name, api in cluster.apis.items()]
    members += [join_on(cluster, room, clients, server, f"user-lb-{server}") for server in ("api1", "api2")]
    markers = edit(members, "a")
    converge(room, members, markers)
    with cluster.http() as http:
        t = new_tenant(http)
    with_openai_key(cluster, t)
    crud = Load(cluster.lb.url, 2, org_writes(t, "s"), timeout=30).start()
    asks = Load(cluster.lb.url, 1, lambda c, **_: post(c, "/v2/rewriter/ask-ai", ASK, t.headers), timeout=30).start()
    old = cluster.redis_master()
    assert old is not None
    problems = []  # every broken promise of the issue, not only the first
    watch = Watch(cluster.lb).__enter__()
    try:
        wait_for(lambda: min(crud.count(ok)) >= 3 and min(asks.count(ok)) >= 2, timeout=30,
                 what="writes and awaited jobs before the failover")
        old.process.kill()
        killed = time.monotonic()
        # Both clients keep editing through the failover (the pace of a typist, not a wait for anything).
        rounds = 0

        def failed_over():
            nonlocal rounds
            rounds += 1
            markers.extend(edit(members, f"f{rounds}-"))
            time.sleep(0.1)
            return cluster.redis_master() not in (None, old)

        wait_for(failed_over, timeout=60, what="Sentinel to elect a new master")
        elected = time.monotonic()
        REPORT.append(f"F5 Sentinel named a new master {elected - killed:.1f} s after the kill")
        for _ in range(10):
            markers.extend(edit(members, f"g{rounds}-"))
            rounds += 1
        try:
            wait_for(lambda: asks.count(ok, since=elected)[0] >= 2, timeout=30,
                     what="awaited jobs (ask-ai) to succeed after the failover")
        except AssertionError as exc:
            problems.append(f"{exc}; its last answers: {unexpected(asks.outcomes[0][-2:], {200})}; "
                            f"{exited(cluster) or 'every collab process still runs'}")
        crud_outcomes, ask_outcomes = crud.finish(), asks.finish()
        wrong = [o for o in crud_outcomes if not ok(o)]
        if wrong:
            problems.append(f"CRUD affected: {len(wrong)} of {len(crud_outcomes)} writes not 200, e.g. "
                            f"{unexpected(wrong[:2], {200})}; {placed(wrong, killed, watch)}")
        wrong = [o for o in ask_outcomes if not answered(o)]
        if wrong:
            problems.append(f"awaited jobs answered neither 200 nor collab's 503: {len(wrong)}, e.g. "
                            f"{unexpected(wrong[:2], {200})}")
        late = [o for o in ask_outcomes if o["status"] != 200 and o["ended"] > elected + FEW_S]
        if late:
            problems.append(f"awaited jobs still failing {FEW_S} s after the election: {unexpected(late[:2], {200})}")
        missing = acknowledged(crud, "s") - set(stored_orgs(cluster, t))
        if missing:
            problems.append(f"acknowledged writes lost: {sorted(missing)[:5]}")
        try:
            converge(room, members, markers)
        except AssertionError as exc:
            problems.append(str(exc))
        connects = [m.state()["connects"] for m in members]
        if connects != [1, 1, 1, 1]:
            problems.append(f"clients reconnected (connections of the clients on a1, a2, via the LB on api1, api2: "
                            f"{connects}); the issue: none; HAProxy's servers: {watch.describe(killed)}")
    finally:
        crud.finish(), asks.finish()
        watch.__exit__()
        # The old master back, as a replica of the new one.
        new = wait_for(cluster.redis_master, timeout=30, what="a master")
        if not old.process.alive():
            old.start(master=new.ip)
        cluster.wait_redis()
    assert not problems, "\n".join(problems)


# --- F8: Postgres restarted under load ------------------------------------------------------------------------------


def test_f8_postgres_restart_under_load_answers_200_or_503_and_loses_nothing(cluster):
    with cluster.http() as http:
        t = new_tenant(http)
    load = Load(cluster.lb.url, 4, org_writes(t, "p"), timeout=POOL_TIMEOUT_S + 15).start()
    primary = cluster.primary
    with Watch(cluster.lb) as watch:
        try:
            wait_for(lambda: min(load.count(ok)) >= 3, timeout=30, what="writes before the restart")
            primary.stop()
            down = time.monotonic()
            wait_for(lambda: sum(load.count(not_ok, since=down)) >= 2, timeout=60,
                     what="writes failing while Postgres is down")
            primary.start().wait_ready()
            up = time.monotonic()
            wait_for(lambda: min(load.count(ok, since=up)) >= 5, timeout=60, what="writes to succeed again")
        finally:
            outcomes = load.finish()
            if not primary.process.alive():
                primary.start().wait_ready()
    wrong = [o for o in outcomes if not answered(o)]
    missing = acknowledged(load, "p") - set(stored_orgs(cluster, t))
    wait_for(lambda: primary.sync_standbys() == [cluster.standby.ip], timeout=60, what="the standby to be back in sync")
    assert not wrong and not missing, (f"{len(wrong)} of {len(outcomes)} answers neither 200 nor collab's 503, e.g. "
                                       f"{unexpected(wrong[:3], {200, 503})}; {placed(wrong, down, watch)}; "
                                       f"Postgres back at {up - down:+.2f}; acknowledged writes lost: "
                                       f"{sorted(missing)[:5]}")


# --- F7: the Postgres primary killed, the standby promoted ----------------------------------------------------------


def test_f7_postgres_primary_killed_standby_promoted_no_acknowledged_write_lost(cluster):
    with cluster.http() as http:
        t = new_tenant(http)
    load = Load(cluster.lb.url, 4, org_writes(t, "f"), timeout=POOL_TIMEOUT_S + 15).start()
    old, new = cluster.primary, cluster.standby
    with Watch(cluster.lb) as watch:
        try:
            wait_for(lambda: min(load.count(ok)) >= 3, timeout=30, what="writes before the failover")
            old.node.crash()  # kill -9: the primary's machine is gone
            down = time.monotonic()
            wait_for(lambda: sum(load.count(not_ok, since=down)) >= 2, timeout=60,
                     what="writes failing without a primary")
            new.promote()
            cluster.primary, cluster.standby = new, old
            promoted = time.monotonic()
            wait_for(lambda: min(load.count(ok, since=promoted)) >= 5, timeout=60,
                     what="writes to succeed on the promoted standby")
        finally:
            outcomes = load.finish()
    REPORT.append(f"F7 writes succeeded again {time.monotonic() - promoted:.1f} s (at most) after the promotion")
    wrong = [o for o in outcomes if not answered(o)]
    stored = {r["id"] for r in new.query("select id from organizations where api_key_id = %s", t.api_key)}
    missing = acknowledged(load, "f") - stored
    rebuild_standby(old, new)
    assert not wrong and not missing, (f"{len(wrong)} of {len(outcomes)} answers neither 200 nor collab's 503, e.g. "
                                       f"{unexpected(wrong[:3], {200, 503})}; {placed(wrong, down, watch)}; "
                                       f"promoted at {promoted - down:+.2f}; acknowledged writes missing on the "
                                       f"promoted standby: {sorted(missing)[:5]}")


def rebuild_standby(old, new) -> None:
    """The old primary's node back as the new primary's synchronous standby (a fresh base backup)."""
    old.basebackup(new)
    old.start().wait_ready()

    def streaming():
        rows = new.query("select host(client_addr) as addr from pg_stat_replication where state = 'streaming'",
                         database="postgres")
        return old.ip in [r["addr"] for r in rows]

    wait_for(streaming, timeout=60, what="the rebuilt standby to stream")
    new.require_sync_standby()
    wait_for(lambda: new.sync_standbys() == [old.ip], timeout=60, what="the rebuilt standby to be synchronous")


# --- a re-embed shared by the workers of both nodes (ADR 0062) -----------------------------------------------------


def test_reembed_ranges_are_shared_by_the_workers_of_both_nodes(cluster):
    with cluster.http() as http:
        t = new_tenant(http)
        result(
            post(http, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}},
                 t.headers))
        activities = [{
            "id": f"j{i:02}", "featureType": "comment", "actionType": "comment_annotation.reject",
            "actionUser": {"userId": "u"}, "entityData": {"reasoning": f"Figure {i}'s caption is vague"}
        } for i in range(24)]
        result(
            post(http, "/v2/activities/add", {"organizationId": "o", "documentId": "d", "activities": activities},
                 t.headers))
    wait_for(
        lambda: len(cluster.query("select judgment_id from judgment_embeddings where api_key_id = %s", t.api_key)) ==
        24, timeout=180, what="the judgments to be derived and embedded")
    target = f"copy-{uuid.uuid4().hex[:6]}"  # the fast model under another name: a second model, cheap to fill
    with cluster.db() as conn:
        conn.execute("insert into embedding_models (name, source, dimensions) values (%s, 'default', 384)", (target, ))
    node = cluster.workers["w1"].node
    out = node.run([
        collab_command(), "reembed", "--model", target, "--api-key", t.api_key, "--batch-size", "2", "--range-size",
        "3", "--parallel", "8", "--activate"
    ], env=cluster.env(node), timeout=240)
    assert "re-embed done" in out, out
    [run] = cluster.query("select id, state from reembed_runs where api_key_id = %s and model = %s", t.api_key, target)
    ranges = cluster.query("select worker, done from reembed_ranges where run_id = %s", run["id"])
    assert run["state"] == "done" and len(ranges) == 8 and all(r["done"] for r in ranges)
    pids = {int(r["worker"].split("/")[0].rsplit(":", 1)[1]) for r in ranges}
    by_pid = {w.process.popen.pid: name for name, w in cluster.workers.items()}
    assert {by_pid.get(pid, pid) for pid in pids} == {"w1", "w2"}, "each node's worker took ranges"
    rows = cluster.query("select count(*) as n from judgment_embeddings where api_key_id = %s and model = %s",
                         t.api_key, target)
    assert rows == [{"n": 24}]
    assert cluster.query("select embedding_model from api_keys where id = %s",
                         t.api_key) == [{"embedding_model": target}]
