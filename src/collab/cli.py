"""The `collab` command: run, api, worker, migrate, workspace set-plan."""

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from collab import logging as collab_logging
from collab.config import Misconfigured, get_settings, require_safe_secret


def _api(args: argparse.Namespace) -> int:
    import uvicorn

    from collab.app import create_app
    from collab.kit.drain import DrainingServer
    from collab.kit.services import redis_target
    from collab.realtime.protocol import server_options

    settings = get_settings()
    host, port = args.host or settings.host, args.port or settings.port
    require_safe_secret(settings, host=host)
    # The address it listens on is the base of the URLs it builds without a request (Settings.base_url), in this
    # process and in the API processes it starts.
    settings.host, settings.port = host, port
    os.environ["COLLAB_HOST"], os.environ["COLLAB_PORT"] = host, str(port)
    workers = args.workers or settings.api_workers or os.cpu_count() or 1
    _prepare(settings)  # refuse here, in one clear line, rather than in each process's startup traceback
    options = dict(
        host=host,
        port=port,
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        log_config=None,
        access_log=False,
        # Longer than clients keep idle connections (httpx, browsers: 5-60 s), so the server never closes one
        # just as a client reuses it (seen as connection resets under load with uvicorn's 5 s default).
        timeout_keep_alive=75,
        **server_options(settings.realtime_max_message_bytes))
    if workers == 1:
        DrainingServer(uvicorn.Config(create_app(settings), **options), drain_s=settings.drain_s).run()
        return 0
    # Several processes on one port (uvicorn's supervisor, a socket each: kit/serving.py) and one set of servers:
    # the embedded ones start here, once, and the workers get their URLs from the environment.
    from collab.kit import embedded, serving

    redis = None if redis_target(settings) else embedded.EmbeddedRedis(settings.data_dir)
    try:
        os.environ["COLLAB_DATABASE_URL"] = settings.database_url or embedded.start_postgres(settings.data_dir)
        if redis is not None:
            os.environ["COLLAB_REDIS_URL"] = _started(redis)
        settings.resolved_secret_key()  # the dev secret file is made once, before the workers race for it
        serving.run(uvicorn.Config("collab.cli:worker_app", factory=True, workers=workers, **options),
                    drain_s=settings.drain_s)
    finally:
        if redis is not None:
            redis.stop()
        if not settings.database_url:
            embedded.stop_postgres()
    return 0


def _started(redis) -> str:
    """The URL of an embedded Redis, started here (the caller made one only when no COLLAB_REDIS_URL is set)."""
    assert redis is not None
    return redis.start()


def _prepare(settings) -> str:
    """Start the embedded Postgres unless one is configured, then check pgvector, migrate and run the self-test."""
    from collab.kit import embedded
    from collab.kit.services import prepare_database

    settings.require_servers()
    url = settings.database_url or embedded.start_postgres(settings.data_dir)
    try:
        asyncio.run(prepare_database(settings, url))
    except BaseException:
        if not settings.database_url:
            embedded.stop_postgres()
        raise
    return url


def worker_app():
    """The app of one `collab api --workers N` process (uvicorn imports it there): logging set up as in main."""
    from collab.app import create_app

    settings = get_settings()
    collab_logging.setup(settings.log_level, settings.log_json)
    return create_app(settings)


def _worker(args: argparse.Namespace) -> int:
    from collab import worker

    settings = get_settings()
    _prepare(settings)  # refuse before anything starts (the embedded Redis included)
    if getattr(args, "concurrency", None):
        settings = settings.model_copy(update={"worker_max_jobs": args.concurrency})
    worker.run(settings, lanes=getattr(args, "lane", "all"))
    return 0


def _selftest(args: argparse.Namespace) -> int:
    from collab.kit import embedded
    from collab.kit.db import selftest
    from collab.kit.services import prepare_database

    settings = get_settings()
    url = settings.database_url or embedded.start_postgres(settings.data_dir)
    try:
        found = asyncio.run(prepare_database(settings, url, retry_known=True))
    finally:
        if not settings.database_url:
            embedded.stop_postgres()
    print(f"self-test passed: PostgreSQL {found.server}, pgvector {found.vector} ({selftest.cpu_flags()} here)")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from collab.kit import embedded
    from collab.kit.db.migrate import migrate

    settings = get_settings()
    settings.require_servers(redis=False)
    url = settings.database_url or embedded.start_postgres(settings.data_dir)
    applied = asyncio.run(migrate(url))
    print(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))
    return 0


def _set_plan(args: argparse.Namespace) -> int:
    from collab.kit.errors import ApiError
    from collab.kit.services import build_services, close_services
    from collab.workspaces.service import set_plan

    async def go() -> int:
        svc = await build_services(get_settings())
        try:
            await set_plan(svc, workspace_id=args.workspace_id, plan=args.plan)
        except ApiError as exc:
            print(exc.message, file=sys.stderr)
            return 1
        finally:
            await close_services(svc)
        print(f"workspace {args.workspace_id} is now on the {args.plan} plan")
        return 0

    return asyncio.run(go())


def _eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from collab.extraction import evaluate

    mode = "record" if args.record else "replay" if args.replay else "live"
    if args.provider == "fake" and mode != "live":
        print("--record/--replay need a real provider", file=sys.stderr)
        return 2
    if args.compare and mode != "live":
        print("--compare calls the provider (or --provider fake): cassettes hold one version's answers",
              file=sys.stderr)
        return 2
    if args.compare and len(args.compare) > 2:
        print("--compare takes two prompts directories, or one report written by --report", file=sys.stderr)
        return 2
    return evaluate.main(provider=args.provider, mode=mode, compare=tuple(args.compare) if args.compare else None,
                         model=args.model, report=Path(args.report) if args.report else None)


def _eval_agents(args: argparse.Namespace) -> int:
    from collab.agents import evaluate

    return evaluate.main(provider=args.provider, labelled=args.set,
                         compare=tuple(args.compare) if args.compare else None, as_json=args.json, model=args.model)


def _eval_search(args: argparse.Namespace) -> int:
    from pathlib import Path

    from collab.judgments import evaluate

    if args.memory:
        from collab.memory import evaluate as memory_evaluate

        return memory_evaluate.main(provider=args.provider, model=args.model,
                                    set_path=Path(args.set) if args.set else None, as_json=args.json,
                                    queries=args.queries, judgments=args.judgments,
                                    split=None if args.split == "all" else args.split)
    if args.provider:
        print("--provider answers ask and suggest: it needs --memory", file=sys.stderr)
        return 2
    return evaluate.main(model=args.model, set_path=Path(args.set) if args.set else None, as_json=args.json,
                         queries=args.queries, judgments=args.judgments, bf16=args.bf16,
                         split=None if args.split == "all" else args.split)


def _reembed(args: argparse.Namespace) -> int:
    """Spread over the workers (the default), or all in this process (--in-process)."""
    if args.in_process:
        return _reembed_here(args)
    from collab.judgments import reembed
    from collab.kit.services import build_services, close_services

    async def go() -> int:
        svc = await build_services(get_settings())
        try:
            if args.stop:
                stopped = await reembed.stop(svc, model=_model_name(args.model), only=args.api_key)
                print("stopped; the same command without --stop resumes it" if stopped else "no re-embed of "
                      f"{args.model} is running" + (f" for {args.api_key}" if args.api_key else ""))
                return 0
            name, source, dimensions = await _dimensions(svc, args.model)
            run = await reembed.start(svc, model=name, source=source, dimensions=dimensions, only=args.api_key,
                                      kinds=(args.kind, ) if args.kind else ("review", "content"),
                                      batch_size=args.batch_size, activate=args.activate, parallel=args.parallel,
                                      range_size=args.range_size)
            print(
                f"re-embed {run['id']}: {run['total']} judgment(s) in {run['ranges']} range(s) for the workers' "
                f"bulk lane" + (f", resumed ({run['resumed']})" if run["resumed"] else ""), flush=True)
            return 0 if args.detach else await _follow(svc, run)
        finally:
            await close_services(svc)

    return asyncio.run(go())


def _model_name(setting: str) -> str:
    from collab.embeddings import catalog

    return catalog.FAST if setting == "default" else setting.rstrip("/").rsplit("/", 1)[-1]


async def _dimensions(svc, setting: str) -> tuple[str, str, int]:
    """(name, source, vector size) of a model setting: a shipped or registered model's without loading it (a
    registered one keeps the source it was registered with), else loaded to learn its size."""
    from collab.embeddings import catalog, registry
    from collab.embeddings.model import load

    name = _model_name(setting)
    async with svc.pool.connection() as conn:
        row = await registry.model_row(conn, model=name)
    if row is not None and not Path(setting).is_dir():
        return name, row["source"], row["dimensions"]
    if name in catalog.MODELS:
        return name, name, catalog.MODELS[name].dimensions
    embedder = await asyncio.to_thread(load, setting, None, cache_dir=svc.settings.models_dir)
    return embedder.name, setting, embedder.dimensions


async def _follow(svc, run: dict) -> int:
    """One progress bar over the run's ranges (judgments done, texts/s, workers, ETA) until it ends; Ctrl-C stops
    the run after each worker's current batch."""
    from tqdm import tqdm

    from collab.judgments import reembed

    bar = tqdm(total=run["total"], initial=run["judgments_done"], unit="judgment", desc=f"re-embed {run['model']}")
    started, first = time.monotonic(), run["embedded"]
    try:
        while run["state"] not in ("done", "failed", "stopped"):
            await asyncio.sleep(0.5)
            run = await reembed.progress(svc, run["id"])
            bar.update(min(run["judgments_done"], run["total"]) - bar.n)
            rate = (run["embedded"] - first) / max(time.monotonic() - started, 1e-9)
            bar.set_postfix_str(f"{rate:.0f} texts/s, {run['workers']} worker(s), {run['state']}")
            if run["workers"] == 0 and run["state"] == "running" and time.monotonic() - started > 30 and not bar.n:
                bar.write("no worker has taken a range yet: is a worker serving the bulk lane? (--in-process runs "
                          "it here)")
                started = time.monotonic()
    except (KeyboardInterrupt, asyncio.CancelledError):
        await reembed.stop(svc, model=run["model"], only=run["api_key_id"])
        bar.close()
        print("stopped after the current batches; the same command resumes it")
        return 130
    bar.close()
    seconds = time.monotonic() - started
    print(f"re-embed {run['state']}: {run['embedded']} text(s) embedded over {run['judgments_done']} judgment(s)"
          f", {run['knowledge'] or 0} knowledge text(s), in {seconds:.1f} s" +
          (f"; search now uses {run['model']}" if run["state"] == "done" and run["activate"] else "") +
          (f": {run['error']}" if run["error"] else ""))
    return 0 if run["state"] == "done" else 1


def _reembed_here(args: argparse.Namespace) -> int:
    from collab.embeddings.model import load
    from collab.judgments.reembed import activate_model, reembed
    from collab.kit.services import build_services, close_services
    from collab.knowledge.reembed import reembed_knowledge

    async def go() -> dict:
        svc = await build_services(get_settings())
        try:
            embedder = await asyncio.to_thread(load, args.model, None, "bf16" if args.bf16 else "auto",
                                               cache_dir=svc.settings.models_dir)
            kinds = (args.kind, ) if args.kind else ("review", "content")
            counts = await reembed(svc, embedder, source=args.model, kinds=kinds, batch_size=args.batch_size,
                                   only=args.api_key)
            # Knowledge before the switch: its search and rules must not go empty meanwhile.
            knowledge = await reembed_knowledge(svc, embedder, batch_size=args.batch_size, only=args.api_key)
            if args.activate:
                await activate_model(svc, embedder, only=args.api_key)
            return {**counts, "knowledge": knowledge["embedded"]}
        finally:
            await close_services(svc)

    started = time.monotonic()
    counts = asyncio.run(go())
    seconds = time.monotonic() - started
    print(f"re-embedded {counts['embedded']} text(s), {counts['skipped']} unchanged,"
          f" over {counts['judgments']} judgment(s), and {counts['knowledge']} knowledge text(s), in {seconds:.1f} s"
          f" ({counts['embedded'] / max(counts.get('seconds', seconds), 1e-9):.0f} texts/s while embedding)")
    return 0


def _models_assemble(args: argparse.Namespace) -> int:
    """Make every shipped model whose packages are installed ready offline (make install and the image run it)."""
    from collab.embeddings import catalog

    for model in catalog.MODELS.values():
        if not catalog.installed(model.name):
            print(f"collab: {model.name}: not installed (requirements-models.lock)", file=sys.stderr)
            continue
        try:
            folder = model.folder()
        except catalog.ModelUnavailable as refused:
            print(f"collab: {refused}", file=sys.stderr)
            return 1
        print(f"collab: {model.name} ready ({model.dimensions} dims) in {folder}")
    return 0


def _models_list(args: argparse.Namespace) -> int:
    """The models this server offers, which one is active, and how many keys chose each."""
    from collab.embeddings import registry
    from collab.judgments.reembed import choices
    from collab.kit.services import build_services, close_services

    async def go() -> tuple[dict, list[dict]]:
        svc = await build_services(get_settings())
        try:
            async with svc.pool.connection() as conn:
                return await choices(conn), await registry.models(conn)
        finally:
            await close_services(svc)

    offered, registered = asyncio.run(go())
    rows = {r["name"]: r for r in registered}
    for name, choice in sorted(offered.items()):
        row = rows.get(name, {})
        flags = ", ".join(f for f, on in (("active", row.get("active")), ("filling", row.get("filling")), ("registered",
                                                                                                           bool(row)))
                          if on)
        print(f"{name:32} {choice['dimensions']:4} dims  {row.get('keys', 0):5} key(s) chose it  {flags or '-'}"
              f"  {choice['role']}")
    return 0


def _backfill(args: argparse.Namespace) -> int:
    from collab.judgments.reembed import backfill
    from collab.kit.services import build_services, close_services

    async def go() -> int:
        svc = await build_services(get_settings())
        try:
            return await backfill(svc, batch_size=args.batch_size, only=args.api_key)
        finally:
            await close_services(svc)

    print(f"re-derived judgments from {asyncio.run(go())} activit(ies)")
    return 0


def _wait_healthy(url: str, child: subprocess.Popen, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def _run(args: argparse.Namespace) -> int:
    """Start embedded servers (unless configured), migrate, then the API and one worker; Ctrl-C stops all."""
    from collab.kit import embedded
    from collab.kit.services import redis_target

    settings = get_settings()
    print(f"collab: starting (data in {settings.data_dir})", flush=True)
    database_url = _prepare(settings)
    redis = None if redis_target(settings) else embedded.EmbeddedRedis(settings.data_dir)
    settings.resolved_secret_key()  # create the dev secret once, before two children race for it
    env = dict(os.environ, COLLAB_DATABASE_URL=database_url)
    if redis is not None:
        env["COLLAB_REDIS_URL"] = _started(redis)
    local = None
    if settings.local_model:  # one per host, for every API and worker process (README, Use your own models)
        from collab.llm import local as local_model

        print(f"collab: loading the local model {settings.local_model}", flush=True)
        try:
            local = local_model.start(settings)
        except Misconfigured:
            if redis is not None:
                redis.stop()
            embedded.stop_postgres()
            raise
        env |= local.env()
    # Children get their own session: Ctrl-C reaches only this supervisor, which stops each child once.
    # The API serves on every core (`collab api --workers`, one per core unless set); then the worker processes.
    api = ["api"] + (["--workers", str(args.workers)] if getattr(args, "workers", None) else [])
    roles = [api] + [["worker"]] * settings.run_workers
    children = [
        subprocess.Popen([sys.executable, "-m", "collab.cli", *role], env=env, start_new_session=True) for role in roles
    ]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    base = f"http://{settings.host}:{settings.port}"
    code = 0
    try:
        if _wait_healthy(base, children[0]):
            print(f"collab is running at {base}  (API docs: {base}/docs; Ctrl-C stops everything)", flush=True)
            print(f"console: {base}/console  (sign in with the workspace id and workspace auth token)", flush=True)
            if local is not None:
                print(f"local model: openai-compatible/{local.model} at {local.url}", flush=True)
        while not stopping:
            if any(c.poll() is not None for c in children):
                print("collab: a process exited; stopping", file=sys.stderr, flush=True)
                code = 1
                break
            time.sleep(0.2)
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
        for child in children:
            try:
                child.wait(15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if local is not None:
            local.stop()
        if redis is not None:
            redis.stop()
        embedded.stop_postgres()
        print("collab: stopped", flush=True)
    return code


def _config_doc(args: argparse.Namespace) -> int:
    from collab.kit.settings_doc import render

    sys.stdout.write(render())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="collab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="API + worker on the embedded defaults (make run)")
    run.add_argument("--workers", type=int, help="API processes (default COLLAB_API_WORKERS, else one per core)")
    run.set_defaults(fn=_run)
    api = sub.add_parser("api", help="serve the HTTP API")
    api.add_argument("--host")
    api.add_argument("--port", type=int)
    api.add_argument("--workers", type=int,
                     help="API processes on one port (default COLLAB_API_WORKERS, else one per core)")
    api.set_defaults(fn=_api)
    worker_cmd = sub.add_parser("worker", help="run a background worker (every lane, or one)")
    worker_cmd.add_argument(
        "--lane", choices=["all", "search", "ai", "extraction", "bulk"], default="all",
        help="search: judgment search; ai: Ask AI; extraction: agent extraction; bulk: everything else and the crons")
    worker_cmd.add_argument(
        "--concurrency", type=int,
        help="jobs at once in the bulk lane (default COLLAB_WORKER_MAX_JOBS); more processes: "
        "run more `collab worker`s (COLLAB_RUN_WORKERS under `collab run`)")
    worker_cmd.set_defaults(fn=_worker)
    sub.add_parser("migrate", help="apply pending database migrations").set_defaults(fn=_migrate)
    sub.add_parser(
        "selftest",
        help="run the database's vector self-test again (clears a recorded failure)").set_defaults(fn=_selftest)
    workspace = sub.add_parser("workspace", help="operator commands on workspaces")
    wsub = workspace.add_subparsers(dest="action", required=True)
    plan = wsub.add_parser("set-plan", help="set a workspace's plan")
    plan.add_argument("workspace_id")
    plan.add_argument("plan", choices=["paid", "free"])
    plan.set_defaults(fn=_set_plan)
    reembed = sub.add_parser(
        "reembed", help="embed every judgment (and knowledge text) with a model: ranges the workers share, resumable")
    reembed.add_argument(
        "--model", required=True, help="a shipped model (all-MiniLM-L6-v2, all-mpnet-base-v2), 'default' (what earlier "
        "releases registered: the MiniLM model) or a sentence-transformers folder")
    reembed.add_argument("--kind", choices=["review", "content"])
    reembed.add_argument("--batch-size", type=int, default=256, choices=range(1, 4097), metavar="1..4096")
    reembed.add_argument("--activate", action="store_true",
                         help="then switch search to this model atomically (only the --api-key's, with one)")
    reembed.add_argument("--api-key", help="only this tenant's judgments (and its own model choice)")
    reembed.add_argument("--parallel", type=int, default=4, help="ranges worked at once (bulk-lane slots held)")
    reembed.add_argument("--range-size", type=int, default=1000, help="judgments per range")
    reembed.add_argument("--detach", action="store_true", help="start (or resume) it and return at once")
    reembed.add_argument("--stop", action="store_true",
                         help="stop it after each worker's current batch; running it again resumes")
    reembed.add_argument("--in-process", action="store_true",
                         help="embed everything in this process instead of the workers (one machine, no worker)")
    reembed.add_argument(
        "--bf16", action="store_true",
        help="with --in-process: run the model in bfloat16 (the default where the CPU computes bf16 "
        "natively)")
    reembed.set_defaults(fn=_reembed)
    models = sub.add_parser("models", help="the embedding models this server ships and offers")
    msub = models.add_subparsers(dest="action", required=True)
    msub.add_parser("assemble",
                    help="make the shipped models ready offline (checked by sha256)").set_defaults(fn=_models_assemble)
    msub.add_parser(
        "list",
        help="the models keys may choose, the active one, and how many keys chose each").set_defaults(fn=_models_list)
    judgments = sub.add_parser("judgments", help="judgment memory maintenance")
    jsub = judgments.add_subparsers(dest="action", required=True)
    fill = jsub.add_parser("backfill", help="re-derive judgments from the activity log")
    fill.add_argument("--batch-size", type=int, default=256)
    fill.add_argument("--api-key", help="only this tenant's activities")
    fill.set_defaults(fn=_backfill)
    evaluation = sub.add_parser("eval", help="evaluate prompts and search offline or live")
    esub = evaluation.add_subparsers(dest="target", required=True)
    extraction = esub.add_parser("extraction", help="run extraction over fixtures/extraction and score it")
    extraction.add_argument("--provider", choices=["openai", "claude", "gemini", "fake"], default="openai")
    how = extraction.add_mutually_exclusive_group()
    how.add_argument("--record", action="store_true", help="call the provider and store its answers as cassettes")
    how.add_argument("--replay", action="store_true", help="answer from the stored cassettes, offline")
    extraction.add_argument(
        "--compare", nargs="+", metavar="A [B]",
        help="two prompts directories ('current' = prompts/), scored side by side; or one report written by "
        "--report, shown beside this run")
    extraction.add_argument(
        "--model", help="a model on a server you run, ollama/<model> or openai-compatible/<model> (at "
        "COLLAB_OLLAMA_BASE_URL or COLLAB_OPENAI_COMPATIBLE_BASE_URL), or `local`: the embedded model of "
        "COLLAB_LOCAL_MODEL, started for the eval")
    extraction.add_argument("--report", help="also write the run as JSON here (the model that answered, each row)")
    extraction.set_defaults(fn=_eval)
    agents = esub.add_parser("agents", help="a review agent's findings recall and precision over fixtures/agents")
    agents.add_argument(
        "--provider", choices=["openai", "claude", "gemini", "fake"],
        help="the provider when the agent names none (default: COLLAB_EXTRACTION_DEFAULT_PROVIDER); "
        "fake: an offline stand-in model")
    agents.add_argument("--set", help="one labelled set (a folder name under fixtures/agents); default: all")
    agents.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="two agent definitions (agents/create JSON files; 'current' = each set's agent.json)")
    agents.add_argument("--json", action="store_true", help="print the report as JSON")
    agents.add_argument("--model", help="a model on a server you run, as for `eval extraction --model`")
    agents.set_defaults(fn=_eval_agents)
    search = esub.add_parser("search", help="recall@1/3/10, MRR and latency of judgment search on a labelled set")
    search.add_argument(
        "--model", help="a candidate embedding model (as for reembed); default: the active one. With --memory, "
        "ollama/<model>, openai-compatible/<model> or `local` names the model that answers ask and suggest instead")
    search.add_argument(
        "--set", help=("a labelled set directory (judgments.jsonl + queries.jsonl); default: "
                       "fixtures/search, then fixtures/search/harder"))
    search.add_argument(
        "--split", choices=["report", "tune", "all"], default="report",
        help=("which half of a split set's queries: report (held out, the default), tune (the half "
              "to tune on) or all"))
    search.add_argument("--json", action="store_true", help="print the report as JSON")
    search.add_argument("--queries", type=int, help="only this many queries (taken round-robin over the kinds)")
    search.add_argument("--judgments", type=int, help="only this many judgments (the queries' relevant ones first)")
    search.add_argument("--bf16", action="store_true", help="run a candidate model in bfloat16")
    search.add_argument(
        "--memory", action="store_true",
        help="measure memory/ask and memory/suggest instead: citation precision, grounding, suggestion accuracy "
        "and abstention on fixtures/search/unanswerable.jsonl")
    search.add_argument(
        "--provider", choices=["openai", "claude", "gemini", "fake"],
        help="with --memory, the provider that answers (default: COLLAB_MEMORY_PROVIDER); fake: an offline "
        "stand-in that checks retrieval and the citation check, not a model")
    search.set_defaults(fn=_eval_search)
    sub.add_parser(
        "config-doc",
        help="print docs/configuration.md, rendered from the settings' descriptions").set_defaults(fn=_config_doc)
    args = parser.parse_args(argv)
    settings = get_settings()
    collab_logging.setup(settings.log_level, settings.log_json)
    from collab.kit.db.selftest import SelfTestFailed

    try:
        return args.fn(args)
    except (SelfTestFailed, Misconfigured) as exc:
        print(f"collab: refusing to start: {exc}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
