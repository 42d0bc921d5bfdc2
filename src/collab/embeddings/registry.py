"""Which embedding models exist, which one search uses, and their HNSW indexes."""

import hashlib

from psycopg import sql

from collab.kit.db import execute, fetch_one
from collab.kit.db.pool import Conn

KINDS = ("review", "content")


def index_name(model: str, kind: str) -> str:
    return "judgment_embeddings_hnsw_" + hashlib.sha256(f"{model}:{kind}".encode()).hexdigest()[:12]


def vector_expr(dimensions: int) -> sql.Composable:
    """The indexed expression: the untyped column cast to the model's dimension."""
    return sql.SQL("(embedding::vector({}))").format(sql.Literal(dimensions))


async def register(conn: Conn, *, model: str, source: str, dimensions: int) -> bool:
    """Record a model (and where it loads from); the first one becomes active with its indexes (call in a transaction).

    Serialised across processes by a transaction-scoped advisory lock: two workers booting on an empty database
    would otherwise both see no active model and both build its indexes, and the loser's CREATE INDEX fails.
    """
    await execute(conn, "select pg_advisory_xact_lock(hashtext('collab:embedding_models'))")
    await execute(
        conn,
        "insert into embedding_models (name, source, dimensions) values (%(n)s, %(s)s, %(d)s)"
        " on conflict (name) do update set source = excluded.source",
        {"n": model, "s": source, "d": dimensions},
    )
    made_active = await execute(
        conn,
        "update embedding_models set active = true where name = %(n)s"
        " and not exists (select 1 from embedding_models where active)",
        {"n": model},
    )
    current = await active(conn)
    if made_active:
        await ensure_indexes(conn, model=model, dimensions=dimensions)
    return current is not None and current["name"] == model


async def ensure_indexes(conn: Conn, *, model: str, dimensions: int) -> None:
    """The HNSW (cosine) indexes of a model, one per kind; call in a transaction."""
    # A bulk build is ~2.6x faster with room to sort in memory (DESIGN.md §8).
    await conn.execute("set local maintenance_work_mem = '1GB'")
    for kind in KINDS:
        await conn.execute(
            sql.SQL(
                "create index if not exists {} on judgment_embeddings using hnsw ({} vector_cosine_ops)"
                " with (m = 16, ef_construction = 64) where model = {} and kind = {}"
            ).format(sql.Identifier(index_name(model, kind)), vector_expr(dimensions), sql.Literal(model), sql.Literal(kind))
        )


async def active(conn: Conn) -> dict | None:
    """The model search uses: {name, source, dimensions}, or None before any is registered."""
    return await fetch_one(conn, "select name, source, dimensions from embedding_models where active")


async def activate(conn: Conn, *, model: str) -> None:
    """Build `model`'s indexes and switch search to it atomically (call inside a transaction)."""
    row = await fetch_one(conn, "select dimensions from embedding_models where name = %(n)s", {"n": model})
    if row is None:
        raise ValueError(f"model {model!r} is not registered")
    await ensure_indexes(conn, model=model, dimensions=row["dimensions"])
    await execute(conn, "update embedding_models set active = false where active and name <> %(n)s", {"n": model})
    await execute(conn, "update embedding_models set active = true where name = %(n)s", {"n": model})
