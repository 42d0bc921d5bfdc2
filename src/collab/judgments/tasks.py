"""Worker jobs: derive judgments from activities and embed them; search them."""

import asyncio
import json
import logging
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from redis.exceptions import RedisError

from collab.embeddings import catalog, registry
from collab.embeddings.batching import encode_query
from collab.embeddings.model import Embedder, content_hash, describe, load, loaded
from collab.judgments import derive, search
from collab.judgments import repository as repo
from collab.judgments.schemas import SearchJudgments
from collab.kit import usage
from collab.kit.crypto import new_id
from collab.kit.jobs import PermanentError, job, past, transaction
from collab.kit.services import Services

log = logging.getLogger("collab.judgments")
# Threads of their own, never the loop's default executor (which searches must not queue behind): bulk encodes
# (each one already spreads over every core inside the runtime, so two at a time is plenty), model loads (one at
# a time). Query encodes have theirs (embeddings/batching.py).
_BULK_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bulk-encode")
_LOAD_THREADS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="model-load")


class ActiveModel:
    """The process's embedder of the active model, shared by every lane and job of a worker process.

    The worker puts one in its ctx at startup: arq gives each job a copy of ctx, so a value a job stores there is
    lost when it ends, while this mutable holder is the same object in every copy.
    """

    def __init__(self, *, upgrades: bool = False) -> None:
        self.upgrades = upgrades  # a worker's: builds the indexes an upgrade wants (a short-lived CLI's does not)
        self.embedder: Embedder | None = None
        self.loaded: tuple[str | None, str | None] | None = None  # (model setting, name) it was loaded as
        self.read_at = float("-inf")
        self.indexed: str | None = None  # the model whose indexes were found to suit this server
        self.upgrade: asyncio.Future | None = None  # the background index upgrade, while one runs
        self.lock = asyncio.Lock()  # one registry read, load and registration at a time per process
        # Per API key: (when read, its model row from registry.key_models); bounded, oldest dropped first.
        self.keys: dict[str, tuple[float, dict]] = {}

    async def stop(self) -> None:
        """Cancel an index upgrade in progress (the next start builds again; the old indexes serve meanwhile)."""
        if self.upgrade is not None and not self.upgrade.done():
            self.upgrade.cancel()
            await asyncio.gather(self.upgrade, return_exceptions=True)


async def active_embedder(ctx: dict) -> Embedder:
    """The embedder of the model search uses now (re-read every few seconds, so an activation spreads)."""
    svc: Services = ctx["svc"]
    held: ActiveModel = ctx.setdefault("active_model", ActiveModel())  # callers outside a worker get their own
    if held.embedder is not None and (time.monotonic() - held.read_at < svc.settings.embedding_refresh_s
                                      or held.lock.locked()):
        return held.embedder  # fresh, or another job is re-reading it right now: no need to wait for that
    async with held.lock:
        if held.embedder is not None and time.monotonic() - held.read_at < svc.settings.embedding_refresh_s:
            return held.embedder
        async with svc.pool.connection() as conn:
            row = await registry.active(conn)
        if row is None:
            embedder = await _load(held, svc.settings.embedding_model, None, svc)
            async with svc.pool.connection() as conn:
                async with conn.transaction():
                    await registry.register(conn, model=embedder.name, source=_source(svc),
                                            dimensions=embedder.dimensions)
        else:
            embedder = await _load(held, row["source"], row["name"], svc)
            await _upgrade_indexes(held, svc, model=row["name"], dimensions=row["dimensions"])
        held.embedder, held.read_at = embedder, time.monotonic()
        return embedder


async def _upgrade_indexes(held: ActiveModel, svc: Services, *, model: str, dimensions: int) -> None:
    """Until the model's indexes suit this server (after an upgrade), have them built in the background; jobs go on
    meanwhile, and searches use the old index (registry.upgrade_indexes). Checked at each registry read."""
    if not held.upgrades or held.indexed == model or (held.upgrade is not None and not held.upgrade.done()):
        return
    async with svc.pool.connection() as conn:
        if await registry.indexed(conn, model):
            held.indexed = model
            return
    held.upgrade = asyncio.ensure_future(
        registry.upgrade_indexes(svc.pool, model=model, dimensions=dimensions,
                                 grace_s=2 * svc.settings.embedding_refresh_s))
    held.upgrade.add_done_callback(_log_failure)


def _log_failure(task: asyncio.Future) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("index upgrade failed (tried again at the next registry read)", exc_info=task.exception())


async def _load(held: ActiveModel, setting: str | None, name: str | None, svc: Services) -> Embedder:
    """The embedder for (setting, name): the held one when it is that, else loaded on the load thread."""
    if held.embedder is not None and held.loaded == (setting, name):
        return held.embedder
    loop = asyncio.get_running_loop()
    embedder = await loop.run_in_executor(_LOAD_THREADS, lambda: load(setting, name, cache_dir=svc.settings.models_dir))
    held.loaded = (setting, name)
    await announce(svc, embedder)
    return embedder


def _source(svc: Services) -> str:
    return svc.settings.embedding_model or catalog.DEFAULT


KEYS_HELD = 10_000


async def tenant_models(ctx: dict, api_key_id: str) -> tuple[Embedder, Embedder | None]:
    """(the embedder of the model this API key searches with, that of the model a re-embed is filling for it or
    None): its own choice (ADR 0062), else the deployment's active model; re-read every few seconds per key."""
    svc: Services = ctx["svc"]
    default = await active_embedder(ctx)
    held: ActiveModel = ctx["active_model"]
    known = held.keys.get(api_key_id)
    if known is None or time.monotonic() - known[0] >= svc.settings.embedding_refresh_s:
        async with svc.pool.connection() as conn:
            row = await registry.key_models(conn, api_key_id=api_key_id)
        if len(held.keys) >= KEYS_HELD:
            held.keys.pop(next(iter(held.keys)))
        held.keys.pop(api_key_id, None)
        known = held.keys[api_key_id] = (time.monotonic(), row or {"model": default.name, "next": None})
    row = known[1]
    first = default if row["model"] == default.name else await named(svc, row["model"], row["source"])
    return first, (await named(svc, row["next"], row["next_source"]) if row["next"] else None)


async def tenant_embedder(ctx: dict, api_key_id: str) -> Embedder:
    """The embedder of the model this API key searches with (tenant_models)."""
    return (await tenant_models(ctx, api_key_id))[0]


async def named(svc: Services, name: str, source: str) -> Embedder:
    """A registered model's embedder, loaded once per process (on the load thread)."""
    embedder = loaded(source, name)
    if embedder is None:
        loop = asyncio.get_running_loop()
        embedder = await loop.run_in_executor(_LOAD_THREADS,
                                              lambda: load(source, name, cache_dir=svc.settings.models_dir))
    if embedder.name not in _ANNOUNCED:
        await announce(svc, embedder)
    return embedder


EMBEDDERS_KEY = "collab:embedders"
_ANNOUNCED: set[str] = set()  # the models this process has told /readyz of
EMBEDDERS_KEPT_S = 86_400  # a process that loaded no model for a day (or is gone) drops out of /readyz


async def announce(svc: Services, embedder: Embedder) -> None:
    """Tell /readyz which model this process holds, on which runtime and device (a field per process and model);
    entries older than a day are dropped then."""
    if svc.redis is None:
        return
    _ANNOUNCED.add(embedder.name)
    where, now = f"{socket.gethostname()}:{os.getpid()}", int(time.time())
    detail = {**describe(embedder), "worker": where, "at": now}
    try:
        await svc.redis.hset(EMBEDDERS_KEY, f"{where}:{embedder.name}", json.dumps(detail))  # type: ignore[misc]
        stale = [
            k for k, v in (await svc.redis.hgetall(EMBEDDERS_KEY)).items()  # type: ignore[misc]
            if json.loads(v).get("at", 0) < now - EMBEDDERS_KEPT_S
        ]
        if stale:
            await svc.redis.hdel(EMBEDDERS_KEY, *stale)  # type: ignore[misc]
    except (RedisError, OSError, ValueError) as exc:  # informational: never a reason to fail the job that loaded it
        log.info("could not announce the embedder: %s", exc)


async def embed_judgments(svc: Services, embedder: Embedder, *, api_key_id: str, judgments: dict[str, dict],
                          kinds: tuple[str, ...] = registry.KINDS, force: bool = False) -> int:
    """Embed the texts (of `kinds`) of one tenant's judgments whose text changed (every one with `force`); returns
    vectors written."""
    if not judgments:
        return 0
    async with svc.pool.connection() as conn:
        stored = await repo.embedding_hashes(conn, api_key_id=api_key_id, model=embedder.name, ids=list(judgments))
    if force:
        stored = {key: "" for key in stored}  # no hash matches: every text is encoded again
    todo: list[tuple[str, str, str, str]] = []
    stale: list[tuple[str, str]] = []
    for judgment_id, judgment in judgments.items():
        texts = derive.texts(judgment)
        for kind in kinds:
            if kind not in texts:
                if (judgment_id, kind) in stored:
                    stale.append((judgment_id, kind))
                continue
            digest = content_hash(texts[kind])
            if stored.get((judgment_id, kind)) != digest:
                todo.append((judgment_id, kind, texts[kind], digest))
    # One encode call for the whole batch, shortest texts first (padding per sub-batch stays small).
    todo.sort(key=lambda t: len(t[2]))
    batch = [t[2] for t in todo]
    vectors = await asyncio.get_running_loop().run_in_executor(_BULK_THREADS, embedder.encode, batch) if todo else []
    rows = [{
        "judgment_id": judgment_id, "kind": kind, "content_hash": digest,
        "organization_id": judgments[judgment_id]["organization_id"],
        "document_id": judgments[judgment_id]["document_id"], "embedding": vector
    } for (judgment_id, kind, _, digest), vector in zip(todo, vectors)]
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await repo.upsert_embeddings(conn, api_key_id=api_key_id, model=embedder.name, rows=rows)
            await repo.delete_embeddings(conn, api_key_id=api_key_id, model=embedder.name, keys=stale)
    return len(todo)


@job(timeout=300, max_tries=5)
async def derive_judgments(ctx: dict, *, api_key_id: str, activity_ids: list[str]) -> dict[str, Any]:
    """Turn activities into judgments (or remove them) and embed what changed (with the key's model, and with the
    one a re-embed is filling for it); idempotent."""
    first, filling = await tenant_models(ctx, api_key_id)
    return await derive_batch(ctx["svc"], first, api_key_id=api_key_id, activity_ids=activity_ids, also=filling)


async def derive_batch(svc: Services, embedder: Embedder, *, api_key_id: str, activity_ids: list[str],
                       force: bool = False, also: Embedder | None = None) -> dict[str, Any]:
    """Derive (or remove) the judgments of one tenant's activities and embed what changed (all with `force`), with
    `also` too where a re-embed is filling another model for the key (tenant_models)."""
    ids = list(dict.fromkeys(activity_ids))
    kept: dict[str, dict] = {}
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            found = await repo.activities(conn, api_key_id=api_key_id, ids=ids)
            for activity_id in ids:
                judgment = derive.derive(found[activity_id]) if activity_id in found else None
                if judgment is not None:
                    kept[activity_id] = judgment
            await repo.delete_many(conn, api_key_id=api_key_id, ids=[i for i in ids if i not in kept])
            await repo.upsert_many(conn, api_key_id=api_key_id, judgments=kept)
    usage.count(svc, "judgments_added", api_key_id=api_key_id, n=len(kept))
    written = await embed_judgments(svc, embedder, api_key_id=api_key_id, judgments=kept, force=force)
    if also is not None:
        await embed_judgments(svc, also, api_key_id=api_key_id, judgments=kept, force=force)
    return {"judgments": len(kept), "vectors": written}


@job(lane="bulk", awaited=True, timeout=past("memory_backfill_timeout_s"))
async def backfill_judgments(ctx: dict, *, api_key_id: str, after: str, since: int | None, until: int | None,
                             batch_size: int, force: bool) -> dict[str, Any]:
    """Re-derive one batch of one tenant's activities (memory/backfill/judgments); idempotent, resumable by id."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        ids = await repo.tenant_activities_after(conn, api_key_id=api_key_id, after=after, since=since, until=until,
                                                 limit=batch_size + 1)
    batch = ids[:batch_size]
    first, filling = await tenant_models(ctx, api_key_id)
    done = await derive_batch(svc, first, api_key_id=api_key_id, activity_ids=batch, force=force,
                              also=filling) if batch else {"judgments": 0, "vectors": 0}
    more = len(ids) > batch_size
    return {
        "processed": len(batch), "judgments": done["judgments"], "embedded": done["vectors"],
        "resumeFrom": batch[-1] if more else None, "done": not more
    }


@job(lane="search", awaited=True, timeout=past("search_timeout_s"))
async def embed_query(ctx: dict, *, text: str) -> dict[str, Any]:
    """The query's vector under the active model (the worker holds the model)."""
    embedder = await active_embedder(ctx)
    vector = await encode_query(embedder, text)
    return {"model": embedder.name, "dimensions": embedder.dimensions, "vector": vector}


@job(lane="search", awaited=True, timeout=past("search_timeout_s"))
async def search_judgments(ctx: dict, *, api_key_id: str, data: dict) -> dict[str, Any]:
    """The whole search (search.run) under the active model; an ApiError comes back as its typed failure."""
    request = SearchJudgments.model_validate(data)
    embedder = await tenant_embedder(ctx, api_key_id) if search.needs_model(request) else None
    return await search.run(ctx["svc"], embedder, api_key_id=api_key_id, data=request)


# A re-embed spread over workers (reembed.py starts it; ADR 0062): each job takes one range from the run, walks it
# batch by batch (the cursor committed after each, fenced by the holder's id), then queues a successor while ranges
# are free. A run holds at most its `parallel` bulk slots, however large the corpus.
RANGE_LEASE_S = 120.0


@job(timeout=900, max_tries=5)
async def reembed_range(ctx: dict, *, run_id: str, api_key_id: str | None = None) -> dict[str, Any]:
    """Embed one free range of a re-embed with its model, resumable at its cursor; then pass the run on."""
    svc: Services = ctx["svc"]
    me = f"{socket.gethostname()}:{os.getpid()}/{new_id('rng_')}"  # which process holds it, and which try
    async with svc.pool.connection() as conn:
        run = await repo.get_run(conn, run_id=run_id)
        held = await repo.claim_range(conn, run_id=run_id, me=me, lease_s=RANGE_LEASE_S) if run else None
    if run is None or held is None:
        return {"range": None}
    row = await model_row(svc, run["model"])
    embedder = await named(svc, row["name"], row["source"])
    cursor = (held["cursor_key"], held["cursor_id"]) if held["cursor_key"] is not None else (held["after_key"],
                                                                                             held["after_id"])
    upto, kinds, counts = (held["upto_key"], held["upto_id"]), tuple(run["kinds"]), {"judgments": 0, "embedded": 0}
    while True:
        async with svc.pool.connection() as conn:
            rows = await repo.judgments_between(conn, after=cursor, upto=upto, limit=run["batch_size"],
                                                only=run["api_key_id"])
        written = await embed_rows(svc, embedder, rows, kinds=kinds)
        done = len(rows) < run["batch_size"]
        cursor = (rows[-1]["api_key_id"], rows[-1]["id"]) if rows else cursor
        counts["judgments"] += len(rows)
        counts["embedded"] += written
        async with transaction(svc.pool, svc.redis) as tx:
            state = await repo.advance_range(tx.conn, run_id=run_id, seq=held["seq"], me=me, cursor=cursor,
                                             judgments=len(rows), embedded=written, done=done)
            if state is not None and done:
                await _pass_on(tx, run)
        if state != "running" or done:  # taken over, stopped, or finished
            return {"range": held["seq"], **counts, "done": done and state is not None}


async def embed_rows(svc: Services, embedder: Embedder, rows: list[dict], *, kinds: tuple[str, ...]) -> int:
    """Embed what changed of judgment rows of any tenants (a batch of a re-embed's walk); vectors written."""
    grouped: dict[str, dict[str, dict]] = {}
    for row in rows:
        grouped.setdefault(row["api_key_id"], {})[row["id"]] = row
    written = 0
    for api_key_id, judgments in grouped.items():
        written += await embed_judgments(svc, embedder, api_key_id=api_key_id, judgments=judgments, kinds=kinds)
    return written


async def _pass_on(tx, run: dict) -> None:
    """After a range: a successor while ranges are free; the finish once the last one is done (decided under the
    run's lock, so two ranges ending together finish it once)."""
    await repo.lock_run(tx.conn, run_id=run["id"])
    left = await repo.ranges_left(tx.conn, run_id=run["id"], lease_s=RANGE_LEASE_S)
    if left["free"]:
        await tx.enqueue("reembed_range", api_key_id=run["api_key_id"], run_id=run["id"])
    elif not left["undone"] and await repo.set_run_state(tx.conn, run_id=run["id"], state="finishing",
                                                         unless=("finishing", "done", "failed")):
        await tx.enqueue("reembed_finish", api_key_id=run["api_key_id"], run_id=run["id"])


async def model_row(svc: Services, name: str) -> dict:
    async with svc.pool.connection() as conn:
        row = await registry.model_row(conn, model=name)
    if row is None:
        raise PermanentError(f"model {name!r} is not registered")
    return row
