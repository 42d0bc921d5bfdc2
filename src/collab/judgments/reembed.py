"""Batch maintenance of judgment memory: re-embed with a model (resumable) and backfill from activities."""

import logging
import time
from typing import Callable

from tqdm import tqdm

from collab.embeddings import registry
from collab.embeddings.model import Embedder
from collab.judgments import derive
from collab.judgments import repository as repo
from collab.judgments.tasks import derive_batch, embed_judgments
from collab.kit.services import Services

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
        by_tenant: dict[str, dict[str, dict]] = {}
        for row in rows:
            by_tenant.setdefault(row["api_key_id"], {})[row["id"]] = row
        texts = sum(1 for row in rows for kind in kinds if kind in derive.texts(row))
        written = 0
        for api_key_id, judgments in by_tenant.items():
            written += await embed_judgments(svc, embedder, api_key_id=api_key_id, judgments=judgments, kinds=kinds)
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
        await activate_model(svc, embedder)
    return counts


async def activate_model(svc: Services, embedder: Embedder) -> None:
    """Switch search (judgments and knowledge) to the embedder's model, its indexes built."""
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await registry.activate(conn, model=embedder.name)
    log.info("search now uses %s", embedder.name)


async def backfill(svc: Services, embedder: Embedder, *, batch_size: int = 256, only: str | None = None,
                   progress: Callable | None = tqdm) -> int:
    """Re-derive every judgment from the activity log (and embed what changed); returns activities read."""
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
            await derive_batch(svc, embedder, api_key_id=api_key_id, activity_ids=ids)
        seen += len(rows)
        after = (rows[-1]["api_key_id"], rows[-1]["id"])
        if bar:
            bar.update(len(rows))
    if bar:
        bar.close()
    return seen
