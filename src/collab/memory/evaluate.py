"""`collab eval search --memory`: the quality of memory/ask and memory/suggest on the labelled set (fixtures/search).

The set is loaded into a scratch tenant as `collab eval search` does. Every labelled query is then asked as a
question and submitted for a suggestion, and so is each question of `unanswerable.jsonl` (topics no judgment is
about), through the same functions the worker runs (`ask.answer`, `suggest.suggest`) with the chosen provider:

- ask: answered share of the labelled questions, abstention on unanswerable ones (empty answer, confidence 0),
  grounding recall (labelled records among those shown to the model), citation precision and recall against the
  labels, latency;
- suggest: coverage (a primary suggestion), accuracy of its recommendation against the side the query's labelled
  records decided (queries whose labelled records all approve or all reject), conflicts, and abstention
  (no primary) on unanswerable queries.

`--provider fake` answers with a deterministic stand-in (it cites the first record shown): it checks retrieval,
the relevance floor and the citation check, not a model's wording.
"""

import asyncio
import json
import math
import re
import time
from pathlib import Path
from typing import Any

from collab.config import Settings
from collab.judgments import derive
from collab.judgments import evaluate as search_eval
from collab.kit.auth import Tenant
from collab.llm import local
from collab.llm.fake import last_user_text
from collab.llm.routing import SELF_HOSTED, for_eval
from collab.memory import ask, suggest
from collab.memory.schemas import AskMemory, SuggestDecision

UNANSWERABLE = search_eval.FIXTURES / "unanswerable.jsonl"
_RECORD = re.compile(r"^\[([^\]]+)\] [a-z_]+: (.*)$")


def stand_in(provider: str, body: dict) -> str:
    """The offline model: ask cites the first record shown (its opening words); suggest echoes the first lines."""
    text = last_user_text(provider, body)
    if "Reviewers' reasoning" in text:
        lines = text.split("one per line:", 1)[-1].strip().splitlines()
        return json.dumps({"reasons": [line[:60] for line in lines[:3]]})
    shown = [m for m in (_RECORD.match(line) for line in text.splitlines()) if m]
    if not shown:
        return json.dumps({"answer": "", "citations": [], "confidence": 0})
    record_id, reasoning = shown[0].groups()
    snippet = " ".join(reasoning.split()[:8])
    return json.dumps({
        "answer": f"Past decisions say: {reasoning}", "citations": [{"recordId": record_id, "snippet": snippet}],
        "confidence": 0.6
    })


def expected_side(query: dict[str, Any], decisions: dict[str, str | None]) -> str | None:
    """approve or reject when every labelled record of the query decided that way; else None (not scored)."""
    found = {decisions.get(r) for r in query["relevant"]}
    sides = {"approve" if d in suggest.APPROVE else "reject" if d in suggest.REJECT else None for d in found}
    return sides.pop() if len(sides) == 1 and None not in sides else None


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)], 1) if ordered else 0.0


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def summarise_ask(rows: list[dict[str, Any]], off_topic: list[dict[str, Any]]) -> dict[str, Any]:
    """Answered share, abstention, grounding recall, citation precision and recall, latency."""
    answered = [r for r in rows if r["answer"]]
    cited = [r for r in answered if r["cited"]]
    return {
        "questions": len(rows), "answered": _mean([1.0 if r["answer"] else 0.0 for r in rows]),
        "groundingRecall": _mean([r["groundingRecall"]
                                  for r in rows]), "citationPrecision": _mean([r["citationPrecision"] for r in cited]),
        "citationRecall": _mean([r["citationRecall"] for r in answered]), "unanswerable": len(off_topic),
        "abstained": _mean([1.0 if not r["answer"] and r["confidence"] == 0 else 0.0 for r in off_topic]),
        "p50_ms": _percentile([r["latency_ms"] for r in rows + off_topic],
                              50), "p95_ms": _percentile([r["latency_ms"] for r in rows + off_topic], 95)
    }


def summarise_suggest(rows: list[dict[str, Any]], off_topic: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage, accuracy on the scored queries, conflicts, abstention on unanswerable ones, latency."""
    scored = [r for r in rows if r["expected"] is not None]
    covered = [r for r in scored if r["recommendation"] is not None]
    return {
        "scored": len(scored), "coverage": _mean([1.0 if r["recommendation"] else 0.0 for r in scored]),
        "accuracy": _mean([1.0 if r["recommendation"] == r["expected"] else 0.0 for r in covered]),
        "conflicts": sum(1 for r in rows if r["conflict"]), "unanswerable": len(off_topic),
        "abstained": _mean([1.0 if r["recommendation"] is None else 0.0 for r in off_topic]),
        "p50_ms": _percentile([r["latency_ms"] for r in rows + off_topic],
                              50), "p95_ms": _percentile([r["latency_ms"] for r in rows + off_topic], 95)
    }


async def _ask_row(ctx: dict, tenant: Tenant, embedder: Any, question: str, relevant: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    found, shown = await ask.respond(ctx, tenant=tenant, data=AskMemory(question=question), embedder=embedder)
    latency = (time.perf_counter() - started) * 1000
    cited = [c["recordId"] for c in found["citations"]]
    wanted = set(relevant)
    return {
        "answer": found["answer"], "confidence": found["confidence"], "cited": cited,
        "groundingRecall": len(wanted & set(shown)) / len(wanted) if wanted else 0.0,
        "citationPrecision": len(wanted & set(cited)) / len(cited) if cited else 0.0,
        "citationRecall": len(wanted & set(cited)) / len(wanted) if wanted else 0.0, "latency_ms": latency
    }


async def _suggest_row(ctx: dict, tenant: Tenant, embedder: Any, query: str, expected: str | None) -> dict[str, Any]:
    started = time.perf_counter()
    found = await suggest.suggest(ctx, tenant=tenant, data=SuggestDecision(query=query), embedder=embedder)
    primary = found["primary"]
    return {
        "expected": expected, "recommendation": primary["recommendation"] if primary else None,
        "conflict": found["conflict"] is not None, "latency_ms": (time.perf_counter() - started) * 1000
    }


async def evaluate(svc, embedder, *, labelled: search_eval.LabelledSet, unanswerable: list[str]) -> dict[str, Any]:
    """Load the set into a scratch tenant, ask and suggest for every query, and drop the tenant."""
    workspace_id, api_key_id = await search_eval.scratch_tenant(svc)
    tenant = Tenant(api_key_id=api_key_id, workspace_id=workspace_id)
    ctx = {"svc": svc}
    decisions = {
        r["activity"]["id"]: derive.decision(r["activity"]["actionType"], r["activity"].get("changes"),
                                             r["activity"].get("entityData"))
        for r in labelled.records
    }
    try:
        loaded = await search_eval.load(svc, embedder, api_key_id=api_key_id, records=labelled.records)
        asked, suggested = [], []
        for query in labelled.queries:
            asked.append(await _ask_row(ctx, tenant, embedder, query["query"], query["relevant"]))
            suggested.append(await _suggest_row(ctx, tenant, embedder, query["query"], expected_side(query, decisions)))
        asked_off = [await _ask_row(ctx, tenant, embedder, q, []) for q in unanswerable]
        suggested_off = [await _suggest_row(ctx, tenant, embedder, q, None) for q in unanswerable]
    finally:
        await search_eval.drop_tenant(svc, workspace_id=workspace_id)
    return {
        "set": labelled.name, "model": embedder.name, "provider": svc.settings.memory_provider,
        "minSimilarity": svc.settings.memory_min_similarity, "judgments": len(labelled.records), "load": loaded,
        "ask": summarise_ask(asked, asked_off), "suggest": summarise_suggest(suggested, suggested_off)
    }


def load_unanswerable(path: Path = UNANSWERABLE) -> list[str]:
    """The questions no judgment of the set is about."""
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]


def table(report: dict[str, Any]) -> str:
    """The report as two Markdown tables (ask, suggest)."""
    a, s = report["ask"], report["suggest"]

    def f(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    return "\n".join([
        f"set {report['set']}, model {report['model']}, provider {report['provider']}, "
        f"min similarity {report['minSimilarity']:g}: {report['judgments']} judgments", "",
        "| ask | questions | answered | grounding recall | citation precision | citation recall | unanswerable "
        "| abstained | p50 ms | p95 ms |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| ask | {a['questions']} | {f(a['answered'])} | {f(a['groundingRecall'])} | {f(a['citationPrecision'])} "
        f"| {f(a['citationRecall'])} | {a['unanswerable']} | {f(a['abstained'])} | {a['p50_ms']} | {a['p95_ms']} |", "",
        "| suggest | scored | coverage | accuracy | conflicts | unanswerable | abstained | p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| suggest | {s['scored']} | {f(s['coverage'])} | {f(s['accuracy'])} | {s['conflicts']} "
        f"| {s['unanswerable']} | {f(s['abstained'])} | {s['p50_ms']} | {s['p95_ms']} |"
    ])


async def run_sets(settings: Settings, *, sets: list[search_eval.LabelledSet], unanswerable: list[str],
                   model: str | None) -> list[dict[str, Any]]:
    """Build Services, pick the model, evaluate each set, close."""
    from collab.kit.services import build_services, close_services

    svc = await build_services(settings)
    try:
        embedder = await search_eval.embedder_for(svc, model, "auto")
        return [await evaluate(svc, embedder, labelled=s, unanswerable=unanswerable) for s in sets]
    finally:
        await close_services(svc)


def main(*, provider: str | None, model: str | None, set_path: Path | None, as_json: bool, queries: int | None,
         judgments: int | None, split: str | None = "report", settings: Settings | None = None) -> int:
    """The CLI entry: ask and suggest over each set; print the tables (or JSON); exit 2 on a malformed set."""
    import sys

    from collab.config import get_settings
    from collab.llm.fake import FakeProviders

    try:
        sets = [
            search_eval.half(search_eval.load_set(path), split)
            for path in ([set_path] if set_path else [search_eval.FIXTURES, search_eval.HARDER])
        ]
        sets = [search_eval.sample(s, queries=queries, judgments=judgments) for s in sets]
    except search_eval.SetError as exc:
        print(f"collab eval search: {exc}", file=sys.stderr)
        return 2
    if model == "local":  # the embedded model of COLLAB_LOCAL_MODEL answers, for this eval
        with local.serving(settings or get_settings()) as served:
            return main(provider=provider, model=f"openai-compatible/{served.openai_compatible_model}",
                        set_path=set_path, as_json=as_json, queries=queries, judgments=judgments, split=split,
                        settings=served)
    settings = (settings or get_settings()).model_copy()
    fake = None
    if provider == "fake":
        fake = FakeProviders().start()
        fake.responder = stand_in
        settings = settings.model_copy(update={
            "openai_base_url": fake.base_url("openai"), "openai_api_key": "offline", "memory_provider": "openai"
        })
    elif provider is not None:
        settings = settings.model_copy(update={"memory_provider": provider})
    if model is not None and model.split("/", 1)[0] in SELF_HOSTED:  # the model that answers, not the embedder
        answering, settings = for_eval(settings, model)
        settings = settings.model_copy(update={"memory_provider": answering})
        provider, model = model, None  # the report names the model that answered; the embedder is the active one
    try:
        reports = asyncio.run(run_sets(settings, sets=sets, unanswerable=load_unanswerable(), model=model))
    finally:
        if fake is not None:
            fake.stop()
    for report in reports:
        report["provider"] = "fake (offline stand-in)" if provider == "fake" else provider or report["provider"]
    print(json.dumps({"sets": reports}, indent=1) if as_json else "\n\n".join(table(r) for r in reports))
    return 0
