"""SQL of judgments and their embeddings; executes, never commits."""

from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from collab.embeddings.registry import vector_expr
from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


async def activity(conn: Conn, *, api_key_id: str, id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.activity, {"api_key_id": api_key_id, "id": id})


async def upsert(conn: Conn, *, api_key_id: str, id: str, judgment: dict[str, Any]) -> None:
    row = dict(judgment, api_key_id=api_key_id, id=id)
    row["action_user"] = Jsonb(row["action_user"])
    row["agent"] = Jsonb(row["agent"]) if row["agent"] is not None else None
    await execute(conn, q.upsert_judgment, row)


async def delete(conn: Conn, *, api_key_id: str, id: str) -> None:
    await execute(conn, q.delete_judgment, {"api_key_id": api_key_id, "id": id})


async def embedding_hashes(conn: Conn, *, api_key_id: str, model: str, ids: list[str]) -> dict[tuple[str, str], str]:
    rows = await fetch_all(conn, q.embedding_hashes, {"api_key_id": api_key_id, "model": model, "ids": ids})
    return {(r["judgment_id"], r["kind"]): r["content_hash"] for r in rows}


async def upsert_embedding(conn: Conn, **row: Any) -> None:
    row["embedding"] = vector_literal(row["embedding"])
    await execute(conn, q.upsert_embedding, row)


async def delete_embedding(conn: Conn, **row: Any) -> None:
    await execute(conn, q.delete_embedding, row)


async def thread(conn: Conn, **params: Any) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.thread, params)


async def recent(conn: Conn, **params: Any) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.recent, params)


async def list_page(conn: Conn, **params: Any) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.list_judgments, params)


async def judgments_after(
    conn: Conn, *, after: tuple[str, str] | None, limit: int, only: str | None = None
) -> list[dict[str, Any]]:
    """Judgments in key order (all tenants, or `only` one), one batch after `after` (re-embedding walks them)."""
    key, ident = after or ("", "")
    return await fetch_all(conn, q.judgments_after, {"key": key, "ident": ident, "limit": limit, "only": only})


async def activities_after(
    conn: Conn, *, after: tuple[str, str] | None, limit: int, only: str | None = None
) -> list[dict[str, Any]]:
    """Activity keys in order (all tenants, or `only` one), one batch after `after` (the backfill walks them)."""
    key, ident = after or ("", "")
    return await fetch_all(conn, q.activities_after, {"key": key, "ident": ident, "limit": limit, "only": only})


async def count_judgments(conn: Conn, *, only: str | None = None) -> int:
    sql = "select count(*) as n from judgments where (%(only)s::text is null or api_key_id = %(only)s)"
    return (await fetch_one(conn, sql, {"only": only}))["n"]


def _scope_where(organization_id: str | None, document_id: str | None) -> sql.Composable:
    parts = [sql.SQL("e.model = %(model)s and e.kind = %(kind)s and e.api_key_id = %(api_key_id)s")]
    if organization_id is not None:
        parts.append(sql.SQL("e.organization_id = %(organization_id)s"))
    if document_id is not None:
        parts.append(sql.SQL("e.document_id = %(document_id)s"))
    return sql.SQL(" and ").join(parts)


async def count_scope(conn: Conn, *, cap: int, **params: Any) -> int:
    """Rows in the scope, counted up to `cap` (enough to choose exact or HNSW search)."""
    query = sql.SQL("select count(*) as n from (select 1 from judgment_embeddings e where {} limit %(cap)s) s").format(
        _scope_where(params.get("organization_id"), params.get("document_id"))
    )
    row = await fetch_one(conn, query, dict(params, cap=cap))
    return row["n"]


async def table_rows(conn: Conn) -> int:
    """The planner's estimate of the embeddings table's size (no scan)."""
    row = await fetch_one(conn, "select greatest(reltuples, 0)::bigint as n from pg_class where oid = 'judgment_embeddings'::regclass")
    return row["n"]


async def nearest(conn: Conn, *, dimensions: int, exact: bool, k: int, **params: Any) -> list[dict[str, Any]]:
    """The k judgments nearest to %(vector)s within the scope, with cosine similarity."""
    distance = sql.SQL("{} <=> %(vector)s::vector({})").format(vector_expr(dimensions), sql.Literal(dimensions))
    # "+ 0" hides the indexed expression, so the planner scans the btree-selected scope exactly.
    order = sql.SQL("({}) + 0").format(distance) if exact else distance
    query = sql.SQL(
        "select j.*, 1 - ({distance}) as similarity from judgment_embeddings e"
        " join judgments j on j.api_key_id = e.api_key_id and j.id = e.judgment_id"
        " where {where} order by {order} limit %(k)s"
    ).format(distance=distance, where=_scope_where(params.get("organization_id"), params.get("document_id")), order=order)
    # Never a server-side prepared plan: it would not see the SET LOCAL hnsw.ef_search before it.
    return await fetch_all(conn, query, dict(params, k=k), prepare=False)
