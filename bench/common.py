"""Shared pieces of the benchmarks: a full stack on loopback, percentiles, the results file."""

import asyncio
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx

from collab.kit import embedded

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@contextmanager
def stack(fake_model: str | None = None, **overrides: str) -> Iterator[tuple[str, str]]:
    """Embedded Postgres and Redis, then fake providers, the API and one worker as separate processes.

    Yields (API base URL, fake providers' root URL). Separate processes, as in production: in one
    process the GIL would make every component wait on the others.
    """
    root = Path(tempfile.mkdtemp(prefix="collab-bench-"))
    database_url = embedded.start_postgres(root, database="collab_bench")
    redis = embedded.EmbeddedRedis(root)
    redis_url = redis.start()
    fake_args = ["--model", fake_model] if fake_model else []
    fake = subprocess.Popen([sys.executable, "-m", "collab.testing.fakes", *fake_args], stdout=subprocess.PIPE,
                            text=True)
    fake_root = fake.stdout.readline().strip()
    port = _free_port()
    env = dict(
        os.environ,
        COLLAB_DATABASE_URL=database_url,
        COLLAB_REDIS_URL=redis_url,
        COLLAB_DATA_DIR=str(root),
        COLLAB_SECRET_KEY="bench-secret-key-0123456789",
        COLLAB_PORT=str(port),
        COLLAB_LOG_LEVEL="WARNING",
        COLLAB_RATE_LIMIT_WORKSPACE_CREATE="100000/hour",
        COLLAB_RATE_LIMIT_AI="1000000/minute",
        COLLAB_AI_MAX_CONCURRENCY="1000",
        COLLAB_DB_POOL_MAX="20",
        COLLAB_WORKER_MAX_JOBS="100",
        COLLAB_RATE_LIMIT_EXTRACTION="1000000/hour",
        COLLAB_EXTRACTION_MAX_CONCURRENCY_PER_WORKSPACE="1000",
        # The ONNX export of the embedding model is made once and kept with the bench's other caches.
        COLLAB_MODEL_CACHE_DIR=str(Path(__file__).resolve().parent / ".cache" / "models"))
    for provider in ("openai", "anthropic", "gemini"):
        env[f"COLLAB_{provider.upper()}_BASE_URL"] = f"{fake_root}/{provider}"
    _running.update(env=dict(env), root=root)  # for api_beside: the settings before this stack's overrides
    env.update(overrides)
    children = [subprocess.Popen([sys.executable, "-m", "collab.cli", role], env=env) for role in ("api", "worker")]
    base = f"http://127.0.0.1:{port}"
    # Benchmarks that reach the servers directly find them here.
    os.environ["BENCH_DATABASE_URL"], os.environ["BENCH_REDIS_URL"] = database_url, redis_url
    try:
        _wait_ready(base)
        asyncio.run(_wait_worker(redis_url))
        yield base, fake_root
    finally:
        for child in [*children, fake]:
            child.send_signal(signal.SIGINT)
        for child in [*children, fake]:
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                child.kill()
        _running.clear()
        redis.stop()
        embedded.stop_postgres()
        shutil.rmtree(root, ignore_errors=True)


_running: dict = {}  # the stack now running: its environment before overrides and its data directory


@contextmanager
def api_beside(unset_prefix: str | None = None, **overrides: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """One more API process on the running stack's Postgres and Redis, on a port of its own: the stack's settings
    without the stack's own overrides (nor any variable named `unset_prefix`...), then `overrides`. Yields (its
    base URL, its process)."""
    port = _free_port()
    env = {k: v for k, v in _running["env"].items() if not (unset_prefix and k.startswith(unset_prefix))}
    env.update(overrides, COLLAB_PORT=str(port))
    child = subprocess.Popen([sys.executable, "-m", "collab.cli", "api"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base)
        yield base, child
    finally:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()


def stack_root() -> Path:
    """The running stack's data directory (embedded Postgres under pg*/, Redis's socket)."""
    return _running["root"]


async def _wait_worker(redis_url: str) -> None:
    """A worker answers jobs only after its start-up (model loaded and registered)."""
    from arq import create_pool
    from arq.connections import RedisSettings

    redis = await create_pool(RedisSettings.from_dsn(redis_url))
    job = await redis.enqueue_job("echo")
    await job.result(timeout=180)
    await redis.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(base: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the API did not become ready")


def new_tenant(client: httpx.Client) -> dict[str, str]:
    """A fresh workspace; returns API-key auth headers for its first key."""
    import uuid

    ws = client.post("/v2/workspace/create", json={"data": {"ownerEmail": f"bench-{uuid.uuid4().hex[:8]}@example.com"}})
    ws = ws.json()["result"]["data"]
    key = next(iter(ws["apiKeyList"]))
    headers = {"x-service-workspace-id": ws["id"], "x-service-workspace-auth-token": ws["authToken"]}
    tokens = client.post("/v2/workspace/authtokens/get", json={"data": {"apiKey": key}}, headers=headers).json()
    return {"x-service-api-key": key, "x-service-auth-token": tokens["result"]["data"]["authTokens"][0]["token"]}


# BENCH_CPU=avx2 measures what a CPU without AVX-512 and bfloat16 sees, on one that has them: oneDNN (OpenVINO's
# CPU kernels) and torch are capped at AVX2, so the embedding runs fp32 on ONNX Runtime. ONNX Runtime has no such
# cap: its kernels still use AVX-512 where the CPU has it. The stack the benches start inherits these variables.
PROFILES = {"avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}}
os.environ.update(PROFILES.get(os.environ.get("BENCH_CPU", ""), {}))


def cpu_profile() -> str:
    """`bf16` where the embedding runs OpenVINO's bfloat16 (AMX, AVX512-BF16), else the widest vector ISA of the
    CPU as capped: `avx512` or `avx2` (fp32 on ONNX Runtime)."""
    from collab.embeddings.runtime import native_bf16

    if native_bf16():
        return "bf16"
    if os.environ.get("BENCH_CPU") == "avx2":
        return "avx2"
    return "avx512" if "avx512f" in _cpu_flags() else "avx2"


def _cpu_flags() -> set[str]:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((line for line in info.splitlines() if line.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def _cpu_model() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    line = next((line for line in info.splitlines() if line.startswith("model name")), "")
    return line.split(":", 1)[-1].strip() or platform.machine()


def machine() -> str:
    return (f"{platform.machine()} ({_cpu_model()}, {cpu_profile()} profile), {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section `name` of docs/benchmarks.md."""
    text = (RESULTS.read_text() if RESULTS.exists() else
            "# Benchmarks\n\nWritten by `make bench` (`python -m bench`); numbers from one run on one machine.\n")
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text:
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
