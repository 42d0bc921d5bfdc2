"""Which embedding models exist, which one search uses, and their HNSW indexes."""

import hashlib

from psycopg import sql

from collab.kit.db import Queries, execute, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)

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
    await execute(conn, q.lock_models)
    await execute(conn, q.upsert_model, {"model": model, "source": source, "dimensions": dimensions})
    made_active = await execute(conn, q.activate_if_none, {"model": model})
    current = await active(conn)
    if made_active:
        await ensure_indexes(conn, model=model, dimensions=dimensions)
    return current is not None and current["name"] == model


async def ensure_indexes(conn: Conn, *, model: str, dimensions: int) -> None:
    """The HNSW (cosine) indexes of a model, one per kind; call in a transaction."""
    await execute(conn, q.index_build_memory)
    for kind in KINDS:
        statement = sql.SQL(q.create_hnsw_index).format(
            index=sql.Identifier(index_name(model, kind)), vector=vector_expr(dimensions), model=sql.Literal(model),
            kind=sql.Literal(kind),
        )
        await conn.execute(statement)


async def active(conn: Conn) -> dict | None:
    """The model search uses: {name, source, dimensions}, or None before any is registered."""
    return await fetch_one(conn, q.active_model)


async def activate(conn: Conn, *, model: str) -> None:
    """Build `model`'s indexes and switch search to it atomically (call inside a transaction)."""
    row = await fetch_one(conn, q.model_dimensions, {"model": model})
    if row is None:
        raise ValueError(f"model {model!r} is not registered")
    await ensure_indexes(conn, model=model, dimensions=row["dimensions"])
    await execute(conn, q.deactivate_others, {"model": model})
    await execute(conn, q.activate, {"model": model})
