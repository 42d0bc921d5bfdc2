"""Worker jobs: derive judgments from activities and embed them; search them."""

import asyncio
import logging
import time
from typing import Any

from collab.embeddings import registry
from collab.embeddings.model import Embedder, content_hash, load
from collab.judgments import derive, search
from collab.judgments import repository as repo
from collab.judgments.schemas import SearchJudgments
from collab.kit.errors import ApiError
from collab.kit.jobs import tracked
from collab.kit.services import Services

log = logging.getLogger("collab.judgments")


async def active_embedder(ctx: dict) -> Embedder:
    """The embedder of the model search uses now (re-read every few seconds, so an activation spreads)."""
    svc: Services = ctx["svc"]
    cached = ctx.get("active_model")
    if cached and time.monotonic() - cached[0] < svc.settings.embedding_refresh_s:
        return cached[1]
    async with svc.pool.connection() as conn:
        row = await registry.active(conn)
    if row is None:
        embedder = await asyncio.to_thread(load, svc.settings.embedding_model, cache_dir=svc.settings.models_dir)
        async with svc.pool.connection() as conn:
            async with conn.transaction():
                await registry.register(conn, model=embedder.name, source=_source(svc), dimensions=embedder.dimensions)
    else:
        embedder = await asyncio.to_thread(
            load, None if row["source"] == "default" else row["source"], row["name"], cache_dir=svc.settings.models_dir
        )
    ctx["active_model"] = (time.monotonic(), embedder)
    return embedder


def _source(svc: Services) -> str:
    return svc.settings.embedding_model or "default"


async def embed_judgments(
    svc: Services,
    embedder: Embedder,
    *,
    api_key_id: str,
    judgments: dict[str, dict],
    kinds: tuple[str, ...] = registry.KINDS,
) -> int:
    """Embed the texts (of `kinds`) of one tenant's judgments whose text changed; returns vectors written."""
    if not judgments:
        return 0
    async with svc.pool.connection() as conn:
        stored = await repo.embedding_hashes(conn, api_key_id=api_key_id, model=embedder.name, ids=list(judgments))
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
    vectors = await asyncio.to_thread(embedder.encode, [t[2] for t in todo]) if todo else []
    rows = [
        {
            "judgment_id": judgment_id,
            "kind": kind,
            "content_hash": digest,
            "organization_id": judgments[judgment_id]["organization_id"],
            "document_id": judgments[judgment_id]["document_id"],
            "embedding": vector,
        }
        for (judgment_id, kind, _, digest), vector in zip(todo, vectors)
    ]
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await repo.upsert_embeddings(conn, api_key_id=api_key_id, model=embedder.name, rows=rows)
            await repo.delete_embeddings(conn, api_key_id=api_key_id, model=embedder.name, keys=stale)
    return len(todo)


@tracked(max_tries=5)
async def derive_judgments(ctx: dict, *, api_key_id: str, activity_ids: list[str]) -> dict[str, Any]:
    """Turn activities into judgments (or remove them) and embed what changed; idempotent."""
    return await derive_batch(ctx["svc"], await active_embedder(ctx), api_key_id=api_key_id, activity_ids=activity_ids)


async def derive_batch(svc: Services, embedder: Embedder, *, api_key_id: str, activity_ids: list[str]) -> dict[str, Any]:
    """Derive (or remove) the judgments of one tenant's activities and embed what changed."""
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
    written = await embed_judgments(svc, embedder, api_key_id=api_key_id, judgments=kept)
    return {"judgments": len(kept), "vectors": written}


async def embed_query(ctx: dict, *, text: str) -> dict[str, Any]:
    """The query's vector under the active model (the worker holds the model)."""
    embedder = await active_embedder(ctx)
    [vector] = await asyncio.to_thread(embedder.encode, [text])
    return {"model": embedder.name, "dimensions": embedder.dimensions, "vector": vector}


async def search_judgments(ctx: dict, *, api_key_id: str, data: dict) -> dict[str, Any]:
    """The whole search (search.run) under the active model; an ApiError comes back as {"error": body}."""
    try:
        request = SearchJudgments.model_validate(data)
        embedder = await active_embedder(ctx) if search.needs_model(request) else None
        return await search.run(ctx["svc"], embedder, api_key_id=api_key_id, data=request)
    except ApiError as exc:
        # Returned, not raised: arq pickles a raised exception, and ApiError's arguments are keyword-only.
        return exc.body()
