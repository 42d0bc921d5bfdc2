"""What other parts of collab read of knowledge sources: passages by meaning, the rules of a scope, and whether
the knowledge changed lately (memory/ask and suggest, agent executions)."""

from datetime import datetime
from typing import Any

from collab.judgments import search
from collab.judgments.tasks import tenant_embedder
from collab.kit.db.pool import Conn
from collab.kit.services import Services
from collab.knowledge import repository as repo

MAX_LIMIT = 200


async def passages(ctx: dict, *, api_key_id: str, query: str, organization_id: str | None, document_id: str | None,
                   limit: int) -> list[dict]:
    """The chunks of completed sources visible in the scope most similar to `query`, best first (in a worker job)."""
    found = await relevant(ctx, api_key_id=api_key_id, query=query, organization_id=organization_id,
                           document_id=document_id, passages=limit, rules=0)
    return found["passages"]


async def relevant(ctx: dict, *, api_key_id: str, query: str, organization_id: str | None, document_id: str | None,
                   passages: int, rules: int) -> dict[str, list[dict]]:
    """The chunks (`passages`: each {sourceId, chunkId, fileName, text, similarity}) and the current rules (`rules`:
    each {ruleId, sourceId, fileName, text, category, similarity}) of completed sources visible in the scope most
    similar to `query`, best first, the query embedded once (in a worker job)."""
    svc: Services = ctx["svc"]
    passages, rules = max(0, min(passages, MAX_LIMIT)), max(0, min(rules, MAX_LIMIT))
    if not (passages or rules) or not query.strip():
        return {"passages": [], "rules": []}
    embedder = await tenant_embedder(ctx, api_key_id)
    # The question's vector when its judgment search just made it (search's per-tenant cache), else encoded.
    vector = await search.query_vector(embedder, api_key_id=api_key_id, text=query)
    scope = (organization_id, document_id if organization_id else None)
    async with svc.pool.connection() as conn:
        chunks = await repo.search_chunks(conn, api_key_id=api_key_id, model=embedder.name, vector=vector,
                                          source_ids=None, limit=passages, scope=scope) if passages else []
        ruled = await repo.search_rules(conn, api_key_id=api_key_id, model=embedder.name, vector=vector,
                                        source_ids=None, limit=rules, scope=scope) if rules else []
    return {
        "passages": [{
            "sourceId": r["source_id"], "chunkId": r["id"], "fileName": r["file_name"], "text": r["text"],
            "similarity": round(1.0 - float(r["distance"]), 6)
        } for r in chunks], "rules": [{
            "ruleId": r["id"], "sourceId": r["source_id"], "fileName": r["file_name"], "text": r["content"],
            "category": r["category"], "similarity": round(1.0 - float(r["distance"]), 6)
        } for r in ruled]
    }


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
    """Whether any completed knowledge source of the key (extraction's files aside) was ingested or updated at or
    after `since`."""
    return await repo.updated_since(conn, api_key_id=api_key_id, since=since)
