"""CRUD benchmark: per-request overhead of small reads and writes against a bare FastAPI route, in one run.

python -m bench.crud [--duration 8] [--rounds 2] [--connections 16] [--workers 1,2] [--routes bare,orgs_get,...]
                    [--baseline REV]

Starts embedded Postgres and Redis once, a bare FastAPI app (one POST route returning its body) and the API
(`collab api --workers N`), both on uvicorn with uvloop and httptools, seeds one tenant (one organization,
one document, one user with access to it), then measures each route with `wrk` (1 thread, N connections,
keep-alive), rounds interleaved, and prints req/s, p50, p99 and the ratio to the bare route of the same
round. With several --workers values the API is restarted for each and the ratio to one process is shown.
With --baseline, the API as of that git revision (a temporary worktree) is served beside it and measured in the
same rounds, so a change is judged before and after in one run.
Needs `wrk` on the PATH (apt-get install wrk).
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from bench import load_service
from bench.common import _free_port, machine
from collab.kit import embedded

# Limits raised so that the measured load never meets them (the bench measures overhead, not limits).
LIMITS = {"COLLAB_RATE_LIMIT_API_KEY": "100000000/minute", "COLLAB_RATE_LIMIT_WORKSPACE_CREATE": "1000/hour"}
ORG, DOC, USER = "org-crud", "doc-crud", "user-crud"


@dataclass(frozen=True)
class Route:
    """One measured route: its path, a fixed body, or a Lua body template with a per-request counter `%d`."""

    name: str
    path: str
    body: dict | None = None
    template: str | None = None


def routes() -> list[Route]:
    """The bare route, the reads, then the writes (each write makes or changes one thing)."""
    activity = {
        "featureType": "custom", "actionType": "document.viewed", "targetEntityId": "t-1",
        "actionUser": {"userId": USER}
    }
    return [
        Route("bare", "/bare", {"data": {"organizationId": ORG}}),
        Route("organizations/get", "/v2/organizations/get", {"data": {"organizationIds": [ORG]}}),
        Route("workspace/apikeyconfig/get", "/v2/workspace/apikeyconfig/get", {"data": {}}),
        Route("auth/permissions/get", "/v2/auth/permissions/get",
              {"data": {"organizationId": ORG, "userIds": [USER], "documentIds": [DOC]}}),
        Route("activities/add (1 record)", "/v2/activities/add",
              {"data": {"organizationId": ORG, "documentId": DOC, "activities": [activity]}}),
        Route(
            "organizations/documents/add", "/v2/organizations/documents/add",
            template='{"data":{"organizationId":"' + ORG + '","documents":[{"documentId":"d-%s-%d",'
            '"documentName":"D %d"}]}}'),
        Route(
            "users/update", "/v2/users/update",
            template='{"data":{"organizationId":"' + ORG + '","users":[{"userId":"' + USER + '",'
            '"name":"User %s %d"}]}}')
    ]


# --- the servers -----------------------------------------------------------------------------------------


def serve_bare(port: int) -> None:
    """The reference: a bare FastAPI JSON route on uvicorn (uvloop, httptools), one process."""
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()

    @app.post("/bare")
    async def bare(body: dict) -> dict:
        return body

    uvicorn.run(app, host="127.0.0.1", port=port, loop="uvloop", http="httptools", log_config=None, access_log=False)


def _wait(url: str, child: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"{child.args} exited with {child.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer")


def _stop(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
    try:
        child.wait(20)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def start_api(env: dict[str, str], workers: int, src: Path | None = None) -> tuple[subprocess.Popen, str]:
    """`collab api` on a free port (the code under `src` when given: a baseline's worktree)."""
    port = _free_port()
    if src is not None:
        env = {**env, "PYTHONPATH": str(src)}
    child = subprocess.Popen(
        [sys.executable, "-m", "collab.cli", "api", "--port",
         str(port), "--workers",
         str(workers)], env={**env, "COLLAB_PORT": str(port)}, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    _wait(base + "/readyz", child)
    return child, base


def _worktree(rev: str, root: Path) -> Path:
    """The `src` folder of a temporary git worktree at `rev` (removed when the run ends)."""
    where = root / "baseline"
    subprocess.run(["git", "worktree", "add", "--detach", str(where), rev], check=True, capture_output=True)
    return where / "src"


# --- seeding ---------------------------------------------------------------------------------------------


def _post(client: httpx.Client, path: str, data: dict, headers: dict[str, str]) -> dict:
    response = client.post(path, json={"data": data}, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"seed: {path} answered {response.status_code}: {response.text[:300]}")
    return response.json()


def seed(base: str) -> dict[str, str]:
    """One tenant with one organization, one document and one user who can access it; its API-key headers."""
    with httpx.Client(base_url=base, timeout=30) as client:
        ws = _post(client, "/v2/workspace/create", {"ownerEmail": "crud@example.com"}, {})["result"]["data"]
        key = next(iter(ws["apiKeyList"]))
        wh = {"x-service-workspace-id": ws["id"], "x-service-workspace-auth-token": ws["authToken"]}
        token = _post(client, "/v2/workspace/authtokens/get", {"apiKey": key},
                      wh)["result"]["data"]["authTokens"][0]["token"]
        h = {"x-service-api-key": key, "x-service-auth-token": token}
        _post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}}, h)
        _post(client, "/v2/organizations/documents/add", {
            "organizationId": ORG, "createOrganization": True, "documents": [{"documentId": DOC, "documentName": "D"}]
        }, h)
        _post(
            client, "/v2/users/add", {
                "organizationId": ORG,
                "users": [{"userId": USER, "name": "User", "email": "user@example.com", "accessRole": "editor"}]
            }, h)
        for route in routes()[1:]:  # every route answers 200 before it is measured
            body = route.body or orjson.loads(route.template.replace("%s", "seed").replace("%d", "0"))
            response = client.post(route.path, json=body, headers=h)
            if response.status_code != 200:
                raise RuntimeError(f"seed check: {route.path} answered {response.status_code}: {response.text[:300]}")
        return h


# --- wrk -------------------------------------------------------------------------------------------------


def _lua(route: Route, headers: dict[str, str], tag: str) -> str:
    lines = ['wrk.method = "POST"', 'wrk.headers["content-type"] = "application/json"']
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    if route.template is None:
        body = orjson.dumps(route.body).decode().replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'wrk.body = "{body}"')
    else:
        template = route.template.replace("%s", tag).replace("%d", "%d", 1).replace('"', '\\"')
        count = route.template.count("%d")
        args = ", ".join(["n"] * count)
        lines += [
            "local n = 0", "request = function()", "  n = n + 1",
            f'  return wrk.format(nil, nil, nil, string.format("{template}", {args}))', "end"
        ]
    return "\n".join(lines) + "\n"


_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(number) * _UNIT[unit]


def wrk(url: str, script: str, *, duration: float, connections: int) -> dict[str, float]:
    """One wrk run: req/s, p50 and p99 in ms, and the count of non-2xx answers."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "--latency", "-s", f.name, url],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"wrk failed: {out.stderr or out.stdout}")
        out = out.stdout
    finally:
        os.unlink(f.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    return {
        "rps": rps, "p50": p50, "p99": p99, "non2xx": int(bad.group(1)) if bad else 0,
        "socket_errors": errors.group(0) if errors else ""
    }


# --- the run ---------------------------------------------------------------------------------------------


def _cpu_s(pid: int) -> float:
    """CPU seconds used so far by a process and its descendants (the API's workers)."""
    tree = load_service._children()
    return sum(load_service._ticks(p) for p in load_service._descendants(pid, tree)) / load_service.TICK


def measure(args: argparse.Namespace, bare: tuple[str, int], apis: dict[str, tuple[str, int]], headers: dict[str, str],
            workers: int) -> dict:
    """Each chosen route on each server (the API, and a baseline's beside it), rounds interleaved."""
    chosen = [r for r in routes() if args.routes is None or r.name.split(" ")[0] in args.routes or r.name == "bare"]
    runs = []  # (row name, route, server): the bare route on its server, every other on each API
    for route in chosen:
        servers = {"": bare} if route.name == "bare" else apis
        runs += [(route.name + label, route, server) for label, server in servers.items()]
    results: dict[str, list[dict]] = {name: [] for name, _, _ in runs}
    for rnd in range(args.rounds):
        for name, route, (base, pid) in runs:
            tag = f"w{workers}r{rnd}{'b' if name != route.name else ''}"
            cpu = _cpu_s(pid)
            result = wrk(base + route.path, _lua(route, {} if route.name == "bare" else headers, tag),
                         duration=args.duration, connections=args.connections)
            # Server CPU per request: what the noise of a shared machine moves least.
            result["cpu_us"] = (_cpu_s(pid) - cpu) / max(result["rps"] * args.duration, 1) * 1e6
            results[name].append(result)
            print(
                f"  workers={workers} round {rnd + 1} {name}: {result['rps']:.0f} req/s, p50 "
                f"{result['p50']:.2f} ms, p99 {result['p99']:.2f} ms, {result['cpu_us']:.0f} µs CPU/req" +
                (f", {result['non2xx']} non-2xx" if result["non2xx"] else ""), file=sys.stderr, flush=True)
    return results


def table(all_results: dict[int, dict], args: argparse.Namespace) -> str:
    """The markdown table: per route and worker count, each round's req/s, p50, p99 and ratio to bare."""
    one = min(all_results)
    lines = [
        f"{args.rounds} rounds interleaved, wrk -t1 -c{args.connections} -d{args.duration:g}s; {machine()}.", "",
        "| route | API processes | req/s (rounds) | p50 ms | p99 ms | server CPU µs/req | vs bare | vs 1 process |",
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    ]
    for workers, results in all_results.items():
        bare = results["bare"]
        for name, rounds in results.items():
            if name == "bare" and workers != one:
                continue
            ratios = [r["rps"] / b["rps"] for r, b in zip(rounds, bare)]
            scale = ""
            if workers != one and name in all_results[one]:
                base = all_results[one][name]
                scale = " / ".join(f"{r['rps'] / b['rps']:.2f}" for r, b in zip(rounds, base))
            bad = sum(r["non2xx"] for r in rounds)
            lines.append(
                f"| {name}{' (' + str(bad) + ' non-2xx)' if bad else ''} | {'-' if name == 'bare' else workers} | " +
                " / ".join(f"{r['rps']:,.0f}" for r in rounds) + " | " + " / ".join(f"{r['p50']:.1f}" for r in rounds) +
                " | " + " / ".join(f"{r['p99']:.1f}" for r in rounds) + " | " + " / ".join(f"{r['cpu_us']:.0f}"
                                                                                           for r in rounds) + " | " +
                " / ".join(f"{x:.2f}" for x in ratios) + f" | {scale} |")
    return "\n".join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.crud", description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=int, default=8, help="seconds per route and round (default 8)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--workers", default="1", help="API process counts to measure, e.g. 1,2 (default 1)")
    p.add_argument("--routes", type=lambda s: s.split(","), help="only these routes (names before the first space)")
    p.add_argument("--serve-bare", type=int, help=argparse.SUPPRESS)
    p.add_argument("--keep", action="store_true", help="leave the servers running after the first seed (profiling)")
    p.add_argument("--baseline", help="also serve and measure the API as of this git revision, in the same rounds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> str:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return ""
    if shutil.which("wrk") is None:
        raise SystemExit("bench.crud needs wrk on the PATH (apt-get install wrk)")
    # A plain kill (SIGTERM) unwinds like Ctrl-C, so the servers below are stopped, not left running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="collab-crud-"))
    database_url = embedded.start_postgres(root, database="collab_crud")
    redis = embedded.EmbeddedRedis(root)
    redis_url = redis.start()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    env = {
        **base_env, **LIMITS, "COLLAB_DATABASE_URL": database_url, "COLLAB_REDIS_URL": redis_url,
        "COLLAB_DATA_DIR": str(root), "COLLAB_SECRET_KEY": "crud-bench-secret-key-0123456789abcdef",
        "COLLAB_HOST": "127.0.0.1", "COLLAB_LOG_LEVEL": "WARNING"
    }
    bare_port = _free_port()
    bare = subprocess.Popen([sys.executable, "-m", "bench.crud", "--serve-bare",
                             str(bare_port)], env=env, start_new_session=True)
    bare_url = f"http://127.0.0.1:{bare_port}"
    headers: dict[str, str] | None = None
    all_results: dict[int, dict] = {}
    baseline = _worktree(args.baseline, root) if args.baseline else None
    try:
        _wait(bare_url + "/docs", bare)
        for workers in [int(w) for w in args.workers.split(",")]:
            api, base = start_api(env, workers)
            old = start_api(env, workers, baseline) if baseline else None
            try:
                headers = headers or seed(base)
                if args.keep:
                    print(f"api {base} (pid {api.pid}), bare {bare_url}; headers {headers}; Ctrl-C ends", flush=True)
                    signal.pause()
                apis = {"": (base, api.pid), **({f" @ {args.baseline}": (old[1], old[0].pid)} if old else {})}
                all_results[workers] = measure(args, (bare_url, bare.pid), apis, headers, workers)
            finally:
                _stop(api)
                if old:
                    _stop(old[0])
    finally:
        _stop(bare)
        if baseline:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline.parent)], capture_output=True)
        redis.stop()
        embedded.stop_postgres()
        shutil.rmtree(root, ignore_errors=True)
    return table(all_results, args)


if __name__ == "__main__":
    print(main())
