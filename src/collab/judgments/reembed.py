"""Batch maintenance of judgment memory: re-embed with a model (resumable) and backfill from activities."""

import logging
import time
from typing import Any, Callable

import psycopg
from tqdm import tqdm

from collab.embeddings import catalog, registry
from collab.embeddings.model import Embedder
from collab.judgments import derive
from collab.judgments import repository as repo
from collab.judgments.tasks import derive_batch, embed_rows, tenant_models
from collab.kit.crypto import new_id
from collab.kit.errors import invalid, issue
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.workspaces import config

log = logging.getLogger("collab.reembed")


async def reembed(svc: Services, embedder: Embedder, *, source: str, kinds: tuple[str, ...] = registry.KINDS,
                  batch_size: int = 256, activate: bool = False, max_batches: int | None = None,
                  only: str | None = None, progress: Callable | None = tqdm) -> dict[str, float]:
    """Embed every judgment with `embedder` beside the vectors of other models.

    Each batch commits on its own and rows whose text hash is unchanged are skipped, so a run that
    was killed resumes where it stopped. `activate` builds the model's indexes and switches search to it.
    """
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await registry.register(conn, model=embedder.name, source=source, dimensions=embedder.dimensions)
        total = await repo.count_judgments(conn, only=only)
    runtime = getattr(embedder.model, "label", "torch")
    log.info("re-embedding %s judgment(s) with %s (%s)", total, embedder.name, runtime)
    bar = progress(total=total, unit="judgment", desc=f"re-embed {embedder.name} [{runtime}]") if progress else None
    counts: dict[str, float] = {"judgments": 0, "embedded": 0, "skipped": 0}
    after, batches = None, 0
    started = time.monotonic()
    while max_batches is None or batches < max_batches:
        async with svc.pool.connection() as conn:
            rows = await repo.judgments_after(conn, after=after, limit=batch_size, only=only)
            if not rows:
                break
        texts = sum(1 for row in rows for kind in kinds if kind in derive.texts(row))
        written = await embed_rows(svc, embedder, rows, kinds=kinds)
        counts["embedded"] += written
        counts["skipped"] += texts - written
        counts["judgments"] += len(rows)
        after = (rows[-1]["api_key_id"], rows[-1]["id"])
        batches += 1
        if bar:
            bar.update(len(rows))
    if bar:
        bar.close()
    counts["seconds"] = round(time.monotonic() - started, 3)
    if activate:
        await activate_model(svc, embedder, only=only)
    return counts


async def activate_model(svc: Services, embedder: Embedder, *, only: str | None = None) -> None:
    """Switch search (judgments and knowledge) to the embedder's model, its indexes built: every key's that follows
    the active model, or only this key's (its own choice from now on)."""
    if only is not None:
        await registry.build_indexes(svc.pool, model=embedder.name, dimensions=embedder.dimensions)
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            if only is None:
                await registry.activate(conn, model=embedder.name)
            else:
                await registry.set_key_model(conn, api_key_id=only, model=embedder.name)
    log.info("search now uses %s%s", embedder.name, f" for {only}" if only else "")


async def backfill(svc: Services, *, batch_size: int = 256, only: str | None = None,
                   progress: Callable | None = tqdm) -> int:
    """Re-derive every judgment from the activity log (and embed what changed, with each key's model); returns
    activities read."""
    ctx: dict[str, Any] = {"svc": svc}
    seen, after = 0, None
    bar = progress(unit="activity", desc="backfill judgments") if progress else None
    while True:
        async with svc.pool.connection() as conn:
            rows = await repo.activities_after(conn, after=after, limit=batch_size, only=only)
        if not rows:
            break
        by_tenant: dict[str, list[str]] = {}
        for row in rows:
            by_tenant.setdefault(row["api_key_id"], []).append(row["id"])
        for api_key_id, ids in by_tenant.items():
            first, filling = await tenant_models(ctx, api_key_id)
            await derive_batch(svc, first, api_key_id=api_key_id, activity_ids=ids, also=filling)
        seen += len(rows)
        after = (rows[-1]["api_key_id"], rows[-1]["id"])
        if bar:
            bar.update(len(rows))
    if bar:
        bar.close()
    return seen


# A re-embed spread over workers (ADR 0062): ranges of the key order that any worker takes from the bulk lane
# (tasks.reembed_range), one cursor each, so the run stops and resumes without losing or repeating a batch.
RANGE_SIZE = 1000


async def start(svc: Services, *, model: str, source: str, dimensions: int, only: str | None = None,
                kinds: tuple[str, ...] = registry.KINDS, batch_size: int = 256, activate: bool = False,
                parallel: int = 4, range_size: int = RANGE_SIZE) -> dict[str, Any]:
    """Start a re-embed of `model` over one key's judgments (`only`) or every key's, or resume the one that has not
    ended: its ranges go to the bulk lane, `parallel` at a time. New judgments of the scope are embedded with the
    model too until it finishes. Returns the run (get_run's row)."""
    for first_try in (True, False):
        try:
            run_id = await _start(svc, model=model, source=source, dimensions=dimensions, only=only, kinds=kinds,
                                  batch_size=batch_size, activate=activate, parallel=parallel, range_size=range_size)
            break
        except psycopg.errors.UniqueViolation:  # another start made the run first: resume that one
            if not first_try:
                raise
    return await progress(svc, run_id)


async def _start(svc: Services, *, model: str, source: str, dimensions: int, only: str | None, kinds: tuple[str, ...],
                 batch_size: int, activate: bool, parallel: int, range_size: int) -> str:
    async with transaction(svc.pool, svc.redis) as tx:
        await registry.register(tx.conn, model=model, source=source, dimensions=dimensions)
        run = await repo.live_run(tx.conn, model=model, only=only)
        if run is None:
            run_id = new_id("rmb_")
            total = await repo.count_judgments(tx.conn, only=only)
            bounds = await repo.range_bounds(tx.conn, step=range_size, only=only)
            await repo.insert_run(tx.conn, id=run_id, model=model, only=only, kinds=list(kinds), batch_size=batch_size,
                                  activate=activate, total=total, bounds=bounds)
        else:
            run_id = run["id"]
            await repo.resume_run(tx.conn, run_id=run_id, activate=activate)
        if only is not None:
            await registry.set_key_next(tx.conn, api_key_id=only, model=model)
        else:
            await registry.set_filling(tx.conn, model=model, filling=True)
        left = await repo.ranges_left(tx.conn, run_id=run_id, lease_s=0)
        finishing = run is not None and run["state"] == "finishing"  # its finish job is queued (or running)
        if left["undone"] and not finishing:
            for _ in range(min(max(1, parallel), left["undone"])):
                await tx.enqueue("reembed_range", api_key_id=only, run_id=run_id)
        elif not finishing and await repo.set_run_state(tx.conn, run_id=run_id, state="finishing",
                                                        unless=("finishing", )):
            await tx.enqueue("reembed_finish", api_key_id=only, run_id=run_id)
    return run_id


async def stop(svc: Services, *, model: str, only: str | None = None) -> dict[str, Any] | None:
    """Stop the scope's re-embed of `model` after each worker's current batch (None when none is running)."""
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            run = await repo.live_run(conn, model=model, only=only)
            if run is None or run["state"] != "running":
                return None
            await repo.set_run_state(conn, run_id=run["id"], state="stopped")
    return await progress(svc, run["id"])


async def progress(svc: Services, run_id: str) -> dict[str, Any]:
    """A run as `collab reembed` shows it: state, judgments done of total, texts embedded, ranges, workers."""
    async with svc.pool.connection() as conn:
        row = await repo.get_run(conn, run_id=run_id)
    assert row is not None
    return row


# A key's own choice (workspace/apikeyconfig/update `embeddingModel`): the switch is a re-embed of its judgments and
# knowledge with the new model, one range at a time (one bulk slot), that activates for the key when it ends.
# Searches use the old model until then, so no search fails or goes empty meanwhile.
async def choices(conn) -> dict[str, dict[str, Any]]:
    """The models a key may choose: the shipped ones installed here, and any the operator registered."""
    found = {
        m.name: {"name": m.name, "dimensions": m.dimensions, "role": m.role}
        for m in catalog.MODELS.values() if catalog.installed(m.name)
    }
    for row in await registry.models(conn):
        found.setdefault(row["name"], {"name": row["name"], "dimensions": row["dimensions"], "role": "registered"})
    return found


async def offered(svc: Services, model: str) -> dict[str, Any]:
    """The choice `model` (INVALID_ARGUMENT naming the others when this server does not offer it)."""
    async with svc.pool.connection() as conn:
        found = await choices(conn)
    if model not in found:
        raise invalid(f"embeddingModel must be one of {', '.join(sorted(found))}.",
                      [issue(["embeddingModel"], "Not a model this server offers")])
    return found[model]


async def choose(svc: Services, *, api_key_id: str, model: str) -> None:
    """Switch a key to `model` (one `offered` has checked): nothing when it already searches with it, else its
    re-embed (started or resumed), one range at a time."""
    async with svc.pool.connection() as conn:
        current = await registry.key_models(conn, api_key_id=api_key_id)
        known = await registry.model_row(conn, model=model)
        running = [r["model"] for r in await repo.live_runs(conn, only=api_key_id) if r["state"] == "running"]
    for name in running:
        if name != model:  # one switch at a time: the earlier one is superseded
            await stop(svc, model=name, only=api_key_id)
    if current is not None and current["model"] == model:  # back to the model it searches with: nothing to fill
        async with svc.pool.connection() as conn:
            await registry.set_key_next(conn, api_key_id=api_key_id, model=None)
        return
    source, dimensions = ((known["source"], known["dimensions"]) if known else
                          (model, catalog.MODELS[model].dimensions))  # offered: registered, or shipped
    await start(svc, model=model, source=source, dimensions=dimensions, only=api_key_id, activate=True, parallel=1)


async def choice_view(conn, *, api_key_id: str) -> dict[str, Any]:
    """The key's model, the choices, and the switch under way (null when none)."""
    current = await registry.key_models(conn, api_key_id=api_key_id)
    runs = await repo.live_runs(conn, only=api_key_id)
    pending = None
    if runs:
        run = await repo.get_run(conn, run_id=runs[0]["id"])
        assert run is not None
        pending = {
            "model": run["model"], "state": run["state"], "judgmentsDone": run["judgments_done"],
            "judgments": run["total"], "startedAt": int(run["created_at"].timestamp() * 1000)
        }
    return {
        "embeddingModel": current["model"] if current else None, "embeddingModels": sorted(
            (await choices(conn)).values(), key=lambda m: m["name"]), "embeddingModelSwitch": pending
    }


config.KEY_SETTINGS.append(config.KeySetting(check=offered, apply=choose, view=choice_view))
