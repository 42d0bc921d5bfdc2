"""Embedding: one-query latency (torch vs ONNX fp32 vs ONNX int8), bulk texts/s, and agreement with torch.

Queries are distinct docstring sentences (no LRU hits), one at a time; bulk is 2,000 of them in one call
(length-sorted batches of 64 on all cores, or the GPU when one is usable). Cosines are to the torch vectors.
"""

import os
import time

import numpy as np

from bench.common import machine, pct, write_section
from bench.search import corpus

QUERIES = 300
BULK = 2000


def query_latency(model, texts: list[str]) -> tuple[float, float]:
    for text in texts[:20]:
        model.encode([text + " (warm-up)"])
    took = []
    for text in texts:
        started = time.perf_counter()
        model.encode([text])
        took.append((time.perf_counter() - started) * 1000)
    return pct(took, 50), pct(took, 99)


def bulk_rate(model, texts: list[str]) -> tuple[float, np.ndarray]:
    model.encode(texts[:128])
    started = time.perf_counter()
    vectors = np.asarray(model.encode(texts, batch_size=64), dtype=np.float32)
    return len(texts) / (time.perf_counter() - started), vectors


def main() -> str:
    from collab.embeddings.model import Embedder, resolve
    from collab.embeddings.runtime import bulk_device, native_bf16

    name, source = resolve(os.environ.get("COLLAB_EMBEDDING_MODEL") or None)
    texts = corpus(BULK)
    queries, bulk = texts[:QUERIES], texts[QUERIES:QUERIES + BULK]
    started = time.perf_counter()
    models = {
        "torch fp32": Embedder(name, source, runtime="torch"), "ONNX fp32": Embedder(name, source, dtype="fp32"),
        "ONNX int8": Embedder(name, source,
                              dtype="int8"), "OpenVINO bf16": Embedder(name, source, runtime="openvino", dtype="bf16")
    }
    load_s = time.perf_counter() - started
    reference = None
    lines = [
        f"## Embedding ({name})", "", f"Machine: {machine()}; bulk device: {bulk_device('auto')}.", "",
        "| runtime | query p50 ms | query p99 ms | bulk texts/s | min cosine to torch | mean cosine |",
        "|---|---:|---:|---:|---:|---:|"
    ]
    for label, model in models.items():
        p50, p99 = query_latency(model, queries)
        rate, vectors = bulk_rate(model, bulk)
        if reference is None:
            reference = vectors
        cos = (vectors * reference).sum(axis=1)
        lines.append(f"| {label} | {p50:.2f} | {p99:.2f} | {rate:.0f} | {cos.min():.4f} | {cos.mean():.4f} |")
    lines += [
        "", f"Loading all four (exports cached after the first run): {load_s:.1f} s. OpenVINO computes bf16 "
        f"natively on this CPU: {native_bf16()} (else it runs f32)."
    ]
    table = "\n".join(lines)
    write_section("embedding" + ("" if name == "all-MiniLM-L6-v2" else f"-{name}"), table)
    return table


if __name__ == "__main__":
    print(main())
