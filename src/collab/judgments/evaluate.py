"""`collab eval search`: recall and latency of judgment search on a labelled relevance set (fixtures/search).

The set is loaded into a scratch tenant (a workspace of its own, deleted afterwards) through the real path: each
record is an activity as `activities/add` takes it, stored in the activity log, turned into a judgment by
derive.py and embedded by `tasks.derive_batch` with the model under test. Every query then runs tenant-wide
through `search.run`, once with the configured ranking and once vector-only (search_lexical_weight = 0).
"""

import asyncio
import dataclasses
import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from collab.config import Settings
from collab.kit.db import Queries, execute

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "search"
HARDER = FIXTURES / "harder"  # paraphrases sharing at most one content word, questions, reviewers' notes
SPLITS = ("tune", "report")  # a query's half: tune on `tune`, quote `report` (held out, never tuned on)
CUTOFFS = (1, 3, 10)
LIMIT = 10  # results per query: recall@10 is the widest cutoff
SCRATCH_EMAIL = "search-eval@collab.invalid"  # owner of every scratch workspace (never a real address)
SCRATCH_PREFIX = "wseval_"  # scratch workspace ids; the public API makes ws_… ids only
q = Queries(Path(__file__).with_name("evaluate.sql"))


class SetError(Exception):
    """A labelled set that does not follow fixtures/search/README.md."""


@dataclass(frozen=True)
class LabelledSet:
    records: list[dict[str, Any]]  # {organizationId, documentId, activity}: one activity as activities/add takes it
    queries: list[dict[str, Any]]  # {id, kind, query, relevant: [activity ids], split?: tune | report}
    name: str = "search"  # the set's folder, as the report names it


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise SetError(f"{path.name}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SetError(f"{path.name} line {number}: {exc}") from exc
        if not isinstance(row, dict):
            raise SetError(f"{path.name} line {number}: expected an object")
        rows.append(row)
    return rows


def load_set(path: Path = FIXTURES) -> LabelledSet:
    """Read and check a set: a directory with judgments.jsonl and queries.jsonl (or one of those files)."""
    from collab.activities.schemas import AddActivities

    directory = path if path.is_dir() else path.parent
    records = _jsonl(directory / "judgments.jsonl")
    queries = _jsonl(directory / "queries.jsonl")
    ids: set[str] = set()
    for number, record in enumerate(records, 1):
        try:
            request = AddActivities.model_validate({k: record.get(k)
                                                    for k in ("organizationId", "documentId")}
                                                   | {"activities": [record.get("activity")]})
        except ValidationError as exc:
            raise SetError(f"judgments.jsonl line {number}: not an activities/add record: {exc}") from None
        activity_id = request.activities[0].id
        if activity_id is None or activity_id in ids:
            raise SetError(f"judgments.jsonl line {number}: activity.id missing or repeated ({activity_id!r})")
        ids.add(activity_id)
    seen: set[str] = set()
    for number, query in enumerate(queries, 1):
        where = f"queries.jsonl line {number}"
        if not isinstance(query.get("id"), str) or query["id"] in seen:
            raise SetError(f"{where}: id missing or repeated")
        seen.add(query["id"])
        if (not isinstance(query.get("kind"), str) or not isinstance(query.get("query"), str)
                or not query["query"].strip()):
            raise SetError(f"{where}: needs a kind and a non-empty query")
        relevant = query.get("relevant")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(r, str) for r in relevant):
            raise SetError(f"{where}: relevant must be a non-empty list of activity ids")
        unknown = [r for r in relevant if r not in ids]
        if unknown:
            raise SetError(f"{where}: relevant ids not in judgments.jsonl: {unknown}")
        if query.get("split", SPLITS[0]) not in SPLITS:
            raise SetError(f"{where}: split must be one of {', '.join(SPLITS)}")
    if not records or not queries:
        raise SetError(f"{directory.name}: the set has no judgments or no queries")
    return LabelledSet(records=records, queries=queries, name=directory.name)


def half(labelled: LabelledSet, split: str | None) -> LabelledSet:
    """The queries of one split (every judgment stays, as the distractors it is scored among); a set whose queries
    carry no split, or `split` None, whole."""
    if split is None or not any("split" in query for query in labelled.queries):
        return labelled
    chosen = [query for query in labelled.queries if query.get("split") == split]
    return dataclasses.replace(labelled, queries=chosen, name=f"{labelled.name} ({split} half)")


def sample(labelled: LabelledSet, *, queries: int | None = None, judgments: int | None = None) -> LabelledSet:
    """A small slice: the first `queries` taken round-robin over the kinds, their relevant judgments, and the
    first other judgments as distractors up to `judgments` in all."""
    chosen = labelled.queries
    if queries is not None:
        by_kind: dict[str, list[dict]] = {}
        for query in labelled.queries:
            by_kind.setdefault(query["kind"], []).append(query)
        chosen = []
        for i in range(len(labelled.queries)):
            chosen += [group[i] for group in by_kind.values() if i < len(group)]
        chosen = chosen[:queries]
    needed = {r for query in chosen for r in query["relevant"]}
    records = labelled.records
    if judgments is not None:
        room = max(0, judgments - len(needed))
        others = [r for r in records if r["activity"]["id"] not in needed][:room]
        keep = needed | {r["activity"]["id"] for r in others}
        records = [r for r in records if r["activity"]["id"] in keep]
    return dataclasses.replace(labelled, records=records, queries=chosen)


def score(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    """recall@k (relevant found in the top k over the most that fit there, so a perfect ranking scores 1 at every
    k) and the reciprocal rank of the first relevant result (0 when none is in the list)."""
    wanted = set(relevant)
    out = {f"recall@{k}": len(wanted & set(ranked[:k])) / min(len(wanted), k) for k in CUTOFFS}
    first = next((i for i, r in enumerate(ranked, 1) if r in wanted), None)
    out["rr"] = 1 / first if first else 0.0
    return out


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall@k, MRR and p50/p95 latency over scored query rows."""
    n = len(rows)
    out: dict[str, Any] = {"queries": n}
    for k in CUTOFFS:
        out[f"recall@{k}"] = round(sum(r[f"recall@{k}"] for r in rows) / n, 4)
    out["mrr"] = round(sum(r["rr"] for r in rows) / n, 4)
    latencies = [r["latency_ms"] for r in rows]
    out["p50_ms"] = round(_percentile(latencies, 50), 2)
    out["p95_ms"] = round(_percentile(latencies, 95), 2)
    return out


async def scratch_tenant(svc) -> tuple[str, str]:
    """A fresh workspace with one API key that nobody can authenticate as (its tokens are never revealed)."""
    from collab.kit.crypto import new_id, new_token
    from collab.workspaces import repository as workspaces

    # Scratch ids carry a prefix the public API never issues (it makes `ws_…`), so the cleanup of leftovers can
    # never reach a real tenant, whatever e-mail that tenant signed up with.
    workspace_id, api_key_id = new_id(SCRATCH_PREFIX), new_id("key_")
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await execute(conn, q.delete_stale_scratch, {"owner_email": SCRATCH_EMAIL, "prefix": SCRATCH_PREFIX})
            await workspaces.insert_workspace(
                conn, id=workspace_id, name=f"search eval {workspace_id}", owner_email=SCRATCH_EMAIL,
                owner_id=new_id("usr_"), owner_name="collab eval search", owner_avatar="",
                auth_token_hash=svc.keyring.hash(new_token()),
                auth_token_enc=svc.keyring.encrypt(new_token(), f"workspace-token:{workspace_id}"), is_root=False)
            await workspaces.insert_api_key(conn, id=api_key_id, workspace_id=workspace_id, name="search eval",
                                            type="testing", owner_email=SCRATCH_EMAIL)
    return workspace_id, api_key_id


async def drop_tenant(svc, *, workspace_id: str) -> None:
    """Delete a scratch workspace (and with it everything its key holds)."""
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await execute(conn, q.delete_workspace, {"workspace_id": workspace_id, "owner_email": SCRATCH_EMAIL})


async def load(svc, embedder, *, api_key_id: str, records: list[dict[str, Any]],
               batch_size: int = 256) -> dict[str, Any]:
    """Write the records to the tenant's activity log, then derive and embed them as the worker does."""
    from collab.activities import repository as activities
    from collab.activities.schemas import AddActivities
    from collab.activities.service import row
    from collab.judgments.tasks import derive_batch

    started = time.perf_counter()
    rows = []
    for record in records:
        request = AddActivities.model_validate({
            "organizationId": record["organizationId"], "documentId": record["documentId"],
            "activities": [record["activity"]]
        })
        activity = request.activities[0]
        rows.append(
            row(activity, id=activity.id, organization_id=request.organizationId, document_id=request.documentId,
                now=svc.now_ms()))
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await activities.upsert_many(conn, api_key_id=api_key_id, records=rows)
    counts: Counter[str] = Counter()
    ids = [r["activity"]["id"] for r in records]
    for start in range(0, len(ids), batch_size):
        counts.update(await derive_batch(svc, embedder, api_key_id=api_key_id,
                                         activity_ids=ids[start:start + batch_size]))
    return {
        "judgments": counts["judgments"], "vectors": counts["vectors"],
        "seconds": round(time.perf_counter() - started, 2)
    }


async def _rank(svc, embedder, *, api_key_id: str, text: str) -> tuple[list[str], float]:
    from collab.judgments import search
    from collab.judgments.schemas import SearchJudgments

    data = SearchJudgments(query=text, limit=LIMIT)  # no organizationId: the whole tenant (rule 4)
    search.forget_queries()  # every ranking's latency includes the query's encode, not only the first one's
    started = time.perf_counter()
    found = await search.run(svc, embedder, api_key_id=api_key_id, data=data)
    return [r["recordId"] for r in found["results"]], (time.perf_counter() - started) * 1000


def rankings(settings: Settings) -> dict[str, dict[str, Any]]:
    """The two rankings compared: the configured one and the vector-only baseline, with their settings."""
    configured = {
        "vector_weight": settings.search_vector_weight, "lexical_weight": settings.search_lexical_weight,
        "rrf_k": settings.search_rrf_k
    }
    return {"configured": configured, "vector_only": {**configured, "lexical_weight": 0.0}}


async def _score(svc, embedder, *, api_key_id: str, queries: list[dict[str, Any]]) -> tuple[dict, list[dict]]:
    """Every query under every ranking: the per-ranking summaries and each query's top 3 per ranking."""
    details = {query["id"]: {k: query[k] for k in ("id", "kind", "query", "relevant")} for query in queries}
    variants = {}
    for name, values in rankings(svc.settings).items():
        update = {f"search_{key}": value for key, value in values.items()}
        variants[name] = dataclasses.replace(svc, settings=svc.settings.model_copy(update=update))
        await _rank(variants[name], embedder, api_key_id=api_key_id,
                    text="warm-up")  # first-call costs out of the figures
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for query in queries:
        # The rankings take turns per query, so a busy machine slows both alike.
        for name, variant in variants.items():
            ranked, latency = await _rank(variant, embedder, api_key_id=api_key_id, text=query["query"])
            row = {"kind": query["kind"], "latency_ms": latency, **score(ranked, query["relevant"])}
            rows[name].append(row)
            details[query["id"]][name] = {"top": ranked[:3], "recall@3": row["recall@3"], "rr": round(row["rr"], 4)}
    summaries = {
        name: {
            "settings": values, "overall": summarise(rows[name]), "kinds": {
                kind: summarise([r for r in rows[name] if r["kind"] == kind])
                for kind in sorted({r["kind"]
                                    for r in rows[name]})
            }
        }
        for name, values in rankings(svc.settings).items()
    }
    return summaries, list(details.values())


async def evaluate(svc, embedder, *, labelled: LabelledSet) -> dict[str, Any]:
    """Load the set into a scratch tenant, run every query under both rankings, and drop the tenant."""
    workspace_id, api_key_id = await scratch_tenant(svc)
    try:
        loaded = await load(svc, embedder, api_key_id=api_key_id, records=labelled.records)
        summaries, per_query = await _score(svc, embedder, api_key_id=api_key_id, queries=labelled.queries)
    finally:
        await drop_tenant(svc, workspace_id=workspace_id)
    return {
        "set": labelled.name, "model": embedder.name, "dimensions": embedder.dimensions,
        "judgments": len(labelled.records), "queries": len(labelled.queries), "load": loaded, "rankings": summaries,
        "perQuery": per_query
    }


async def embedder_for(svc, model: str | None, dtype: str):
    """The model under test: `model` (a candidate, registered but not activated), else the active one."""
    from collab.embeddings import registry
    from collab.embeddings.model import load as load_model
    from collab.judgments.tasks import active_embedder

    active = await active_embedder({"svc": svc})  # registers the configured model when none is yet
    if model is None:
        return active
    embedder = await asyncio.to_thread(load_model, model, None, dtype, cache_dir=svc.settings.models_dir)
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            # Vectors reference their model's row; registering never activates while another model is active.
            await registry.register(conn, model=embedder.name, source=model, dimensions=embedder.dimensions)
    return embedder


async def run(settings: Settings, *, labelled: LabelledSet, model: str | None = None,
              dtype: str = "auto") -> dict[str, Any]:
    """The eval of one set against the configured database."""
    [report] = await run_sets(settings, sets=[labelled], model=model, dtype=dtype)
    return report


async def run_sets(settings: Settings, *, sets: list[LabelledSet], model: str | None = None,
                   dtype: str = "auto") -> list[dict[str, Any]]:
    """Build Services, pick the model, evaluate each set in a scratch tenant of its own, close."""
    from collab.kit.services import build_services, close_services

    svc = await build_services(settings)
    try:
        embedder = await embedder_for(svc, model, dtype)
        return [await evaluate(svc, embedder, labelled=labelled) for labelled in sets]
    finally:
        await close_services(svc)


def _label(name: str, values: dict[str, Any]) -> str:
    if name == "vector_only" or values["lexical_weight"] <= 0:
        return "vector only" + (" (configured)" if name == "configured" else "")
    return (
        f"hybrid (vector {values['vector_weight']:g} + lexical {values['lexical_weight']:g}, rrf k {values['rrf_k']})")


def table(report: dict[str, Any]) -> str:
    """The report as text: a Markdown table per ranking and kind, then the configured ranking's misses at 3."""
    load_info = report["load"]
    lines = [
        f"set {report['set']}, model {report['model']} ({report['dimensions']} dims):"
        f" {report['judgments']} judgments, {report['queries']} queries;"
        f" loaded {load_info['judgments']} judgments / {load_info['vectors']} vectors in {load_info['seconds']} s", "",
        "| ranking | kind | queries | recall@1 | recall@3 | recall@10 | MRR | p50 ms | p95 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    ]
    for name, ranking in report["rankings"].items():
        label = _label(name, ranking["settings"])
        for kind, m in [*ranking["kinds"].items(), ("overall", ranking["overall"])]:
            lines.append(f"| {label} | {kind} | {m['queries']} | {m['recall@1']:.3f} | {m['recall@3']:.3f}"
                         f" | {m['recall@10']:.3f} | {m['mrr']:.3f} | {m['p50_ms']:.1f} | {m['p95_ms']:.1f} |")
    misses = [d for d in report["perQuery"] if d["configured"]["recall@3"] < 1]
    lines += ["", f"configured ranking, queries with a relevant judgment missing from the top 3: {len(misses)}"]
    for d in misses:
        lines.append(f"  {d['id']} [{d['kind']}] {d['query']!r}: wanted {d['relevant']}, got {d['configured']['top']}")
    return "\n".join(lines)


def main(*, model: str | None, set_path: Path | None, as_json: bool, queries: int | None, judgments: int | None,
         bf16: bool, split: str | None = "report") -> int:
    """The CLI entry: print a table per set (or the JSON reports); exit 2 on a malformed set. Without a set named,
    the project's set and the harder set's `split` half."""
    import sys

    from collab.config import get_settings

    try:
        sets = [half(load_set(path), split) for path in ([set_path] if set_path else [FIXTURES, HARDER])]
        sets = [sample(labelled, queries=queries, judgments=judgments) for labelled in sets]
    except SetError as exc:
        print(f"collab eval search: {exc}", file=sys.stderr)
        return 2
    reports = asyncio.run(run_sets(get_settings(), sets=sets, model=model, dtype="bf16" if bf16 else "auto"))
    print(json.dumps({"sets": reports}, indent=1) if as_json else "\n\n".join(table(r) for r in reports))
    return 0
