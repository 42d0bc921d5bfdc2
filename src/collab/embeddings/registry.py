"""Which embedding models exist, which one search uses, and their HNSW indexes."""

import asyncio
import hashlib

from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)

KINDS = ("review", "content")
# From pgvector 0.7 (halfvec) the HNSW index holds half-precision copies of the vectors: at 100k rows 112 MB against
# 195 MB, nearest-neighbour SQL p50 2.4 against 4.2 ms, recall@10 0.991 against 0.993 (ADR 0026). Rows
# keep full precision, and so do the distances a search returns and sorts by.
HALF_FROM = (0, 7)


# The half-precision graph is built with ef_construction 128 (queries.sql): over a million rows recall@10 at
# ef_search 200 went 0.952 → 0.988 against 64, for a 1.7x longer build of the same size and query cost
# (ADR 0026). The name tells the builds apart: an earlier release's (`hnswh_`, 64) serves searches until
# its replacement is built in the background.
def index_name(model: str, kind: str, *, half: bool = True) -> str:
    """The HNSW index this release builds for a model and kind (half or full precision)."""
    return _named("judgment_embeddings_hnswh2_" if half else "judgment_embeddings_hnsw_", model, kind)


def sparser_name(model: str, kind: str) -> str:
    """The half-precision index an earlier release built (ef_construction 64)."""
    return _named("judgment_embeddings_hnswh_", model, kind)


def _named(prefix: str, model: str, kind: str) -> str:
    return prefix + hashlib.sha256(f"{model}:{kind}".encode()).hexdigest()[:12]


def vector_expr(dimensions: int) -> sql.Composable:
    """The stored vector at full precision: the untyped column cast to the model's dimension."""
    return sql.SQL("(embedding::vector({}))").format(sql.Literal(dimensions))


def indexed_expr(dimensions: int, *, half: bool) -> sql.Composable:
    """The expression the HNSW index is built on (and a search orders by to use it)."""
    return sql.SQL("(embedding::halfvec({}))").format(sql.Literal(dimensions)) if half else vector_expr(dimensions)


def index_statement(*, model: str, kind: str, dimensions: int, half: bool, concurrently: bool = False) -> sql.Composed:
    """The statement that builds the HNSW (cosine) index of one model and kind, unless it exists."""
    return sql.SQL(q.create_hnsw_index).format(index=sql.Identifier(index_name(model, kind, half=half)),
                                               vector=indexed_expr(dimensions, half=half),
                                               ops=sql.SQL("halfvec_cosine_ops" if half else "vector_cosine_ops"),
                                               model=sql.Literal(model), kind=sql.Literal(kind),
                                               concurrently=sql.SQL("concurrently" if concurrently else ""))


def _drop(name: str, *, concurrently: bool = False) -> sql.Composed:
    return sql.SQL(q.drop_index).format(index=sql.Identifier(name),
                                        concurrently=sql.SQL("concurrently" if concurrently else ""))


async def pgvector_version(conn: Conn) -> tuple[int, ...]:
    """The installed pgvector's version, e.g. (0, 8, 2)."""
    row = await fetch_one(conn, q.pgvector_version)
    return tuple(int(p) for p in row["extversion"].split(".") if p.isdigit()) if row else ()


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


async def _wanted(conn: Conn, model: str) -> tuple[bool, list[str], list[str], dict[str, bool]]:
    """(half precision?, the indexes this server's pgvector wants for the model, those an earlier release built
    where half precision is wanted (full precision, then the sparser half-precision graph), {name: valid} of those
    that exist)."""
    half = await pgvector_version(conn) >= HALF_FROM
    wanted = [index_name(model, kind, half=half) for kind in KINDS]
    legacy = (([index_name(model, kind, half=False) for kind in KINDS] + [sparser_name(model, kind)
                                                                          for kind in KINDS]) if half else [])
    rows = await fetch_all(conn, q.existing_indexes, {"names": wanted + legacy})
    return half, wanted, legacy, {row["relname"]: row["valid"] for row in rows}


async def indexed(conn: Conn, model: str, kinds: tuple[str, ...] = KINDS) -> bool:
    """Whether the model's indexes (of these kinds) are those this server's pgvector wants, built and valid (until
    then a worker builds them: upgrade_indexes)."""
    _, wanted, _, found = await _wanted(conn, model)
    return all(kind not in kinds for kind, _ in _missing(wanted, found))


async def serving(conn: Conn, model: str, kinds: tuple[str, ...] = KINDS) -> bool:
    """Whether searches of these kinds can order by the indexed expression of this server: its index is built, or,
    for half precision, the sparser one an earlier release built still serves (else they order by the full-precision
    one an earlier release indexed)."""
    half, wanted, _, found = await _wanted(conn, model)
    return all(half and found.get(sparser_name(model, kind)) for kind, _ in _missing(wanted, found) if kind in kinds)


async def ensure_indexes(conn: Conn, *, model: str, dimensions: int) -> None:
    """The HNSW (cosine) indexes of a model, one per kind, of the precision this server's pgvector indexes; call in
    a transaction (registration and activation: it blocks writes to the table while it builds). Builds only what
    is missing or invalid; where it builds half precision, drops what an earlier release built in its place (full
    precision, or the sparser graph)."""
    await execute(conn, q.lock_models)  # two workers starting at once would build the same index twice
    half, wanted, legacy, found = await _wanted(conn, model)
    missing = _missing(wanted, found)
    if missing:
        await execute(conn, q.index_build_memory)
        await _build(conn, model=model, dimensions=dimensions, half=half, missing=missing, concurrently=False)
    for name in legacy:
        if name in found:
            await conn.execute(_drop(name))


def _missing(wanted: list[str], found: dict[str, bool]) -> list[tuple[str, str]]:
    """(kind, index name) of the wanted indexes that are absent or invalid."""
    return [(kind, name) for kind, name in zip(KINDS, wanted) if not found.get(name)]


async def _build(conn: Conn, *, model: str, dimensions: int, half: bool, missing: list[tuple[str, str]],
                 concurrently: bool) -> None:
    """Build each missing index, after dropping an invalid leftover of a concurrent build of the same name."""
    for kind, name in missing:
        await conn.execute(_drop(name, concurrently=concurrently))
        await conn.execute(
            index_statement(model=model, kind=kind, dimensions=dimensions, half=half, concurrently=concurrently))


async def upgrade_indexes(pool: AsyncConnectionPool, *, model: str, dimensions: int, grace_s: float) -> bool:
    """Give an existing database the indexes this server wants without stopping anything (after an upgrade: half
    precision in place of an earlier release's full-precision ones, or the denser graph in place of the sparser
    one). They are built CONCURRENTLY, beside the old ones, which searches keep using until the new ones are valid;
    the old ones are dropped `grace_s` later, once every process has seen the new ones (they re-read `serving` that
    often; the sparser graph serves the same expression as its replacement). One process at a time: False at once
    where another holds the upgrade. True when this call changed anything."""
    async with pool.connection() as conn:  # autocommit: CONCURRENTLY cannot run in a transaction
        if not (await fetch_row(conn, q.try_upgrade_lock))["held"]:
            return False
        try:
            half, wanted, legacy, found = await _wanted(conn, model)
            missing = _missing(wanted, found)
            if missing:
                await execute(conn, q.session_build_memory)
                try:
                    await _build(conn, model=model, dimensions=dimensions, half=half, missing=missing,
                                 concurrently=True)
                finally:
                    await execute(conn, q.reset_build_memory)
            old = [name for name in legacy if name in found]
            if old and missing:
                await asyncio.sleep(grace_s)
            for name in old:
                await conn.execute(_drop(name, concurrently=True))
            return bool(missing or old)
        finally:
            await execute(conn, q.upgrade_unlock)


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


async def key_models(conn: Conn, *, api_key_id: str) -> dict | None:
    """{model, source, dimensions, next, next_source, next_dimensions} of an API key: the model it searches with
    and the one a re-embed is filling for it (next None when none), or None before any model is registered."""
    row = await fetch_one(conn, q.key_models, {"api_key_id": api_key_id})
    if row is None or row["model"] is None:
        return None
    if row["next"] == row["model"]:
        row.update(next=None, next_source=None, next_dimensions=None)
    return row


async def models(conn: Conn) -> list[dict]:
    """Every registered model: {name, source, dimensions, active, filling, keys (that chose it)}."""
    return await fetch_all(conn, q.models)


async def model_row(conn: Conn, *, model: str) -> dict | None:
    return await fetch_one(conn, q.model_row, {"model": model})


async def set_key_model(conn: Conn, *, api_key_id: str, model: str | None) -> None:
    """Switch a key's searches to `model` (None: follow the active model); what was being filled stops."""
    await execute(conn, q.set_key_model, {"api_key_id": api_key_id, "model": model})


async def set_key_next(conn: Conn, *, api_key_id: str, model: str | None) -> None:
    await execute(conn, q.set_key_next, {"api_key_id": api_key_id, "model": model})


async def set_filling(conn: Conn, *, model: str, filling: bool) -> None:
    """Have every key that follows the active model embed new judgments with `model` too (or stop)."""
    await execute(conn, q.set_filling, {"model": model, "filling": filling})


async def build_indexes(pool: AsyncConnectionPool, *, model: str, dimensions: int) -> None:
    """Build a model's missing indexes CONCURRENTLY (writes go on), before a key switches its searches to it."""
    async with pool.connection() as conn:  # autocommit: CONCURRENTLY cannot run in a transaction
        _, wanted, _, found = await _wanted(conn, model)
        missing = _missing(wanted, found)
        if not missing:
            return
        half = await pgvector_version(conn) >= HALF_FROM
        await execute(conn, q.session_build_memory)
        try:
            await _build(conn, model=model, dimensions=dimensions, half=half, missing=missing, concurrently=True)
        finally:
            await execute(conn, q.reset_build_memory)
