"""SQL of judgments and their embeddings; executes, never commits."""

from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from collab.embeddings.registry import vector_expr
from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


# What a search reads of a judgment: its record and the rule-7 filters, never `content` or the tsvectors (a
# scope searched exactly would otherwise carry them through the sort for every row in it).
RECORD_COLUMNS = sql.SQL(
    "j.api_key_id, j.id, j.organization_id, j.document_id, j.annotation_id, j.decision, j.judge_type, j.reasoning, j.content_type, j.reviewer_id, j.confidence, j.action_user, j.agent, j.created_at"
)

def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


async def activities(conn: Conn, *, api_key_id: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """One tenant's activities by id (those that exist)."""
    return {r["id"]: r for r in await fetch_all(conn, q.activities, {"api_key_id": api_key_id, "ids": ids})}


async def upsert_many(conn: Conn, *, api_key_id: str, judgments: dict[str, dict[str, Any]]) -> None:
    """Insert or replace judgments (id → derived judgment) in one pipelined batch."""
    rows = []
    for id, judgment in sorted(judgments.items()):  # one lock order for concurrent batches
        row = dict(judgment, api_key_id=api_key_id, id=id)
        row["action_user"] = Jsonb(row["action_user"])
        row["agent"] = Jsonb(row["agent"]) if row["agent"] is not None else None
        rows.append(row)
    if rows:
        async with conn.cursor() as cur:
            await cur.executemany(q.upsert_judgment, rows)


async def delete_many(conn: Conn, *, api_key_id: str, ids: list[str]) -> None:
    """Delete judgments by id (their vectors go with them)."""
    if ids:
        await execute(conn, q.delete_judgments, {"api_key_id": api_key_id, "ids": ids})


async def upsert_embeddings(conn: Conn, *, api_key_id: str, model: str, rows: list[dict[str, Any]]) -> None:
    """Write many vectors in one statement (rows: judgment_id, kind, content_hash, organization_id, document_id, embedding)."""
    if not rows:
        return
    params: dict[str, Any] = {"api_key_id": api_key_id, "model": model}
    for column in ("judgment_id", "kind", "organization_id", "document_id"):
        params[column + "s"] = [r[column] for r in rows]
    params["content_hashes"] = [r["content_hash"] for r in rows]
    params["embeddings"] = [vector_literal(r["embedding"]) for r in rows]
    await execute(conn, q.upsert_embeddings, params)


async def delete_embeddings(conn: Conn, *, api_key_id: str, model: str, keys: list[tuple[str, str]]) -> None:
    """Delete the vectors of (judgment_id, kind) pairs."""
    if keys:
        params = {"api_key_id": api_key_id, "model": model, "judgment_ids": [k[0] for k in keys], "kinds": [k[1] for k in keys]}
        await execute(conn, q.delete_embeddings, params)


async def embedding_hashes(conn: Conn, *, api_key_id: str, model: str, ids: list[str]) -> dict[tuple[str, str], str]:
    rows = await fetch_all(conn, q.embedding_hashes, {"api_key_id": api_key_id, "model": model, "ids": ids})
    return {(r["judgment_id"], r["kind"]): r["content_hash"] for r in rows}


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
    return (await fetch_one(conn, q.count_judgments, {"only": only}))["n"]


def _scope_where(organization_id: str | None, document_id: str | None, table: str = "e") -> sql.Composable:
    t = sql.Identifier(table)
    parts = [sql.SQL("e.model = %(model)s and e.kind = %(kind)s and {t}.api_key_id = %(api_key_id)s").format(t=t)]
    if organization_id is not None:
        parts.append(sql.SQL("{t}.organization_id = %(organization_id)s").format(t=t))
    if document_id is not None:
        parts.append(sql.SQL("{t}.document_id = %(document_id)s").format(t=t))
    return sql.SQL(" and ").join(parts)


async def pgvector_version(conn: Conn) -> tuple[int, ...]:
    """The installed pgvector's version, e.g. (0, 8, 2)."""
    row = await fetch_one(conn, q.pgvector_version)
    return tuple(int(p) for p in row["extversion"].split(".") if p.isdigit()) if row else ()


async def count_scope(conn: Conn, *, cap: int, **params: Any) -> int:
    """Rows in the scope, counted up to `cap` (enough to choose exact or HNSW search)."""
    query = sql.SQL("select count(*) as n from (select 1 from judgment_embeddings e where {} limit %(cap)s) s").format(
        _scope_where(params.get("organization_id"), params.get("document_id"))
    )
    row = await fetch_one(conn, query, dict(params, cap=cap))
    return row["n"]


async def table_rows(conn: Conn) -> int:
    """The planner's estimate of the embeddings table's size (no scan)."""
    return (await fetch_one(conn, q.table_rows))["n"]


async def set_local(conn: Conn, settings: dict[str, str]) -> None:
    """SET LOCAL each of these settings, in one statement (one round trip)."""
    if settings:
        names, values = list(settings), list(settings.values())
        await execute(conn, q.set_local, {"names": names, "values": values})


def _distance(dimensions: int) -> sql.Composable:
    return sql.SQL("{} <=> %(vector)s::vector({})").format(vector_expr(dimensions), sql.Literal(dimensions))


async def nearest(conn: Conn, *, dimensions: int, exact: bool, k: int, **params: Any) -> list[dict[str, Any]]:
    """The k judgments nearest to %(vector)s within the scope, with cosine similarity."""
    distance = _distance(dimensions)
    # "+ 0" hides the indexed expression, so the planner scans the btree-selected scope exactly.
    order = sql.SQL("({}) + 0").format(distance) if exact else distance
    # The k nearest are found on the embeddings alone, and only those k are joined to their judgments: joined
    # first, an exact scan of a 5,000-row scope paid 5,000 judgment lookups (18 ms against 3 ms).
    query = sql.SQL(
        "select {columns}, 1 - n.distance as similarity from ("
        "  select e.api_key_id, e.judgment_id, {distance} as distance from judgment_embeddings e"
        "  where {where} order by {order} limit %(k)s"
        ") n join judgments j on j.api_key_id = n.api_key_id and j.id = n.judgment_id order by n.distance"
    ).format(distance=distance, where=_scope_where(params.get("organization_id"), params.get("document_id")), order=order,
             columns=RECORD_COLUMNS)
    # Never a server-side prepared plan: it would not see the SET LOCAL hnsw.* before it.
    return await fetch_all(conn, query, dict(params, k=k), prepare=False)


async def lexical(conn: Conn, *, dimensions: int, k: int, cap: int, text: str, **params: Any) -> list[dict[str, Any]]:
    """The k judgments of the scope whose text matches every term of `text` best (full-text rank) among the
    first `cap` matches found, with the cosine similarity of their vector under the model."""
    column = sql.Identifier("review_tsv" if params["kind"] == "review" else "content_tsv")
    # The matches are taken unordered up to `cap` (the scan stops there), and only those are ranked: a common
    # word over a huge tenant would otherwise rank (and read the tsvector of) every row it matches. The rank is
    # divided by the text's length (flag 2), so a short text that is all the query ranks above a long one that
    # merely contains it (exact-text retrieval).
    query = sql.SQL(
        "with hits as materialized ("
        "  select j.api_key_id, j.id, j.created_at, ts_rank_cd(j.{column}, tq, 2) as rank from judgments j"
        "  join judgment_embeddings e on e.api_key_id = j.api_key_id and e.judgment_id = j.id"
        "   and e.kind = %(kind)s and e.model = %(model)s,"
        "  websearch_to_tsquery('simple', %(text)s) tq"
        "  where j.{column} @@ tq and {where} limit %(cap)s"
        "), top as (select * from hits order by rank desc, created_at desc, id limit %(k)s)"
        " select {columns}, 1 - ({distance}) as similarity from top"
        " join judgments j on j.api_key_id = top.api_key_id and j.id = top.id"
        " join judgment_embeddings e on e.api_key_id = j.api_key_id and e.judgment_id = j.id"
        "  and e.kind = %(kind)s and e.model = %(model)s"
        " order by top.rank desc, top.created_at desc, top.id"
    ).format(
        distance=_distance(dimensions),
        columns=RECORD_COLUMNS,
        column=column,
        # The judgment's own scope columns: they sit beside the tsvector, so the GIN and btree scans combine.
        where=_scope_where(params.get("organization_id"), params.get("document_id"), "j"),
    )
    return await fetch_all(conn, query, dict(params, k=k, cap=cap, text=text), prepare=False)
