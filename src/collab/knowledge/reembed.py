"""Knowledge under another embedding model: `collab reembed` embeds every chunk and rule with the new model before
it is activated, so knowledge search and the rules of agents and answers never go empty on a switch."""

import asyncio
from typing import Any

from collab.embeddings.model import Embedder, content_hash
from collab.kit.services import Services
from collab.knowledge import repository as repo


async def reembed_knowledge(svc: Services, embedder: Embedder, *, batch_size: int = 256,
                            only: str | None = None) -> dict[str, int]:
    """Embed every chunk and rule (all tenants, or `only` one) whose text has no vector of this model yet; each
    batch commits on its own, so a killed run resumes. Returns {embedded, skipped}."""
    counts = {"embedded": 0, "skipped": 0}
    for kind in ("chunk", "rule"):
        after = ""
        while True:
            async with svc.pool.connection() as conn:
                rows = await repo.texts_after(conn, kind=kind, model=embedder.name, after=after, limit=batch_size,
                                              only=only)
            if not rows:
                break
            todo: list[dict[str, Any]] = []
            for row in rows:
                digest = content_hash(row["text"])
                if row["content_hash"] != digest:
                    todo.append({**row, "hash": digest})
            if todo:
                vectors = await asyncio.to_thread(embedder.encode, [r["text"] for r in todo])
                async with svc.pool.connection() as conn:
                    async with conn.transaction():
                        await repo.upsert_vectors(conn, kind=kind, model=embedder.name,
                                                  rows=[{**r, "vector": v} for r, v in zip(todo, vectors)])
            counts["embedded"] += len(todo)
            counts["skipped"] += len(rows) - len(todo)
            after = rows[-1]["id"]
    return counts
