"""What other parts of collab read of knowledge sources: passages by meaning, the rules of a scope, and whether
the knowledge changed lately (memory/ask and suggest, agent executions)."""

from datetime import datetime
from typing import Any

from collab.embeddings.batching import encode_query
from collab.judgments.tasks import active_embedder
from collab.kit.db.pool import Conn
from collab.kit.services import Services
from collab.knowledge import repository as repo

MAX_LIMIT = 200


async def passages(ctx: dict, *, api_key_id: str, query: str, organization_id: str | None, document_id: str | None,
                   limit: int) -> list[dict]:
    """The chunks of completed sources visible in the scope most similar to `query`, best first (in a worker job)."""
    svc: Services = ctx["svc"]
    limit = max(0, min(limit, MAX_LIMIT))
    if limit == 0 or not query.strip():
        return []
    embedder = await active_embedder(ctx)
    vector = await encode_query(embedder, query)
    async with svc.pool.connection() as conn:
        rows = await repo.search_chunks(conn, api_key_id=api_key_id, model=embedder.name, vector=vector,
                                        source_ids=None, limit=limit,
                                        scope=(organization_id, document_id if organization_id else None))
    return [{
        "sourceId": r["source_id"], "chunkId": r["id"], "fileName": r["file_name"], "text": r["text"],
        "similarity": round(1.0 - float(r["distance"]), 6)
    } for r in rows]


async def rules(conn: Conn, *, api_key_id: str, organization_id: str | None, document_id: str | None,
                limit: int) -> list[dict]:
    """The current rules of completed sources visible in the scope (key-wide ones always), oldest source first."""
    limit = max(0, min(limit, MAX_LIMIT))
    if limit == 0:
        return []
    rows = await repo.scoped_rules(conn, api_key_id=api_key_id, organization_id=organization_id,
                                   document_id=document_id if organization_id else None, limit=limit)
    out: list[dict[str, Any]] = []
    for r in rows:
        out.append({
            "ruleId": r["id"], "sourceId": r["source_id"], "text": r["content"], "category": r["category"],
            "index": r["ordinal"], "fileName": r["file_name"]
        })
    return out


async def updated_since(conn: Conn, *, api_key_id: str, since: datetime) -> bool:
    """Whether any source of the key was ingested or updated at or after `since`."""
    return await repo.updated_since(conn, api_key_id=api_key_id, since=since)
