"""Comments benchmark: add threads at scale, then get one document's threads and count/get over many documents.

python -m bench.comments [--threads 10000] [--comments 10] [--documents 100] [--samples 200]

Starts the full stack (bench.common.stack), adds `threads` threads of `comments` comments each, spread evenly over
`documents` documents (100 threads per add call), then measures, one request at a time: commentannotations/get for
one document (first page, default pageSize 1000), commentannotations/count/get for one user over every document,
and comments/add of one reply. Prints a table (p50/p99 ms) and the add rate.
"""

import argparse
import time

import httpx

from bench.common import machine, new_tenant, pct, stack

ORG = "org-comments"


def _post(client: httpx.Client, path: str, data: dict, headers: dict) -> dict:
    response = client.post(path, json={"data": data}, headers=headers)
    response.raise_for_status()
    return response.json()["result"]


def _seed(client: httpx.Client, h: dict, *, threads: int, comments: int, documents: int) -> float:
    """Add the threads; the seconds it took."""
    docs = [f"doc-{n}" for n in range(documents)]
    _post(client, "/v2/organizations/add", {"organizations": [{"organizationId": ORG}]}, h)
    for start in range(0, documents, 1000):
        _post(client, "/v2/organizations/documents/add",
              {"organizationId": ORG, "documents": [{"documentId": d} for d in docs[start:start + 1000]]}, h)
    per_doc = max(1, threads // documents)
    began = time.perf_counter()
    for n, doc in enumerate(docs):
        for start in range(0, per_doc, 100):
            batch = [{
                "annotationId": f"a-{n}-{i}", "commentData": [{
                    "commentText": f"Comment {c} on thread {i}: the price claim needs a source.",
                    "from": {"userId": f"user-{(i + c) % 20}"}
                } for c in range(comments)]
            } for i in range(start, min(start + 100, per_doc))]
            _post(client, "/v2/commentannotations/add",
                  {"organizationId": ORG, "documentId": doc, "commentAnnotations": batch}, h)
    return time.perf_counter() - began


def _timed(client: httpx.Client, path: str, data: dict, h: dict, samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        _post(client, path, data, h)
        times.append((time.perf_counter() - began) * 1000)
    return times


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--comments", type=int, default=10)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args(argv)
    with stack(COLLAB_RATE_LIMIT_API_KEY="100000000/minute") as (base, _):
        with httpx.Client(base_url=base, timeout=120) as client:
            h = new_tenant(client)
            seconds = _seed(client, h, threads=args.threads, comments=args.comments, documents=args.documents)
            per_doc = max(1, args.threads // args.documents)
            rows = {
                f"get one document ({per_doc} threads × {args.comments} comments)": _timed(
                    client, "/v2/commentannotations/get", {"organizationId": ORG, "documentId": "doc-0"}, h,
                    args.samples), f"count/get for a user over {args.documents} documents": _timed(
                        client, "/v2/commentannotations/count/get", {"organizationId": ORG, "userId": "user-3"}, h,
                        args.samples), "comments/add (one reply)": _timed(
                            client, "/v2/commentannotations/comments/add", {
                                "organizationId": ORG, "documentId": "doc-1", "annotationId": "a-1-0",
                                "commentData": [{"commentText": "reply", "from": {"userId": "user-1"}}]
                            }, h, min(args.samples, 500 - args.comments))
            }
    total = args.documents * per_doc
    lines = [
        f"Comments: {total} threads × {args.comments} comments over {args.documents} documents ({machine()});"
        f" add: {total / seconds:.0f} threads/s ({total * args.comments / seconds:.0f} comments/s), "
        f"100 threads per call", "", "| request | p50 ms | p99 ms |", "|---|---:|---:|"
    ]
    lines += [f"| {name} | {pct(t, 50):.1f} | {pct(t, 99):.1f} |" for name, t in rows.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(main())
