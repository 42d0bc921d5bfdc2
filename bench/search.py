"""Judgment search: latency per scope (sequential and 16 concurrent), recall@10 against exact, full pages,
exact-text self-retrieval, and ingest throughput.

The corpus is sentences from the docstrings of installed packages, embedded once with the packaged model
and cached in bench/.cache. One tenant holds the table, in organizations of 0.5%, 5%, 80% and 14.5%.
"""

import ast
import asyncio
import functools
import json
import os
import random
import re
import shutil
import sysconfig
import time
from pathlib import Path

import httpx
import numpy as np
import psycopg
from psycopg.rows import dict_row

from bench.common import cpu_profile, machine, new_tenant, pct, stack, write_section

CACHE = Path(__file__).resolve().parent / ".cache"
N = int(os.environ.get("BENCH_SEARCH_N", "100000"))
# The model the service runs and the corpus is embedded with (COLLAB_EMBEDDING_MODEL; unset: the default).
MODEL = os.environ.get("COLLAB_EMBEDDING_MODEL") or None
DIMS = [384]  # set from the embedded corpus
QUERIES = 200
SMALL_SHARE = 0.05


def corpus(n: int) -> list[str]:
    """n + QUERIES distinct sentences from docstrings in site-packages (deterministic)."""
    return _sentences(n)[:n + QUERIES]


def spares(n: int) -> list[str]:
    """Further distinct sentences beside corpus(n) (never stored, never embedded by the bench): queries asked once.

    The service keeps recent query vectors per tenant, so a text asked a second time skips the encode; every
    latency figure below asks fresh texts, apart from the one row that measures that cache.
    """
    return _sentences(n)[n + QUERIES:]


@functools.cache
def _sentences(n: int) -> list[str]:
    site = Path(sysconfig.get_paths()["purelib"])
    sentences: dict[str, None] = {}
    for path in sorted(site.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(errors="ignore"))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef, ast.Module)):
                doc = ast.get_docstring(node)
                for sentence in re.split(r"(?<=[.!?])\s+", " ".join((doc or "").split())):
                    if 40 <= len(sentence) <= 300 and sentence[0].isupper() and "http" not in sentence:
                        sentences[sentence] = None
        if len(sentences) >= (n + QUERIES) * 1.2:
            break
    texts = list(sentences)
    random.Random(11).shuffle(texts)
    if len(texts) < n + QUERIES:
        raise SystemExit(f"only {len(texts)} sentences found")
    return texts


def embedded(texts: list[str]) -> tuple[np.ndarray, dict]:
    """Vectors of the texts as the service stores them (its own runtime, cached), and that runtime's bulk rate."""
    from collab.embeddings.model import load

    model = load(MODEL, cache_dir=CACHE / "models")
    path = CACHE / f"vectors-{model.name}-{model.model.label}-{len(texts)}.npy"
    sample = texts[:2048]
    model.encode(sample[:64])
    started = time.perf_counter()
    model.encode(sample)
    info = {"runtime": model.model.label, "per_s": len(sample) / (time.perf_counter() - started)}
    if path.exists():
        return np.load(path), info
    CACHE.mkdir(parents=True, exist_ok=True)
    vectors = np.asarray(model.encode(texts), dtype=np.float32)
    np.save(path, vectors)
    return vectors, info


def labelled_queries() -> list[str]:
    """The labelled set's queries (fixtures/search): short, as people type them (paraphrases, questions, keywords)."""
    path = Path(__file__).resolve().parents[1] / "fixtures" / "search" / "queries.jsonl"
    return [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in v) + "]"


SCOPES = (("org_a", 0.005), ("org_b", 0.05), ("org_c", 0.80), ("org_d", 0.145))


def org_of(i: int, n: int) -> str:
    """The organization of row i: contiguous shares of the table."""
    edge = 0.0
    for org, share in SCOPES:
        edge += share
        if i < edge * n:
            return org
    return SCOPES[-1][0]


# Scale runs (BENCH_SEARCH_COPIES > 1): every real row is copied in SQL with a perturbed vector (uniform noise of
# ±NOISE per dimension, cosine ≈ 0.96 to its original): 1M rows from the 100k embedded sentences, since embedding
# a million texts on two CPU cores is out of reach. Copies keep their original's organization and text.
COPIES = int(os.environ.get("BENCH_SEARCH_COPIES", "1"))
NOISE = 0.025


def replicate(conn, key: str, copies: int) -> None:
    """Add copies - 1 perturbed copies of every row of the tenant (activities, judgments, embeddings)."""
    series = "generate_series(1, %(extra)s) c"
    params = {"key": key, "extra": copies - 1, "noise": NOISE}
    conn.execute(
        "insert into activities (api_key_id, id, organization_id, document_id, feature_type, action_type, action_user,"
        " \"timestamp\") select api_key_id, id || '-c' || c, organization_id, document_id, feature_type, action_type,"
        f' action_user, "timestamp" from activities, {series} where api_key_id = %(key)s', params)
    conn.execute(
        "insert into judgments (api_key_id, id, organization_id, document_id, decision, judge_type, reasoning,"
        " confidence, action_user, created_at) select api_key_id, id || '-c' || c, organization_id, document_id,"
        " decision, judge_type, reasoning, confidence, action_user, created_at"
        f" from judgments, {series} where api_key_id = %(key)s", params)
    # The noise array refers to the outer row (0 * c), so it is drawn per copy, not once.
    conn.execute(
        "insert into judgment_embeddings (api_key_id, judgment_id, kind, model, content_hash, organization_id,"
        " document_id, embedding) select api_key_id, judgment_id || '-c' || c, kind, model, content_hash,"
        " organization_id,"
        " document_id, embedding + (select array_agg((random() - 0.5) * 2 * %(noise)s)"
        f"   from generate_series(1, {DIMS[0]} + 0 * c))::vector"
        f" from judgment_embeddings, {series} where api_key_id = %(key)s", params)


def load_table(database_url: str, key: str, vectors: np.ndarray, texts: list[str], model: str) -> float:
    """Bulk-load activities, judgments and embeddings for the tenant (× COPIES); returns the HNSW build seconds."""
    n = len(vectors)
    with psycopg.connect(database_url, autocommit=True) as conn:
        for row in conn.execute(
                "select indexname from pg_indexes where indexname like 'judgment_embeddings_hnsw%%'").fetchall():
            conn.execute(f'drop index "{row[0]}"')
        for table in ("activities", "judgments", "judgment_embeddings"):
            cols = {
                "activities": ("(api_key_id, id, organization_id, document_id, feature_type, action_type,"
                               ' action_user, "timestamp")'),
                "judgments": (
                    "(api_key_id, id, organization_id, document_id, decision, judge_type, reasoning, confidence,"
                    " action_user, created_at)"), "judgment_embeddings": (
                        "(api_key_id, judgment_id, kind, model, content_hash, organization_id, document_id, embedding)")
            }[table]
            with conn.cursor().copy(f"copy {table} {cols} from stdin") as copy:
                for i, vector in enumerate(vectors):
                    rid, org, doc = f"r{i}", org_of(i, n), f"doc{i % 200}"
                    if table == "activities":
                        copy.write_row((key, rid, org, doc, "comment", "comment.add", '{"userId": "u"}', i))
                    elif table == "judgments":
                        # A docstring may hold a NUL, which Postgres text refuses (the service strips it too).
                        reasoning = texts[i].replace("\x00", "")
                        copy.write_row((key, rid, org, doc, "comment", "human", reasoning, 1.0, '{"userId": "u"}', i))
                    else:
                        copy.write_row((key, rid, "review", model, "bench", org, doc, _vec(vector)))
        if COPIES > 1:
            replicate(conn, key, COPIES)
        # As autovacuum leaves an insert-heavy table (PostgreSQL 13+ vacuums after inserts): the visibility map
        # set, so scope counts are index-only scans rather than a heap read per row.
        conn.execute("vacuum analyze judgments")
        conn.execute("vacuum analyze judgment_embeddings")
        started = time.perf_counter()
        with conn.transaction():
            from collab.embeddings.registry import HALF_FROM, index_statement

            version = tuple(
                int(p) for p in conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
                [0].split("."))
            conn.execute("set local maintenance_work_mem = '2GB'")
            conn.execute("set local max_parallel_maintenance_workers = 2")
            # The index the service builds for its active model (half precision where pgvector has halfvec).
            conn.execute(index_statement(model=model, kind="review", dimensions=DIMS[0], half=version >= HALF_FROM))
        return time.perf_counter() - started


def recall(database_url: str, key: str, org: str | None, qvecs: np.ndarray, model: str, n: int) -> dict:
    """recall@10 of the app's own vector plan (collab.judgments.search.plan) against an exact scan."""
    from collab.config import Settings
    from collab.judgments.search import plan

    settings = Settings()
    where = "model = %(m)s and kind = 'review' and api_key_id = %(t)s" + (" and organization_id = %(o)s" if org else "")
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        version = tuple(
            int(p) for p in conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
            ["extversion"].split("."))
        in_scope = conn.execute(f"select count(*) as c from judgment_embeddings where {where}",
                                {"m": model, "t": key, "o": org}).fetchone()["c"]
        how = plan(pgvector=version, in_scope=in_scope, total=n, k=30, exact_threshold=settings.search_exact_threshold,
                   ef_max=settings.search_ef_search_max)
        hits, ms = [], []
        for q in qvecs:
            params = {"q": _vec(q), "m": model, "t": key, "o": org}
            d = DIMS[0]
            order = f"(embedding::vector({d}) <=> %(q)s::vector({d}))"
            indexed = f"(embedding::halfvec({d}) <=> %(q)s::halfvec({d}))" if how.half else order
            exact = {
                r["judgment_id"]
                for r in conn.execute(
                    f"select judgment_id from judgment_embeddings where {where} order by {order} + 0 limit 10", params,
                    prepare=False)
            }
            with conn.transaction():
                for name, value in how.settings.items():
                    conn.execute("select set_config(%s, %s, true)", (name, value))
                started = time.perf_counter()
                rows = conn.execute(
                    f"select judgment_id, {order} as d from judgment_embeddings where {where}"
                    f" order by {indexed if not how.exact else order + ' + 0'} limit 30", params,
                    prepare=False).fetchall()
                ms.append((time.perf_counter() - started) * 1000)
            got = [r["judgment_id"] for r in sorted(rows, key=lambda r: r["d"])[:10]]
            hits.append(len(exact & set(got)) / 10)
    return {
        "rows": in_scope,
        "path": "exact" if how.exact else "HNSW " + ", ".join(f"{k}={v}" for k, v in how.settings.items()),
        "recall": float(np.mean(hits)), "sql p50": pct(ms, 50)
    }


async def http_level(base: str, headers: dict, queries: list[dict], *, warm: list[str], concurrency: int = 1) -> dict:
    """Search latency through HTTP; `queries` are request bodies (each with an `expect` id or None), after a
    warm-up with the texts `warm` (others than those measured, so none of them is answered from the vector cache)."""
    latencies, sizes, top1 = [], [], []

    async def one(client, q):
        body = {k: v for k, v in q.items() if k != "expect"}
        started = time.perf_counter()
        response = await client.post("/v2/memory/search", json={"data": body}, headers=headers)
        latencies.append((time.perf_counter() - started) * 1000)
        results = response.json()["result"]["results"]
        sizes.append(len(results))
        if q.get("expect"):
            top1.append(bool(results) and results[0]["recordId"] == q["expect"])

    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as client:
        for text in warm:
            await client.post("/v2/memory/search", json={"data": {"query": text}}, headers=headers)
        started = time.perf_counter()
        queue = list(queries)

        async def lane():
            while queue:
                await one(client, queue.pop())

        await asyncio.gather(*(lane() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {
        "p50": pct(latencies, 50), "p99": pct(latencies, 99), "per_s": len(queries) / elapsed,
        "full": sum(1 for s in sizes if s == 10) / len(sizes), "top1": (sum(top1) / len(top1)) if top1 else None
    }


def wrk_rate(base: str, headers: dict, texts: list[str], *, connections: int = 16, duration: float = 8) -> dict:
    """Searches/s from wrk (C, one thread): a client that takes little of the two cores the service runs on.

    Each request asks the next text of `texts`; past the list, each text again with the round appended, so no
    text is asked twice (none is answered from the recent-query cache)."""
    from bench.crud import wrk

    quoted = [json.dumps(t)[1:-1] for t in texts]  # JSON-escaped, without the quotes
    lua = ['wrk.method = "POST"', 'wrk.headers["content-type"] = "application/json"']
    lua += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    lua.append("local texts = {" + ",".join(f"[==[{q}]==]" for q in quoted) + "}")
    lua += [
        "local n = 0", "request = function()", "  local i = n % #texts + 1", "  local round = math.floor(n / #texts)",
        "  n = n + 1", "  local q = texts[i]", "  if round > 0 then q = q .. ' (' .. round .. ')' end",
        '  return wrk.format(nil, nil, nil, \'{"data":{"query":"\' .. q .. \'","limit":10}}\')', "end"
    ]
    return wrk(base + "/v2/memory/search", "\n".join(lua) + "\n", duration=duration, connections=connections)


async def ingest_rate(base: str, headers: dict, database_url: str, key: str, texts: list[str]) -> float:
    """Judgments/s from `activities/add` (500 per call) until every one is searchable (has its vector)."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        await client.post("/v2/workspace/activityconfig/update",
                          json={"data": {"activityServiceConfig": {"isEnabled": True}}}, headers=headers)
        started = time.perf_counter()
        for at in range(0, len(texts), 500):
            activities = [{
                "id": f"i{at + j}", "featureType": "comment", "actionType": "comment_annotation.reject",
                "actionUser": {"userId": "u"}, "targetEntityId": f"a{at + j}", "entityData": {"reasoning": t}
            } for j, t in enumerate(texts[at:at + 500])]
            response = await client.post(
                "/v2/activities/add",
                json={"data": {"organizationId": "ingest", "documentId": "d",
                               "activities": activities}}, headers=headers)
            response.raise_for_status()
    with psycopg.connect(database_url, autocommit=True) as conn:
        while conn.execute(
                "select count(*) from judgment_embeddings where api_key_id = %s and organization_id = 'ingest'"
                " and kind = 'review'", (key, )).fetchone()[0] < len(texts):
            if time.perf_counter() - started > 900:
                raise RuntimeError("ingest did not finish in 15 minutes")
            time.sleep(0.2)
    return len(texts) / (time.perf_counter() - started)


def _active_model(conn, timeout_s: float = 600) -> str:
    """The model search uses, once the worker has registered it (its first start exports the model first)."""
    deadline = time.monotonic() + timeout_s
    while (row := conn.execute("select name from embedding_models where active").fetchone()) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the worker registered no embedding model")
        time.sleep(0.5)
    return row[0]


def main() -> str:
    texts = corpus(N)
    vectors, embed_info = embedded(texts)
    DIMS[0] = int(vectors.shape[1])
    table_vecs, query_vecs = vectors[:N], vectors[N:]
    rng = random.Random(5)
    rows = N * COPIES
    from collab.embeddings import catalog

    title = ("## Judgment search" + (f" at {rows:,} rows" if COPIES > 1 else "") +
             f" ({cpu_profile()} profile, {MODEL or catalog.DEFAULT})")
    scale = (f" × {COPIES} (each row copied with a perturbed vector, cosine ≈ 0.96: {rows:,} rows; exact-text "
             f"self-retrieval is not measured, since every text is stored {COPIES} times)" if COPIES > 1 else "")
    lines = [
        title, "", f"Machine: {machine()}. {N} real-text vectors (docstring sentences){scale} in one tenant, in "
        "organizations of 0.5%, 5%, 80% and 14.5% of the rows; held-out sentences as queries (limit 10), and stored "
        "sentences as exact-text queries (self-retrieval). Hybrid search on (vector + full-text RRF, weights 1/1).", ""
    ]
    with stack(COLLAB_LOG_LEVEL="WARNING") as (base, _):
        with httpx.Client(base_url=base, timeout=30) as client:
            headers, ingest_headers = new_tenant(client), new_tenant(client)
        key = headers["x-service-api-key"]
        database_url = os.environ["BENCH_DATABASE_URL"]
        with psycopg.connect(database_url, autocommit=True) as conn:
            model = _active_model(conn)
            server = conn.execute("select current_setting('server_version') || ', pgvector ' || extversion"
                                  " from pg_extension where extname = 'vector'").fetchone()[0]
        build_s = load_table(database_url, key, table_vecs, texts[:N], model)
        lines += [
            f"PostgreSQL {server}. HNSW build (m=16, ef_construction=128) over {rows} vectors: {build_s:.1f} s.", "",
            "| scope | rows | vector path | recall@10 vs exact | SQL p50 ms | e2e p50 ms | e2e p99 ms"
            " | full pages | self top-1 |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"
        ]
        fresh = iter(spares(N))

        def asked_once(count: int) -> list[str]:
            return [next(fresh) for _ in range(count)]

        for label, org in (("tenant-wide", None), ("org 0.5%", "org_a"), ("org 5%", "org_b"), ("org 14.5%", "org_d"),
                           ("org 80%", "org_c")):
            # Every held-out query at scale: 50 moved recall@10 by up to 0.05 between samples (docs/benchmarks.md).
            r = recall(database_url, key, org, query_vecs[:100 if COPIES == 1 else QUERIES], model, rows)
            members = [i for i in range(N) if org is None or org_of(i, N) == org]
            scope = {"organizationId": org} if org else {}
            queries = [{"query": t, "limit": 10, **scope} for t in asked_once(QUERIES)]
            own = [{"query": texts[i], "limit": 10, "expect": f"r{i}", **scope}
                   for i in rng.sample(members, min(100, len(members)))]
            h = asyncio.run(http_level(base, headers, queries, warm=asked_once(10)))
            top1 = (f"{asyncio.run(http_level(base, headers, own, warm=asked_once(10)))['top1']:.2f}"
                    if COPIES == 1 else "n/a")
            lines.append(
                f"| {label} | {r['rows']} | {r['path']} | {r['recall']:.3f} | {r['sql p50']:.1f} | {h['p50']:.1f} | "
                f"{h['p99']:.1f} | {h['full']:.2f} | {top1} |")
            if org is None:
                again = asyncio.run(http_level(base, headers, queries, warm=asked_once(10)))
        lines += [
            "",
            f"Every query text above is asked once. The tenant-wide queries asked a second time (their vectors from "
            f"the service's recent-query cache, no encode): e2e p50 {again['p50']:.1f} ms, p99 {again['p99']:.1f} ms."
        ]
        typed = asyncio.run(
            http_level(base, headers, [{"query": q, "limit": 10} for q in labelled_queries()], warm=asked_once(10)))
        lines += [
            "", f"Queries as people type them (the {len(labelled_queries())} queries of the labelled set, "
            f"fixtures/search; 1-18 words, 7 on average, each asked once), tenant-wide: e2e p50 {typed['p50']:.1f} ms, "
            f"p99 {typed['p99']:.1f} ms."
        ]
        conc = asyncio.run(
            http_level(base, headers, [{"query": t, "limit": 10} for t in asked_once(2 * QUERIES)], warm=asked_once(10),
                       concurrency=16))
        lines += [
            "", f"16 concurrent clients, tenant-wide, each text asked once: {conc['per_s']:.0f} searches/s, "
            f"p50 {conc['p50']:.1f} ms, p99 {conc['p99']:.1f} ms (a Python client, httpx, on the same two cores: "
            f"~1 ms of CPU per search)."
        ]
        if shutil.which("wrk"):
            w = wrk_rate(base, headers, asked_once(2 * QUERIES * 6))
            lines += [
                f"The same through wrk (C, 16 connections, 8 s, each text asked once): {w['rps']:.0f} searches/s, "
                f"p50 {w['p50']:.1f} ms, p99 {w['p99']:.1f} ms, non-2xx {w['non2xx']}."
            ]
        ingest_n = int(os.environ.get("BENCH_INGEST_N", "5000")) if COPIES == 1 else 0
        if ingest_n:
            rate = asyncio.run(
                ingest_rate(base, ingest_headers, database_url, ingest_headers["x-service-api-key"], texts[:ingest_n]))
            lines += [
                f"Ingest: {ingest_n} judgments through `activities/add` (500 per call) until searchable: "
                f"{rate:.0f} judgments/s."
            ]
    lines += [
        "", f"Stored and query vectors come from the service's own runtime ({embed_info['runtime']}); its bulk rate on "
        f"2,048 of these sentences: {embed_info['per_s']:.0f} texts/s."
    ]
    table = "\n".join(lines)
    # One section per CPU profile, so the bf16 and the AVX2 figures stand side by side (docs/benchmarks.md).
    named = "" if model == "all-MiniLM-L6-v2" else f"-{model}"  # the fast model's sections keep their names
    write_section(("search" if COPIES == 1 else "search-scale") + f"-{cpu_profile()}{named}", table)
    return table


if __name__ == "__main__":
    print(main())
