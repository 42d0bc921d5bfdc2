"""SQL of judgments and their embeddings; executes, never commits."""

import weakref
from typing import Any

import numpy
import orjson
from psycopg import sql
from psycopg.types.json import Jsonb

from collab.embeddings.registry import indexed_expr
from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


def vector_literal(vector: list[float]) -> str:
    """pgvector's text form, each value the shortest that reads back as the same float32 (exact, unlike 7
    digits); orjson writes it in ~20 µs against ~140 for a Python format per value (384 dimensions)."""
    return orjson.dumps(numpy.asarray(vector, dtype=numpy.float32), option=orjson.OPT_SERIALIZE_NUMPY).decode()


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
    """Write many vectors in one statement (rows: judgment_id, kind, content_hash, organization_id, document_id,
    embedding)."""
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
        params = {
            "api_key_id": api_key_id, "model": model, "judgment_ids": [k[0] for k in keys],
            "kinds": [k[1] for k in keys]
        }
        await execute(conn, q.delete_embeddings, params)


async def embedding_hashes(conn: Conn, *, api_key_id: str, model: str, ids: list[str]) -> dict[tuple[str, str], str]:
    rows = await fetch_all(conn, q.embedding_hashes, {"api_key_id": api_key_id, "model": model, "ids": ids})
    return {(r["judgment_id"], r["kind"]): r["content_hash"] for r in rows}


async def thread(conn: Conn, *, api_key_id: str, organization_id: str, document_id: str | None, annotation_id: str,
                 limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id,
        "annotation_id": annotation_id, "limit": limit
    }
    return await fetch_all(conn, q.thread, params)


async def recent(conn: Conn, *, api_key_id: str, organization_id: str | None, document_id: str | None, start_ms: int,
                 end_ms: int, limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "start_ms": start_ms,
        "end_ms": end_ms, "limit": limit
    }
    return await fetch_all(conn, q.recent, params)


async def list_page(conn: Conn, *, api_key_id: str, organization_id: str | None, document_id: str | None,
                    decision: str | None, judge_type: str | None, content_type: str | None, reviewer_id: str | None,
                    annotation_id: str | None, after_ts: int | None, after_id: str | None, limit: int,
                    budget: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "document_id": document_id, "decision": decision,
        "judge_type": judge_type, "content_type": content_type, "reviewer_id": reviewer_id,
        "annotation_id": annotation_id, "after_ts": after_ts, "after_id": after_id, "limit": limit, "budget": budget
    }
    return await fetch_all(conn, q.list_judgments, params)


async def judgments_after(conn: Conn, *, after: tuple[str, str] | None, limit: int,
                          only: str | None = None) -> list[dict[str, Any]]:
    """Judgments in key order (all tenants, or `only` one), one batch after `after` (re-embedding walks them)."""
    key, ident = after or ("", "")
    return await fetch_all(conn, q.judgments_after, {"key": key, "ident": ident, "limit": limit, "only": only})


async def judgments_between(conn: Conn, *, after: tuple[str, str], upto: tuple[str, str], limit: int,
                            only: str | None = None) -> list[dict[str, Any]]:
    """Judgments in key order after `after` up to `upto` (inclusive), one batch (a re-embed range walks them)."""
    return await fetch_all(
        conn, q.judgments_between,
        {"key": after[0], "ident": after[1], "upto_key": upto[0], "upto_id": upto[1], "limit": limit, "only": only})


async def range_bounds(conn: Conn, *, step: int, only: str | None = None) -> list[tuple[str, str]]:
    """The (api_key_id, id) that ends each range of `step` judgments in key order, the last one included."""
    rows = await fetch_all(conn, q.range_bounds, {"step": step, "only": only})
    return [(r["api_key_id"], r["id"]) for r in rows]


async def activities_after(conn: Conn, *, after: tuple[str, str] | None, limit: int,
                           only: str | None = None) -> list[dict[str, Any]]:
    """Activity keys in order (all tenants, or `only` one), one batch after `after` (the backfill walks them)."""
    key, ident = after or ("", "")
    return await fetch_all(conn, q.activities_after, {"key": key, "ident": ident, "limit": limit, "only": only})


async def tenant_activities_after(conn: Conn, *, api_key_id: str, after: str, since: int | None, until: int | None,
                                  limit: int) -> list[str]:
    """One tenant's activity ids in order after `after`, with timestamps within the bounds given."""
    rows = await fetch_all(conn, q.tenant_activities_after,
                           {"api_key_id": api_key_id, "after": after, "since": since, "until": until, "limit": limit})
    return [r["id"] for r in rows]


async def count_judgments(conn: Conn, *, only: str | None = None) -> int:
    return (await fetch_row(conn, q.count_judgments, {"only": only}))["n"]


def _scope_where(organization_id: str | None, document_id: str | None, table: str = "e") -> sql.Composable:
    t = sql.Identifier(table)
    parts = [sql.SQL("e.model = %(model)s and e.kind = %(kind)s and {t}.api_key_id = %(api_key_id)s").format(t=t)]
    if organization_id is not None:
        parts.append(sql.SQL("{t}.organization_id = %(organization_id)s").format(t=t))
    if document_id is not None:
        parts.append(sql.SQL("{t}.document_id = %(document_id)s").format(t=t))
    return sql.SQL(" and ").join(parts)


async def count_scope(conn: Conn, *, cap: int, model: str, kind: str, api_key_id: str, organization_id: str | None,
                      document_id: str | None) -> tuple[int, int]:
    """(rows in the scope, counted up to `cap`; the planner's estimate of the table's rows): enough to choose exact
    or HNSW search."""
    query = sql.SQL(q.count_scope).format(where=_scope_where(organization_id, document_id))
    params = {
        "cap": cap, "model": model, "kind": kind, "api_key_id": api_key_id, "organization_id": organization_id,
        "document_id": document_id
    }
    row = await fetch_row(conn, query, params)
    return row["n"], row["total"]


# The hnsw.* settings each pooled connection was given by `use_settings`. They last for its session: only the
# search's nearest-neighbour query reads them, and it always asks for the ones it needs first.
_settings_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def use_settings(conn: Conn, settings: dict[str, str], *, local: bool = False) -> None:
    """Give the connection these settings for its session, in one statement, unless it has them already (the
    usual case: a search needs no transaction for SET LOCAL, and no round trip at all for its settings).
    `local`: for the current transaction only (behind a transaction-mode pooler, or Citus, where a session's
    settings do not follow the statements)."""
    if not settings or (not local and _settings_of.get(conn) == settings):
        return
    await execute(conn, q.set_session, {"names": list(settings), "values": list(settings.values()), "local": local})
    if not local:
        _settings_of[conn] = dict(settings)


def _distance(dimensions: int, *, half: bool = False) -> sql.Composable:
    """The cosine distance to the query vector: full precision, or that of the half-precision HNSW index."""
    cast = sql.SQL("halfvec" if half else "vector")
    return sql.SQL("{} <=> %(vector)s::{}({})").format(indexed_expr(dimensions, half=half), cast,
                                                       sql.Literal(dimensions))


async def nearest(conn: Conn, *, dimensions: int, exact: bool, k: int, vector: str, texts: list[str], model: str,
                  kind: str, api_key_id: str, organization_id: str | None, document_id: str | None,
                  half: bool = False) -> list[dict[str, Any]]:
    """The judgments of the scope whose embedded text (the reasoning, or the content) is one of `texts` (`same`),
    and the k nearest to `vector`, each with its cosine similarity; `half`: by the half-precision index (the
    returned similarity and the order of the k stay full precision)."""
    candidates = sql.SQL(q.candidates_exact if exact else q.candidates_indexed).format(
        distance=_distance(dimensions), order=_distance(dimensions, half=half),
        where=_scope_where(organization_id, document_id))
    same_text = sql.SQL(q.candidates_same_text).format(
        column=sql.Identifier("review_key" if kind == "review" else "content_key"), distance=_distance(dimensions),
        where=_scope_where(organization_id, document_id, "j"))
    query = sql.SQL(q.nearest).format(candidates=candidates, same_text=same_text)
    params = {
        "k": k, "vector": vector, "texts": texts, "model": model, "kind": kind, "api_key_id": api_key_id,
        "organization_id": organization_id, "document_id": document_id
    }
    # Never a server-side prepared plan: it would not see the hnsw.* settings given before it.
    return await fetch_all(conn, query, params, prepare=False)


async def lexical(conn: Conn, *, dimensions: int, k: int, cap: int, text: str, vector: str, model: str, kind: str,
                  api_key_id: str, organization_id: str | None, document_id: str | None) -> list[dict[str, Any]]:
    """The k judgments of the scope whose text matches every term of `text` best (full-text rank) among the
    first `cap` matches found, with the cosine similarity of their vector under the model."""
    query = sql.SQL(q.lexical).format(
        column=sql.Identifier("review_tsv" if kind == "review" else "content_tsv"),
        distance=_distance(dimensions),
        # The judgment's own scope columns: they sit beside the tsvector, so the GIN and btree scans combine.
        where=_scope_where(organization_id, document_id, "j"))
    params = {
        "k": k, "cap": cap, "text": text, "vector": vector, "model": model, "kind": kind, "api_key_id": api_key_id,
        "organization_id": organization_id, "document_id": document_id
    }
    return await fetch_all(conn, query, params, prepare=False)


# Re-embeds spread over workers (reembed_runs.py): a run, its ranges, and who holds which.
async def live_run(conn: Conn, *, model: str, only: str | None) -> dict[str, Any] | None:
    return await fetch_one(conn, q.live_run, {"model": model, "only": only})


async def insert_run(conn: Conn, *, id: str, model: str, only: str | None, kinds: list[str], batch_size: int,
                     activate: bool, total: int, bounds: list[tuple[str, str]]) -> None:
    """A new run over `total` judgments, its ranges ending at `bounds` (the first from the start of the key
    order)."""
    await execute(
        conn, q.insert_run, {
            "id": id, "model": model, "only": only, "kinds": kinds, "batch_size": batch_size, "activate": activate,
            "total": total
        })
    starts = [("", "")] + bounds[:-1]
    await execute(
        conn, q.insert_ranges, {
            "run_id": id, "seqs": list(range(len(bounds))), "after_keys": [a[0] for a in starts],
            "after_ids": [a[1] for a in starts], "upto_keys": [b[0]
                                                               for b in bounds], "upto_ids": [b[1] for b in bounds]
        })


async def resume_run(conn: Conn, *, run_id: str, activate: bool) -> dict[str, Any]:
    return await fetch_row(conn, q.resume_run, {"run_id": run_id, "activate": activate})


async def get_run(conn: Conn, *, run_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_run, {"run_id": run_id})


async def lock_run(conn: Conn, *, run_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.lock_run, {"run_id": run_id})


async def set_run_state(conn: Conn, *, run_id: str, state: str, unless: tuple[str, ...] = (),
                        knowledge: int | None = None, error: str | None = None) -> int:
    return await execute(
        conn, q.set_run_state,
        {"run_id": run_id, "state": state, "unless": list(unless), "knowledge": knowledge, "error": error})


async def claim_range(conn: Conn, *, run_id: str, me: str, lease_s: float) -> dict[str, Any] | None:
    return await fetch_one(conn, q.claim_range, {"run_id": run_id, "me": me, "lease_s": lease_s})


async def advance_range(conn: Conn, *, run_id: str, seq: int, me: str, cursor: tuple[str, str], judgments: int,
                        embedded: int, done: bool) -> str | None:
    """Move a held range on; the run's state, or None where another worker took the range over."""
    row = await fetch_one(
        conn, q.advance_range, {
            "run_id": run_id, "seq": seq, "me": me, "cursor_key": cursor[0], "cursor_id": cursor[1],
            "judgments": judgments, "embedded": embedded, "done": done
        })
    return row["state"] if row else None


async def ranges_left(conn: Conn, *, run_id: str, lease_s: float) -> dict[str, int]:
    return await fetch_row(conn, q.ranges_left, {"run_id": run_id, "lease_s": lease_s})


async def live_runs(conn: Conn, *, only: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.live_runs, {"only": only})
