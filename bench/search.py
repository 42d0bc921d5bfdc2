"""Judgment search at 100k real-text vectors: HNSW build, SQL and HTTP latency, recall, queue, embedding.

The corpus is sentences from the docstrings of installed packages, embedded once with the packaged
model and cached in bench/.cache. Two tenants share one table: `big` (95%) and `small` (5%).
"""

import ast
import asyncio
import os
import random
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import numpy as np
import psycopg
from psycopg.rows import dict_row

from bench.common import machine, new_tenant, pct, stack, write_section

CACHE = Path(__file__).resolve().parent / ".cache"
N = int(os.environ.get("BENCH_SEARCH_N", "100000"))
QUERIES = 200
SMALL_SHARE = 0.05


def corpus(n: int) -> list[str]:
    """n + QUERIES distinct sentences from docstrings in site-packages (deterministic)."""
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
    return texts[: n + QUERIES]


def embedded(texts: list[str]) -> tuple[np.ndarray, dict]:
    """Vectors of the texts (cached), and embedding throughput fp32 vs bf16 measured on a sample."""
    from collab.embeddings.model import Embedder, resolve

    name, source = resolve(None)
    path = CACHE / f"vectors-{len(texts)}.npy"
    fp32 = Embedder(name, source)
    sample = texts[:2048]
    stats = {}
    for label, model in (("fp32", fp32), ("bf16", Embedder(name, source, dtype="bf16"))):
        model.encode(sample[:64])
        started = time.perf_counter()
        vectors = np.asarray(model.encode(sample, batch_size=64), dtype=np.float32)
        stats[label] = (len(sample) / (time.perf_counter() - started), vectors)
    cosine = float((stats["fp32"][1] * stats["bf16"][1]).sum(axis=1).min())
    info = {"fp32_per_s": stats["fp32"][0], "bf16_per_s": stats["bf16"][0], "bf16_min_cosine": cosine}
    if path.exists():
        return np.load(path), info
    CACHE.mkdir(parents=True, exist_ok=True)
    vectors = np.asarray(Embedder(name, source, dtype="bf16").encode(texts, batch_size=128), dtype=np.float32)
    np.save(path, vectors)
    return vectors, info


def _vec(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6g}" for x in v) + "]"


def load_table(database_url: str, keys: dict[str, str], vectors: np.ndarray, texts: list[str], model: str) -> float:
    """Bulk-load activities, judgments and embeddings for both tenants; returns the HNSW build seconds."""
    small_n = int(len(vectors) * SMALL_SHARE)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("drop index if exists judgment_embeddings_hnsw_bench")
        for row in conn.execute("select indexname from pg_indexes where indexname like 'judgment_embeddings_hnsw_%%'").fetchall():
            conn.execute(f'drop index "{row[0]}"')
        for table in ("activities", "judgments", "judgment_embeddings"):
            cols = {
                "activities": "(api_key_id, id, organization_id, document_id, feature_type, action_type, action_user, \"timestamp\")",
                "judgments": "(api_key_id, id, organization_id, document_id, decision, judge_type, reasoning, confidence, action_user, created_at)",
                "judgment_embeddings": "(api_key_id, judgment_id, kind, model, content_hash, organization_id, document_id, embedding)",
            }[table]
            with conn.cursor().copy(f"copy {table} {cols} from stdin") as copy:
                for i, vector in enumerate(vectors):
                    tenant = keys["small"] if i < small_n else keys["big"]
                    rid, doc = f"r{i}", f"doc{i % 200}"
                    if table == "activities":
                        copy.write_row((tenant, rid, "org", doc, "comment", "comment.add", '{"userId": "u"}', i))
                    elif table == "judgments":
                        copy.write_row((tenant, rid, "org", doc, "comment", "human", texts[i], 1.0, '{"userId": "u"}', i))
                    else:
                        copy.write_row((tenant, rid, "review", model, "bench", "org", doc, _vec(vector)))
        conn.execute("analyze judgment_embeddings")
        started = time.perf_counter()
        with conn.transaction():
            conn.execute("set local maintenance_work_mem = '1GB'")
            conn.execute(
                "create index judgment_embeddings_hnsw_bench on judgment_embeddings using hnsw"
                " ((embedding::vector(384)) vector_cosine_ops) with (m = 16, ef_construction = 64)"
                " where model = %s and kind = 'review'".replace("%s", f"'{model}'")
            )
        return time.perf_counter() - started


def sql_level(database_url: str, keys: dict, qvecs: np.ndarray, model: str) -> dict:
    """Latency and recall@10 at the SQL level: exact vs HNSW, whole table and the 5% tenant."""
    out = {}
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        def top(tenant, q, exact, ef=None):
            order = "(embedding::vector(384) <=> %(q)s::vector(384))" + (" + 0" if exact else "")
            with conn.transaction():
                if ef:
                    conn.execute(f"set local hnsw.ef_search = {ef}")
                started = time.perf_counter()
                rows = conn.execute(
                    f"select judgment_id from judgment_embeddings where model = %(m)s and kind = 'review'"
                    f" {'and api_key_id = %(t)s' if tenant else ''} order by {order} limit 10",
                    {"q": _vec(q), "m": model, "t": tenant},
                    prepare=False,
                ).fetchall()
                return [r["judgment_id"] for r in rows], (time.perf_counter() - started) * 1000

        for label, tenant in (("whole table", None), ("5% tenant", keys["small"])):
            truth, exact_ms, hnsw_ms, recall = [], [], [], []
            for q in qvecs:
                ids, ms = top(tenant, q, exact=True)
                truth.append(set(ids))
                exact_ms.append(ms)
            for q, want in zip(qvecs, truth):
                ids, ms = top(tenant, q, exact=False, ef=100)
                hnsw_ms.append(ms)
                recall.append(len(want & set(ids)) / 10)
            out[label] = {
                "exact p50": pct(exact_ms, 50), "exact p99": pct(exact_ms, 99),
                "hnsw p50": pct(hnsw_ms, 50), "hnsw p99": pct(hnsw_ms, 99), "hnsw recall@10": float(np.mean(recall)),
            }
    return out


async def http_level(base: str, headers: dict, texts: list[str], scope_label: str) -> dict:
    latencies, server = [], []
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        for text in texts[:20]:
            await client.post("/v2/memory/search", json={"data": {"query": text}}, headers=headers)
        for text in texts:
            started = time.perf_counter()
            response = await client.post("/v2/memory/search", json={"data": {"query": text, "limit": 10}}, headers=headers)
            latencies.append((time.perf_counter() - started) * 1000)
            body = response.json()["result"]
            server.append(body["searchLatencyMs"])
    return {"scope": scope_label, "p50": pct(latencies, 50), "p99": pct(latencies, 99), "server p50": pct(server, 50)}


async def queue_round_trip(redis_url: str, n: int = 300) -> dict:
    from arq import create_pool
    from arq.connections import RedisSettings

    redis = await create_pool(RedisSettings.from_dsn(redis_url))
    starts, totals = [], []
    for i in range(n):
        started = time.perf_counter()
        job = await redis.enqueue_job("echo", i=i)
        await job.result(timeout=10, poll_delay=0.002)
        totals.append((time.perf_counter() - started) * 1000)
        info = await job.result_info()
        starts.append((info.start_time - info.enqueue_time).total_seconds() * 1000)
    await redis.aclose()
    return {"enqueue→start p50": pct(starts, 50), "enqueue→start p99": pct(starts, 99), "round trip p50": pct(totals, 50)}


def main() -> str:
    texts = corpus(N)
    vectors, embed_info = embedded(texts)
    table_vecs, query_texts, query_vecs = vectors[:N], texts[N:], vectors[N:]
    lines = ["## Judgment search", "", f"Machine: {machine()}. {N} real-text vectors (docstring sentences) in one table, "
             f"two tenants: `big` {100 - SMALL_SHARE * 100:.0f}% and `small` {SMALL_SHARE * 100:.0f}%; {QUERIES} held-out sentences as queries.", ""]
    with stack(COLLAB_LOG_LEVEL="WARNING") as (base, _):
        with httpx.Client(base_url=base, timeout=30) as client:
            keys_headers = {"big": new_tenant(client), "small": new_tenant(client)}
        keys = {k: h["x-service-api-key"] for k, h in keys_headers.items()}
        database_url = os.environ["BENCH_DATABASE_URL"]
        with psycopg.connect(database_url, autocommit=True) as conn:
            model = conn.execute("select name from embedding_models where active").fetchone()[0]
        build_s = load_table(database_url, keys, table_vecs, texts[:N], model)
        lines += [f"HNSW build (m=16, ef_construction=64, maintenance_work_mem 1GB) over {N} vectors: {build_s:.1f} s", ""]
        sql = sql_level(database_url, keys, query_vecs, model)
        lines += ["SQL level (ms; recall@10 of HNSW ef_search=100 against exact):", "",
                  "| scope | exact p50 | exact p99 | HNSW p50 | HNSW p99 | HNSW recall@10 |", "|---|---:|---:|---:|---:|---:|"]
        # pgvector 0.6 filters after the index scan: the 5% row shows why scopes under the threshold are searched exactly.
        for label, r in sql.items():
            lines.append(f"| {label} | {r['exact p50']:.1f} | {r['exact p99']:.1f} | {r['hnsw p50']:.1f} | {r['hnsw p99']:.1f} | {r['hnsw recall@10']:.3f} |")
        http = [asyncio.run(http_level(base, keys_headers[k], query_texts, label))
                for k, label in (("big", "big tenant (95k, HNSW path)"), ("small", "small tenant (5%, exact path)"))]
        lines += ["", "Through HTTP (POST /v2/memory/search, limit 10, sequential; includes embedding the query in the worker):", "",
                  "| tenant | e2e p50 ms | e2e p99 ms | server-side p50 ms |", "|---|---:|---:|---:|"]
        for h in http:
            lines.append(f"| {h['scope']} | {h['p50']:.1f} | {h['p99']:.1f} | {h['server p50']:.1f} |")
        queue = asyncio.run(queue_round_trip(os.environ["BENCH_REDIS_URL"]))
        lines += ["", f"Queue (arq, worker polling every 10 ms): enqueue→start p50 {queue['enqueue→start p50']:.1f} ms, "
                  f"p99 {queue['enqueue→start p99']:.1f} ms; echo round trip p50 {queue['round trip p50']:.1f} ms."]
        reembed_rate = _reembed_rate(database_url, keys["small"])
    lines += ["", f"Embedding throughput (packaged all-MiniLM-L6-v2, batch 64, 2048 texts): fp32 {embed_info['fp32_per_s']:.0f} texts/s, "
              f"bf16 {embed_info['bf16_per_s']:.0f} texts/s (min cosine to fp32 {embed_info['bf16_min_cosine']:.4f}).",
              f"`collab reembed --bf16` over the small tenant (DB reads and writes included): {reembed_rate:.0f} texts/s."]
    table = "\n".join(lines)
    write_section("search", table)
    return table


def _reembed_rate(database_url: str, api_key: str) -> float:
    from collab.embeddings.model import resolve

    _, source = resolve(None)
    child_env = dict(os.environ, COLLAB_DATABASE_URL=database_url, COLLAB_REDIS_URL=os.environ["BENCH_REDIS_URL"],
                     COLLAB_LOG_LEVEL="WARNING")
    done = subprocess.run([sys.executable, "-m", "collab.cli", "reembed", "--model", source, "--kind", "review",
                           "--api-key", api_key, "--bf16", "--batch-size", "512"], env=child_env, check=True,
                          capture_output=True, text=True)
    # The CLI reports its rate over the re-embedding itself (model loading and imports excluded).
    return float(re.search(r"\((\d+) texts/s", done.stdout).group(1))


if __name__ == "__main__":
    print(main())
