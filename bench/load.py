"""Load benchmark and memory soak: a realistic mix against `collab run` on loopback for a bounded time.

python -m bench.load [--duration 60] [--users 16] [--tenants 4] [--url URL [--pid PID]] [--out results.json]

Without --url it starts the service as `make run` does (`collab run` as a child, fresh temporary data
dir, free port on 127.0.0.1), sets up tenants (not measured), then N virtual users run the mix of
bench/load_mix.py. It reports throughput, p50/p95/p99 per route, errors by status, CPU, and the memory
(VmRSS) of the API and worker sampled every few seconds, with its slope after warm-up. A markdown report
goes to stdout and the full results to a JSON file.
"""

import argparse
import asyncio
import json
import os
import random
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import load_service
from bench.common import machine, pct
from bench.load_mix import MIX, Recorder, Session, Tenant, create_tenant, populate, wait_searchable

DATA = Path(__file__).resolve().parent.parent / ".data"


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=60, help="seconds of load (default 60)")
    p.add_argument("--warmup", type=float,
                   help="seconds excluded from latency and memory slope (default duration/6, at most 60)")
    p.add_argument("--users", type=int, default=16, help="concurrent virtual users (default 16)")
    p.add_argument("--think", type=float, default=0.05,
                   help="mean think time between a user's operations, s (default 0.05)")
    p.add_argument("--tenants", type=int, default=4, help="workspaces, each with its own users (default 4)")
    p.add_argument("--sample-every", type=float, default=5, help="seconds between memory samples (default 5)")
    p.add_argument("--url", help="target an already running service instead of starting one")
    p.add_argument("--pid", type=int, help="with --url: the `collab run` process whose children to sample")
    p.add_argument("--out", type=Path, help="results JSON (default .data/load-<time>.json)")
    p.add_argument("--keepalive-expiry", type=float, default=5.0,
                   help="seconds the client keeps an idle connection (httpx's default 5, as the server's)")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args(argv)
    if args.warmup is None:
        args.warmup = min(60.0, args.duration / 6)
    return args


@dataclass
class Samples:
    """Memory, CPU and queue samples taken while the load runs (t in seconds from the start of the load)."""

    rss: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    cpu: list[tuple[float, dict[str, float], tuple[float, float]]] = field(default_factory=list)
    backlog: list[tuple[float, int, int]] = field(default_factory=list)


async def sampler(service: load_service.Service, t0: float, every: float, samples: Samples,
                  stop: asyncio.Event) -> None:
    """Every `every` seconds until stopped: RSS and CPU of the processes, and the worker's job backlog."""
    postmaster = load_service.postmaster_pid(service)
    db = await _connect(load_service.database_url(service))
    try:
        while True:
            t = time.monotonic() - t0
            rss, cpu = await asyncio.to_thread(lambda: (load_service.rss_sample(service.root_pid, postmaster),
                                                        load_service.cpu_sample(service.root_pid, postmaster)))
            samples.rss.append((t, rss))
            samples.cpu.append((t, cpu, load_service.machine_cpu()))
            if db is not None:
                samples.backlog.append((t, *await _backlog(db)))
            try:
                await asyncio.wait_for(stop.wait(), every)
                return
            except asyncio.TimeoutError:
                pass
    finally:
        if db is not None:
            await db.close()


async def _connect(url: str | None):
    """A connection to the service's database, to watch the job queue (None when the target is remote)."""
    if url is None:
        return None
    import psycopg

    return await psycopg.AsyncConnection.connect(url, autocommit=True)


async def _backlog(db) -> tuple[int, int]:
    """(jobs queued or running, jobs failed) in the service's job table."""
    cur = await db.execute("select count(*) filter (where status in ('queued', 'running')),"
                           " count(*) filter (where status = 'failed') from jobs")
    queued, failed = await cur.fetchone()
    return int(queued), int(failed)


async def virtual_user(session: Session, deadline: float, think: float) -> None:
    """Operations drawn from the mix by weight, each followed by an exponential think time, until the deadline."""
    _, ops, weights = zip(*MIX)
    while time.monotonic() < deadline:
        await session.rng.choices(ops, weights)[0](session)
        await asyncio.sleep(session.rng.expovariate(1 / think) if think > 0 else 0)


async def setup(client: httpx.AsyncClient, count: int, rng: random.Random) -> list[Tenant]:
    """Tenants created one by one, filled concurrently; then wait until their seeded comments are searchable."""
    tenants = [await create_tenant(client, i) for i in range(count)]
    await asyncio.gather(*(populate(client, t, random.Random(rng.random())) for t in tenants))
    await wait_searchable(client, tenants)
    return tenants


async def drive(args: argparse.Namespace, service: load_service.Service) -> dict[str, Any]:
    """Set up, run the load with sampling, and return every raw measurement."""
    rng = random.Random(args.seed)
    limits = httpx.Limits(max_connections=args.users + 4, max_keepalive_connections=args.users + 4,
                          keepalive_expiry=args.keepalive_expiry)
    async with httpx.AsyncClient(base_url=service.url, timeout=30, limits=limits) as client:
        started = time.monotonic()
        tenants = await setup(client, args.tenants, rng)
        setup_s = time.monotonic() - started
        recorder, samples, stop = Recorder(), Samples(), asyncio.Event()
        t0 = time.monotonic()
        cpu0 = time.process_time()
        watch = asyncio.create_task(sampler(service, t0, args.sample_every, samples, stop))
        sessions = [
            Session(client, tenants[i % len(tenants)], random.Random(rng.random()), recorder, f"v{i}")
            for i in range(args.users)
        ]
        await asyncio.gather(*(virtual_user(s, t0 + args.duration, args.think) for s in sessions))
        elapsed = time.monotonic() - t0
        client_cpu = time.process_time() - cpu0
        stop.set()
        await watch
    return {
        "recorder": recorder, "samples": samples, "t0": t0, "elapsed": elapsed, "setup_s": setup_s,
        "client_cpu_s": client_cpu, "tenants": {t.headers["x-service-api-key"]: t.name
                                                for t in tenants}
    }


# --- summary ---------------------------------------------------------------------------------------------


def _ok(status: int | str) -> bool:
    # No non-2xx answer is expected from this mix: every id it writes is new or known to exist.
    return isinstance(status, int) and 200 <= status < 300


def routes(rows: list[tuple], t0: float, warmup: float, measured_s: float) -> list[dict[str, Any]]:
    """Per route (and in total): count, req/s, latency percentiles (after warm-up), errors (whole run)."""
    by_route: dict[str, list[tuple]] = {}
    for row in rows:
        by_route.setdefault(row[1], []).append(row)
    table = []
    for route, group in sorted(by_route.items(), key=lambda kv: -len(kv[1])) + [("total", rows)]:
        timed = [r[2] * 1000 for r in group if r[0] - t0 >= warmup]
        table.append({
            "route": route, "count": len(group), "measured": len(timed), "rps": len(timed) / measured_s,
            "p50_ms": pct(timed, 50), "p95_ms": pct(timed, 95), "p99_ms": pct(timed, 99),
            "max_ms": max(timed, default=float("nan")), "errors": sum(1 for r in group if not _ok(r[3]))
        })
    return table


def errors(rows: list[tuple]) -> dict[str, int]:
    """Failed requests by 'route status code' over the whole run, warm-up included."""
    out: dict[str, int] = {}
    for _, route, _, status, code in rows:
        if not _ok(status):
            key = f"{route} {status} {code or ''}".strip()
            out[key] = out.get(key, 0) + 1
    return out


def minutes(rows: list[tuple], t0: float, duration: float) -> list[dict[str, Any]]:
    """Throughput and latency minute by minute, to see drift over a soak (the last minute may be partial)."""
    buckets: dict[int, list[tuple]] = {}
    for row in rows:
        if row[0] - t0 < duration:  # requests still in flight at the deadline would make a stub bucket
            buckets.setdefault(int((row[0] - t0) // 60), []).append(row)
    return [{
        "minute": m, "count": len(b), "rps": len(b) / min(60, duration - 60 * m),
        "p50_ms": pct([r[2] * 1000 for r in b], 50), "p99_ms": pct([r[2] * 1000
                                                                    for r in b], 99), "errors": sum(1 for r in b
                                                                                                    if not _ok(r[3]))
    } for m, b in sorted(buckets.items())]


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MiB) points, in MiB per minute."""
    if len(points) < 2:
        return float("nan")
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    var = sum((p[0] - mx)**2 for p in points)
    return 60 * sum((p[0] - mx) * (p[1] - my) for p in points) / var if var else float("nan")


def memory(samples: Samples, warmup: float) -> list[dict[str, Any]]:
    """Per role: RSS at the start of the load, after warm-up, at the end, its maximum, and the slope after warm-up."""
    roles = sorted({role for _, s in samples.rss for role in s}, key=_role_order)
    out = []
    for role in roles:
        points = [(t, s[role]) for t, s in samples.rss if role in s]
        after = [p for p in points if p[0] >= warmup] or points[-1:]
        # The second half tells a leak (still rising) from a fill that levels off (caches, Redis's kept results).
        late = [p for p in points if p[0] >= (warmup + points[-1][0]) / 2]
        out.append({
            "process": role, "start_mib": points[0][1], "warm_mib": after[0][1], "end_mib": points[-1][1],
            "max_mib": max(p[1] for p in points), "slope_mib_per_min": slope(after),
            "late_slope_mib_per_min": slope(late)
        })
    return out


def _role_order(role: str) -> tuple[int, str]:
    order = ["api", "worker", "supervisor", "redis"]
    return (order.index(role) if role in order else len(order), role)


def cpu(samples: Samples, warmup: float, client_cpu_s: float, elapsed: float) -> dict[str, Any]:
    """Share of one core each part used after warm-up, and how busy the whole machine was (all tenants of it)."""
    after = [s for s in samples.cpu if s[0] >= warmup] or samples.cpu
    if len(after) < 2:
        return {}
    (t1, c1, m1), (t2, c2, m2) = after[0], after[-1]
    span = t2 - t1
    cores = {role: (c2.get(role, 0) - c1.get(role, 0)) / span for role in c2 if span > 0}
    busy = (m2[0] - m1[0]) / (m2[1] - m1[1]) if m2[1] > m1[1] else float("nan")
    client = client_cpu_s / elapsed
    # What the rest of the (shared) machine used meanwhile: its busy cores less the service's and ours.
    others = busy * (os.cpu_count() or 1) - sum(cores.values()) - client
    return {
        "cores_by_process": cores, "load_generator_cores": client, "machine_busy": busy,
        "machine_cores": os.cpu_count(), "other_processes_cores": others
    }


def tenant_rates(rows: list[tuple], tenants: dict[str, str]) -> dict[str, float]:
    """Calls per minute per workspace, averaged over the run, against the per-key and workspace/get limits."""
    per_key = len(rows) / max(1, len(tenants))
    ws_get = sum(1 for r in rows if r[1] == "workspace/get") / max(1, len(tenants))
    span_min = max((rows[-1][0] - rows[0][0]) / 60, 1e-9) if rows else 1
    return {"api_calls_per_key_per_min": per_key / span_min, "workspace_get_per_workspace_per_min": ws_get / span_min}


def summarize(args: argparse.Namespace, raw: dict[str, Any], service: load_service.Service) -> dict[str, Any]:
    """Everything worth keeping of one run, JSON-ready."""
    rows, t0 = raw["recorder"].rows, raw["t0"]
    measured_s = max(raw["elapsed"] - args.warmup, 1e-9)
    samples: Samples = raw["samples"]
    queued = [b[1] for b in samples.backlog]
    failed = [b[2] for b in samples.backlog]
    return {
        "machine": machine(), "started_service": service.process is not None,
        "settings": {k: v
                     for k, v in service.env.items() if k.startswith("COLLAB_RATE") or k == "COLLAB_LOG_LEVEL"},
        "args": {k: (str(v) if isinstance(v, Path) else v)
                 for k, v in vars(args).items()}, "mix": [{"operation": name, "weight": w} for name, _, w in MIX],
        "setup_s": raw["setup_s"], "elapsed_s": raw["elapsed"], "measured_s": measured_s,
        "routes": routes(rows, t0, args.warmup,
                         measured_s), "errors": errors(rows), "item_failures": raw["recorder"].item_failures,
        "minutes": minutes(rows, t0, args.duration), "memory": memory(samples, args.warmup),
        "cpu": cpu(samples, args.warmup, raw["client_cpu_s"], raw["elapsed"]), "backlog": {
            "max_queued_or_running": max(queued, default=None), "end_queued_or_running": queued[-1] if queued else None,
            "failed_jobs_during_run": (failed[-1] - failed[0]) if failed else None
        }, "tenant_rates": tenant_rates(rows, raw["tenants"]),
        "rss_samples": [{"t": round(t, 1), **{k: round(v, 1)
                                              for k, v in s.items()}} for t, s in samples.rss
                        ], "max_rss_client_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    }


def markdown(r: dict[str, Any]) -> str:
    """The report: run parameters, the per-route table, errors, CPU, memory."""
    a = r["args"]
    lines = [
        f"{a['users']} virtual users (mean think time {a['think'] * 1000:.0f} ms), {a['tenants']} tenants, "
        f"{r['elapsed_s']:.0f} s of load, the first {a['warmup']:.0f} s warm-up "
        f"(setup {r['setup_s']:.0f} s, not measured). "
        f"Machine: {r['machine']}.", ""
    ]
    lines += [
        "| route | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    ]
    for row in r["routes"]:
        name = f"**{row['route']}**" if row["route"] == "total" else row["route"]
        lines.append(f"| {name} | {row['count']} | {row['rps']:.1f} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | "
                     f"{row['p99_ms']:.1f} | {row['max_ms']:.0f} | {row['errors']} |")
    errs = r["errors"]
    lines += [
        "",
        "Errors (any non-2xx; none is expected): " + (", ".join(f"{k}: {v}" for k, v in errs.items()) or "none") + "."
    ]
    if r["item_failures"]:
        lines.append("Batch items with success false: " + ", ".join(f"{k}: {v}"
                                                                    for k, v in r["item_failures"].items()) + ".")
    c = r["cpu"]
    if c:
        parts = ", ".join(f"{k} {v:.2f}" for k, v in sorted(c["cores_by_process"].items(), key=lambda kv: -kv[1]))
        lines += [
            "", f"CPU after warm-up (cores): {parts}; load generator {c['load_generator_cores']:.2f}; "
            f"whole machine {c['machine_busy'] * 100:.0f}% busy of {c['machine_cores']} cores, of which "
            f"{c['other_processes_cores']:.2f} cores other processes (anything else on the machine)."
        ]
    b = r["backlog"]
    if b["max_queued_or_running"] is not None:
        lines.append(
            f"Worker queue: at most {b['max_queued_or_running']} jobs queued or running, {b['end_queued_or_running']} "
            f"at the end; {b['failed_jobs_during_run']} failed during the run.")
    rates = r["tenant_rates"]
    lines.append(f"Per workspace: {rates['api_calls_per_key_per_min']:.0f} API calls/min per key, "
                 f"{rates['workspace_get_per_workspace_per_min']:.1f} workspace/get per min.")
    if r["memory"]:
        lines += [
            "", "| process (MiB RSS) | load start | after warm-up | end | max | slope after warm-up MiB/min |"
            " slope, second half MiB/min |", "|---|---:|---:|---:|---:|---:|---:|"
        ]
        for m in r["memory"]:
            lines.append(f"| {m['process']} | {m['start_mib']:.1f} | {m['warm_mib']:.1f} | {m['end_mib']:.1f} | "
                         f"{m['max_mib']:.1f} | {m['slope_mib_per_min']:+.2f} | {m['late_slope_mib_per_min']:+.2f} |")
    log = r.get("service_log") or {}
    if log.get("lines"):
        lines.append(f"Service log: {log['lines']} warning or error line(s); the last: `{log['tail'][-1][:300]}`")
    if log.get("model_loads"):
        lines.append(
            f"The worker loaded the embedding model {log['model_loads']} time(s) (counted from its progress bars).")
    if len(r["minutes"]) > 2:
        lines += [
            "", "By minute (all routes): " +
            "; ".join(f"{m['minute']}: {m['rps']:.0f} req/s p50 {m['p50_ms']:.0f} p99 {m['p99_ms']:.0f} ms" +
                      (f" {m['errors']} err" if m["errors"] else "") for m in r["minutes"])
        ]
    return "\n".join(lines)


# Lines of the service's output that are not warnings: start-up, shutdown, the model's progress bars,
# and a warning of the environment (no XDG_RUNTIME_DIR) that says nothing about the service.
_NOISE = ("collab: starting", "collab is running", "collab: stopped", "applied ", "Loading weights",
          "  return Path(self.user_runtime_dir)")


def _log_summary(lines: list[str]) -> dict[str, Any]:
    """The service's own warnings and errors, and how many times the worker loaded the embedding model."""
    kept = [
        line for line in lines
        if line.strip() and not line.replace("\x1b[A", "").startswith(_NOISE) and "RuntimeDirWarning" not in line
    ]
    loads = sum(1 for line in lines if "Loading weights: 100%" in line)
    return {"lines": len(kept), "tail": kept[-40:], "model_loads": loads}


async def _run(args: argparse.Namespace, service: load_service.Service) -> dict[str, Any]:
    url = load_service.redis_url(service)
    if url is not None:
        await load_service.wait_worker(url)
    return await drive(args, service)


def main(argv: list[str] | None = None) -> str:
    """Run one load test; print nothing, return the markdown report (the JSON goes to --out)."""
    args = parse(argv or [])
    if args.url:
        service = load_service.Service(args.url.rstrip("/"), root_pid=args.pid)
    else:
        service = load_service.start()
    log: list[str] = []
    try:
        raw = asyncio.run(_run(args, service))
    finally:
        log = load_service.stop(service)
    result = summarize(args, raw, service)
    result["service_log"] = _log_summary(log)
    out = args.out or DATA / f"load-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    return markdown(result) + f"\n\n(results: {out})"


if __name__ == "__main__":
    print(main(sys.argv[1:]))
