"""The whole judgment search (spec rules 1-7): scope, shortcuts, query embedding, SQL, post-filters.

It runs in the worker (which holds the model); the API only validates, enqueues and answers. The
shortcut paths need no model, so `needs_model` lets the job answer them without waiting for one.
"""

import asyncio
import math
import re
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, AsyncIterator

from collab.embeddings.batching import encode_query
from collab.embeddings.registry import HALF_FROM, pgvector_version, serving
from collab.embeddings.runtime import Recent
from collab.judgments import repository as repo
from collab.judgments.schemas import SearchJudgments
from collab.kit.db.pool import pooled_by_transaction
from collab.kit.errors import invalid, issue
from collab.kit.services import Services

DAY_MS = 86_400_000
# Recent query vectors, per tenant: keyed by (model, api key, text), so no tenant can time whether another one
# searched a text. Only searches fill it (bulk and single encodes elsewhere never do).
_recent = Recent()
# Scopes lately counted as HNSW's (past the exact-scan threshold, or cheaper by graph): (when that count expires, rows
# in the scope, the table's estimated rows). Counting 20,001 index entries costs ~2-5 ms a search; a big scope stays
# big for a while, and if it shrank its search takes the HNSW path a little longer, still with full pages. Small
# scopes are counted every time (cheaply), so a scope that gains its first rows is never answered from a stale count.
# Keyed per tenant.
_graph_scopes = Recent(4096)
GRAPH_SCOPE_TTL_S = 30.0


def resolve_scope(data: SearchJudgments) -> tuple[str, str | None, str | None]:
    """(scope, organizationId, documentId) after the spec's rules 1-4 (and 3's annotation exception)."""
    org, doc = data.organizationId, data.documentId
    annotation = data.filters.annotationId if data.filters else None
    if data.scope == "apiKey":
        return "apiKey", None, None
    if data.scope == "organization":
        if not org:
            raise invalid("scope 'organization' needs organizationId.",
                          [issue(["organizationId"], "Required for scope 'organization'")])
        return "organization", org, None
    if data.scope == "document":
        problems = []
        if not org:
            problems.append(issue(["organizationId"], "Required for scope 'document'"))
        if not doc and not annotation:
            problems.append(issue(["documentId"], "Required for scope 'document'"))
        if problems:
            raise invalid("scope 'document' needs organizationId and documentId.", problems)
        return "document", org, doc
    if not org:
        return "apiKey", None, None  # rule 4: without organizationId, documentId is ignored
    return ("document", org, doc) if doc else ("organization", org, None)


def needs_model(data: SearchJudgments) -> bool:
    """Whether the search ranks by meaning (the annotation and recency shortcuts do not)."""
    annotation = data.filters.annotationId if data.filters else None
    return not annotation and not data.recencyDays


def record(row: dict[str, Any], scope: str) -> dict[str, Any]:
    """A judgment as the spec's Judgment record."""
    user = row["action_user"] or {}
    agent = row["agent"]
    return {
        "recordId": row["id"], "reasoning": row["reasoning"], "decision": row["decision"],
        "confidence": row["confidence"], "actionUser": {k: user[k]
                                                        for k in ("name", "userId")
                                                        if k in user}, "createdAt": row["created_at"],
        "similarity": round(float(row["similarity"]), 6) if row["similarity"] is not None else None, "scope": scope,
        "agent": ({k: agent.get(k)
                   for k in ("agentId", "agentType", "executionId",
                             "agentFields")} if isinstance(agent, dict) else None)
    }


def _keep(row: dict[str, Any], data: SearchJudgments, *, skip_dates: bool) -> bool:
    f = data.filters
    if f is None:
        return True
    if f.decision and row["decision"] != f.decision:
        return False
    if f.judgeType and row["judge_type"] != f.judgeType:
        return False
    if f.contentType and row["content_type"] != f.contentType:
        return False
    if f.reviewerId and row["reviewer_id"] != f.reviewerId:
        return False
    if f.dateRange and not skip_dates:
        if f.dateRange.start is not None and row["created_at"] < f.dateRange.start:
            return False
        if f.dateRange.end is not None and row["created_at"] > f.dateRange.end:
            return False
    if f.excludeDocumentIds and row["document_id"] is not None:
        if row["document_id"].strip() in {d.strip() for d in f.excludeDocumentIds}:
            return False
    return True


# The first HNSW beam (`hnsw.ef_search`), and past LARGE_GRAPH rows in the table (the graph's size) LARGE_BEAM.
BEAM, LARGE_GRAPH, LARGE_BEAM = 100, 250_000, 300


@dataclass(frozen=True)
class Plan:
    """How one scoped vector search runs: an exact scan of the scope, or HNSW with these settings (on the
    half-precision index where pgvector has one, `half`)."""

    exact: bool
    settings: dict[str, str] = field(default_factory=dict)
    half: bool = False


# What an exact scan and an iterative HNSW search of a scope cost Postgres, in rows an exact scan reads in the same
# time: an exact scan ~1.5 us a row; HNSW ~11 ms, plus ~0.75 ms for each multiple of the table the scope is a
# fraction of (the scan passes over total / in_scope rows for each row it keeps). Measured at 100k rows on AVX2
# (docs/adr/0047): a 14.5% organization 23 ms exact against 13.7 by HNSW (recall@10 0.993), a 5% one 6.8 against 26.
HNSW_BASE_ROWS, HNSW_ROWS_PER_SPARSITY = 7_300, 500


def exact_is_cheaper(in_scope: int, total: int) -> bool:
    """Whether scanning the scope's rows costs less than an iterative HNSW search of it (a large share of the table
    is cheaper through the graph, which passes over few rows outside it)."""
    return in_scope <= HNSW_BASE_ROWS + HNSW_ROWS_PER_SPARSITY * total / max(in_scope, 1)


def plan(*, pgvector: tuple[int, ...], in_scope: int, total: int, k: int, exact_threshold: int, ef_max: int,
         indexed: bool = True) -> Plan:
    """Exact up to the threshold, unless the scope is a share of the table that an iterative HNSW search (pgvector
    0.8+) serves for less; above it HNSW, iterative where pgvector has it, else a widened beam. On the
    half-precision index where pgvector has one and it is `indexed` (built); else on the full-precision one."""
    if in_scope <= exact_threshold and (pgvector < (0, 8) or exact_is_cheaper(in_scope, total)):
        return Plan(exact=True)
    half = pgvector >= HALF_FROM and indexed
    if pgvector >= (0, 8):
        # Iterative scans go on past ef_search until k rows pass the scope filter (relaxed order: re-sorted
        # after); the tuple budget covers the scope's selectivity (in_scope is a lower bound of the scope).
        tuples = min(1_000_000, max(20_000, math.ceil(8 * k * total / in_scope)))
        return Plan(
            exact=False,
            half=half,
            settings={
                # The first beam (iterative scans widen it where the scope filter needs more): 100 gave recall@10
                # 0.99 over 100k rows at half the cost of 200; over a million rows 300 (recall@10 0.981-0.988 in
                # every scope against 0.972-0.983 at 200, SQL p50 +2 ms; docs/adr/0026, "The first beam").
                "hnsw.ef_search": str(min(ef_max, max(BEAM if total <= LARGE_GRAPH else LARGE_BEAM, 3 * k))),
                "hnsw.iterative_scan": "relaxed_order",
                "hnsw.max_scan_tuples": str(tuples)
            })
    # pgvector 0.6 filters after the index scan: widen the beam to the scope's selectivity.
    return Plan(exact=False, half=half,
                settings={"hnsw.ef_search": str(min(ef_max, max(BEAM, math.ceil(2 * k * total / in_scope))))})


_pgvector: dict[int, tuple[int, ...]] = {}  # per pool: the server's pgvector version, read once
# Per (pool, model, kind): (when to read it again, whether an index of the expression the server wants serves it).
# False while a worker builds the half-precision one after an upgrade from full precision (registry.upgrade_indexes):
# searches order by the old index meanwhile.
_indexed: dict[tuple[int, str, str], tuple[float, bool]] = {}


async def _version(svc: Services) -> tuple[int, ...]:
    key = id(svc.reader)
    if key not in _pgvector:
        async with svc.reader.connection() as conn:
            _pgvector[key] = await pgvector_version(conn)
    return _pgvector[key]


async def _is_indexed(svc: Services, model: str, kind: str) -> bool:
    key = (id(svc.reader), model, kind)
    known = _indexed.get(key)
    if known is None or (not known[1] and known[0] <= time.monotonic()):  # once built, indexes stay
        async with svc.reader.connection() as conn:
            known = (time.monotonic() + svc.settings.embedding_refresh_s, await serving(conn, model, (kind, )))
        _indexed[key] = known
    return known[1]


# Past this many words (and with no identifier in them) a query is prose: requiring every word to match finds
# little beyond what the vector finds, and ANDing the posting lists of common words costs tens of ms at 100k rows.
MAX_LEXICAL_WORDS = 8
# The same text embedded twice by the service's runtime: cosine 1.0000 (ONNX and torch fp32 agree to 1.0000 too,
# OpenVINO bf16 to 0.9999, which embeddings/export.py checks; torch bf16 drifts to 0.998 and misses this tier).
# Texts that differ reach it only when nearly identical.
IDENTICAL = 0.999
# "rejected: ", "document_approved: ": the decision derive.texts puts before the reasoning it embeds.
DECISION_PREFIX = re.compile(r"^\s*[A-Za-z_]{1,40}\s*:\s*")


def lexical_text(query: str) -> str | None:
    """What the lexical arm matches: the query's identifiers when it has any ("status of SEC-4471" →
    "SEC-4471"), else a short query whole (every word must match); None for prose."""
    words = query.split()
    ids = [w for w in words if _identifier(w)]
    if ids:
        return " ".join(ids)
    return query if len(words) <= MAX_LEXICAL_WORDS else None


def _identifier(word: str) -> bool:
    """A word with a digit that names something: letters or inner punctuation beside it (SEC-4471, §4.2, W-9,
    log4j) or three digits or more (4471). A bare small number ("type 2", "defaults to 0.") names nothing:
    matched alone it ranks every text that mentions a 2 and drowns the vector match."""
    core = word.strip(".,;:!?()[]{}\"'")
    if not any(ch.isdigit() for ch in core):
        return False
    return not core.isdigit() or len(core) >= 3


def fuse(vector: list[dict], lexical: list[dict], *, vector_weight: float, lexical_weight: float,
         rrf_k: int) -> list[dict]:
    """Reciprocal rank fusion of the two rankings (rows keyed by judgment id).

    A stored text the query repeats (cosine >= IDENTICAL) comes first whatever the ranks: nothing is better
    evidence, and a lexical ranking (by term density) can put a shorter text that merely shares the words above
    it. Equal scores (typically the top of each ranking when they differ) go to the lexical match, the more
    specific evidence (an identifier, an exact phrase), then to the higher cosine.
    """
    scores: dict[str, float] = {}
    rows: dict[str, dict] = {}
    for weight, ranking in ((vector_weight, vector), (lexical_weight, lexical)):
        if weight <= 0:
            continue
        for rank, row in enumerate(ranking, start=1):
            rows.setdefault(row["id"], row)
            scores[row["id"]] = scores.get(row["id"], 0.0) + weight / (rrf_k + rank)
    matched = {r["id"] for r in lexical} if lexical_weight > 0 else set()
    return sorted(
        rows.values(), key=lambda r:
        (float(r["similarity"]) < IDENTICAL, -scores[r["id"]], r["id"] not in matched, -float(r["similarity"])))


def forget_queries() -> None:
    """Drop the recent query vectors, so the next search of a text encodes it (the eval times each encode)."""
    _recent.clear()


async def query_vector(embedder, *, api_key_id: str, text: str) -> list[float]:
    """The query's vector: this tenant's recent one for the same text, else encoded (with any others waiting)."""
    key = (embedder.name, api_key_id, text)
    vector = _recent.get(key)
    if vector is None:
        vector = await encode_query(embedder, text)
        _recent.put(key, vector)
    return list(vector)


async def _scope_size(svc: Services, params: dict[str, Any]) -> tuple[int, int]:
    """(rows in the scope, counted up to the exact-scan threshold + 1; rows in the table, estimated)."""
    threshold = svc.settings.search_exact_threshold
    key = (threshold, *params.values())
    known = _graph_scopes.get(key)
    if known is not None and known[0] > time.monotonic():
        return known[1], known[2]
    async with svc.reader.connection() as conn:
        in_scope, total = await repo.count_scope(conn, cap=threshold + 1, **params)
    total = max(total, in_scope)  # the planner's estimate lags a table that grew since its last analyze
    if in_scope > threshold or not exact_is_cheaper(in_scope, total):
        _graph_scopes.put(key, (time.monotonic() + GRAPH_SCOPE_TTL_S, in_scope, total))
    return in_scope, total


async def _vector_rows(svc: Services, embedder, *, api_key_id: str, data: SearchJudgments, org: str | None,
                       doc: str | None, k: int):
    settings = svc.settings
    params = {
        "model": embedder.name, "kind": data.embeddingType, "api_key_id": api_key_id, "organization_id": org,
        "document_id": doc
    }
    # The query is encoded (on the query threads) while Postgres sizes the scope: one waits on the other no more.
    encoding = asyncio.ensure_future(query_vector(embedder, api_key_id=api_key_id, text=data.query))
    try:
        in_scope, total = await _scope_size(svc, params)
        if in_scope == 0:
            return []
        vector = await encoding
    finally:
        if not encoding.done():
            encoding.cancel()  # an empty scope needs no vector
        elif not encoding.cancelled():
            encoding.exception()  # seen, so an encode that failed for an empty scope is not logged as lost
    how = plan(
        pgvector=await _version(svc), in_scope=in_scope, total=total, k=k,
        exact_threshold=settings.search_exact_threshold, ef_max=settings.search_ef_search_max,
        indexed=(in_scope <= settings.search_exact_threshold
                 or await _is_indexed(svc, embedder.name, data.embeddingType)))
    literal = repo.vector_literal(vector)
    async with svc.reader.connection() as conn, _settings_scope(conn) as local:
        await repo.use_settings(conn, how.settings, local=local)
        rows = await repo.nearest(conn, dimensions=len(vector), exact=how.exact, half=how.half, k=k, vector=literal,
                                  texts=as_written(data.query), **params)
        lexical = []
        text = lexical_text(data.query)
        if settings.search_lexical_weight > 0 and text:
            lexical = await repo.lexical(conn, dimensions=len(vector), k=k, cap=settings.search_lexical_candidates,
                                         text=text, vector=literal, **params)
    same = sorted((r for r in rows if r["same"]), key=lambda r: (-r["created_at"], r["id"]))  # newest first
    found = sorted((r for r in rows if not r["same"]), key=lambda r: -float(r["similarity"]))  # relaxed_order
    fused = fuse(found, lexical, vector_weight=settings.search_vector_weight,
                 lexical_weight=settings.search_lexical_weight, rrf_k=settings.search_rrf_k)
    # A judgment whose own text was searched leads, whatever its vector's cosine (nothing is better evidence).
    first = {r["id"] for r in same}
    return (same + [r for r in fused if r["id"] not in first])[:k]  # rule 7: the post-filters see the top limit * 3


@asynccontextmanager
async def _settings_scope(conn: Any) -> AsyncIterator[bool]:
    """Where the search's settings live: the pooled session (autocommit: no BEGIN and COMMIT around two reads), or,
    behind a transaction-mode pooler, a transaction of the search's own with SET LOCAL (yields whether local)."""
    if not pooled_by_transaction(conn):
        yield False
        return
    async with conn.transaction():
        yield True


def as_written(query: str) -> list[str]:
    """The texts a query may be a stored judgment's text as: itself, and without a leading decision ("rejected: …",
    as the review text is embedded) so that the reasoning as the reviewer wrote it matches too."""
    bare = DECISION_PREFIX.sub("", query, count=1)
    return [query, bare] if bare.strip() and bare != query else [query]


async def run(svc: Services, embedder, *, api_key_id: str, data: SearchJudgments) -> dict[str, Any]:
    """Search past judgments: the annotation thread, the recent days, or by meaning (rules 1-7)."""
    started = time.perf_counter()
    scope, org, doc = resolve_scope(data)
    annotation = data.filters.annotationId if data.filters else None
    k = data.limit * 3
    skip_dates = False
    if annotation:
        if not org:
            raise invalid("filters.annotationId needs organizationId.",
                          [issue(["organizationId"], "Required with filters.annotationId")])
        async with svc.reader.connection() as conn:
            rows = await repo.thread(conn, api_key_id=api_key_id, organization_id=org, document_id=doc,
                                     annotation_id=annotation, limit=k)
    elif data.recencyDays:
        today = datetime.fromtimestamp(svc.clock(), tz=timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
        end_ms = int(today.timestamp() * 1000)
        skip_dates = True  # recencyDays overrides dateRange
        async with svc.reader.connection() as conn:
            rows = await repo.recent(conn, api_key_id=api_key_id, organization_id=org, document_id=doc,
                                     start_ms=end_ms - data.recencyDays * DAY_MS, end_ms=end_ms, limit=k)
    else:
        rows = await _vector_rows(svc, embedder, api_key_id=api_key_id, data=data, org=org, doc=doc, k=k)
    results = [record(r, scope) for r in rows if _keep(r, data, skip_dates=skip_dates)][:data.limit]
    return {
        "results": results, "totalInScope": len(results), "searchLatencyMs": round(
            (time.perf_counter() - started) * 1000, 2)
    }


def path_taken(data: SearchJudgments) -> str:
    """Which way `run` answers a search: `annotation` (the thread), `recency` (the recent days) or `vector`."""
    if data.filters and data.filters.annotationId:
        return "annotation"
    return "recency" if data.recencyDays else "vector"
