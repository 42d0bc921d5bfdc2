"""Several API processes on one port (kit/serving.py): `collab api --workers N` serves from every process,
and a second server on the same port is refused."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from support.helpers import new_tenant, post, result

CONFIG_GET = "/v2/workspace/activityconfig/get"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serving(pid: int) -> set[int]:
    """The processes uvicorn's supervisor spawned to serve (not multiprocessing's resource tracker)."""
    return {child for child in _children(pid) if b"spawn_main" in _cmdline(child)}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _accepted(pid: int, port: int, state: str = "01") -> int:
    """How many connections to `port` the process holds open (from /proc: its socket fds against the TCP table);
    `state` "0A" counts its listening sockets instead."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            held.add(os.readlink(fd))
        except OSError:
            continue
    local = f":{port:04X}"
    inodes = {
        line.split()[9]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if line.split()[1].endswith(local) and line.split()[3] == state
    }  # 01: established, 0A: listening
    return sum(1 for inode in inodes if f"socket:[{inode}]" in held)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # an exited child that init has not reaped yet is not running


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="counts worker processes in /proc")
def test_collab_api_serves_from_several_worker_processes(servers, tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    env.update(COLLAB_DATABASE_URL=servers["database_url"], COLLAB_REDIS_URL=servers["redis_url"],
               COLLAB_DATA_DIR=str(tmp_path), COLLAB_SECRET_KEY="test-secret-key-0123456789-abcdefghij",
               COLLAB_LOG_LEVEL="WARNING")
    api = subprocess.Popen([sys.executable, "-m", "collab.cli", "api", "--port",
                            str(port), "--workers", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, ready = time.monotonic() + 120, False
        while not ready and time.monotonic() < deadline and api.poll() is None:
            try:
                ready = httpx.get(base + "/readyz", timeout=1).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.1)  # polling a port that is not open yet
        assert ready, api.stdout.read().decode() if api.poll() is not None else "not ready in 120 s"
        workers = _serving(api.pid)
        assert len(workers) == 2
        # /readyz answered from one process; the other may still be starting (its socket not listening yet).
        while not all(_accepted(pid, port, "0A") for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)  # nothing to be notified by: a process's start-up is its own
        assert all(_accepted(pid, port, "0A") for pid in workers), "not both listening in 120 s"
        with httpx.Client(base_url=base, timeout=30) as c:
            tenant = new_tenant(c)
            for _ in range(6):  # a fresh connection each: either process may answer, with the same result
                with httpx.Client(base_url=base, timeout=30) as once:
                    result(post(once, CONFIG_GET, {}, tenant.headers))
        # A burst of 16 new connections, as a load balancer opens its pool: both processes take some (on one
        # shared socket the first to wake could accept them all; with a socket each the kernel spreads them,
        # all 16 to one process by chance 2 times in 65,536).
        burst = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
        try:
            for conn in burst:
                conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            for conn in burst:
                assert conn.recv(4096).startswith(b"HTTP/1.1 200")
            counts = sorted(_accepted(pid, port) for pid in workers)
            assert sum(counts) == 16 and counts[0] >= 1, counts
        finally:
            for conn in burst:
                conn.close()
        # A second server on the same port is refused, not let into the first one's group of sockets.
        again = subprocess.run([sys.executable, "-m", "collab.cli", "api", "--port",
                                str(port), "--workers", "2"], env=env, capture_output=True, timeout=60)
        assert again.returncode != 0 and b"cannot listen" in again.stdout + again.stderr
    finally:
        api.send_signal(signal.SIGINT)
        assert api.wait(60) == 0
    assert not [pid for pid in workers if _running(pid)]  # stopped with the supervisor
