"""`collab eval agents`: a review agent's findings over labelled documents, scored by recall and precision.

A labelled set is a folder of fixtures/agents: `agent.json` (an agents/create body), `documents/*` (the texts the
agent reviews, each as an execution's page text) and `expected.json` (per document file, the targetTexts of the
findings it should make). Each document goes through the runner's own path (content, route, review call with its one
repair, ranking) against the configured provider; a finding matches an expected one when their targetTexts overlap,
case-insensitive (one holds the other, or they share at least half the words of the shorter), one to one.
`--provider fake` answers with a deterministic stand-in model (every line with a figure is a finding): it checks the
pipeline, not the prompt. `--compare A B` runs two agent definitions (JSON files) over the same documents.
"""

import asyncio
import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from collab.agents import runner
from collab.agents.behaviour import behaviour_of
from collab.agents.schemas import CreateAgent
from collab.config import Settings
from collab.llm import local
from collab.llm.routing import EXTRACTION_PROVIDERS, for_eval
from collab.workspaces.model_servers import eval_access

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "agents"
_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def overlaps(found: str, expected: str) -> bool:
    """Whether two targetTexts name the same span: one holds the other, or they share at least half the words of
    the shorter (case-insensitive; an empty targetText, a page-level finding, matches only another empty one)."""
    a, b = _norm(found), _norm(expected)
    if not a or not b:
        return a == b
    if a in b or b in a:
        return True
    wa, wb = set(_WORD.findall(a)), set(_WORD.findall(b))
    shorter = min(len(wa), len(wb))
    return shorter > 0 and len(wa & wb) * 2 >= shorter


def matched(found: list[str], expected: list[str]) -> int:
    """How many expected findings a finding matches, each finding and each expected one used at most once."""
    left = list(found)
    hits = 0
    for want in expected:
        for n, got in enumerate(left):
            if overlaps(got, want):
                hits += 1
                del left[n]
                break
    return hits


@dataclass
class Row:
    document: str
    expected: int
    found: int
    matched: int
    latency_s: float
    tokens: int
    findings: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0

    @property
    def precision(self) -> float:
        return self.matched / self.found if self.found else 1.0


@dataclass
class Report:
    agent: str
    rows: list[Row]

    def totals(self) -> dict[str, Any]:
        expected, found, hit = (sum(getattr(r, n) for r in self.rows) for n in ("expected", "found", "matched"))
        return {
            "documents": len(self.rows), "expected": expected, "found": found, "matched": hit,
            "recall": round(hit / expected, 4) if expected else 1.0,
            "precision": round(hit / found, 4) if found else 1.0, "errors": sum(bool(r.error) for r in self.rows),
            "tokens": sum(r.tokens for r in self.rows), "latencyS": round(sum(r.latency_s for r in self.rows), 2)
        }

    def json(self) -> dict[str, Any]:
        rows = [asdict(r) | {"recall": round(r.recall, 4), "precision": round(r.precision, 4)} for r in self.rows]
        return {"agent": self.agent, "totals": self.totals(), "documents": rows}


def load_agent(path: Path) -> dict[str, Any]:
    """An agent definition (an agents/create body), checked by create's rules; its behaviour as stored."""
    model = CreateAgent.model_validate(json.loads(path.read_text()))
    behaviour = behaviour_of(model)
    if not behaviour.get("instructions") and model.prompt:
        behaviour["instructions"] = model.prompt  # an agents/extract draft (ADR 0054)
    return behaviour | {"name": model.name}


async def review_document(settings: Settings, behaviour: dict[str, Any], text: str, *,
                          url: str) -> tuple[list[runner.Finding], int]:
    """The runner's path for one document as the page's text: (ranked findings, tokens used)."""
    provider = runner.provider_of(settings, behaviour=behaviour, ai_config=None)
    access = eval_access(settings, EXTRACTION_PROVIDERS[provider])
    _, route = runner.route_for(settings, behaviour=behaviour, ai_config=None, configured=access.model)
    tokens = 0

    async def before_call() -> None:
        return None

    async def after_call(prompt_tokens: int, completion_tokens: int) -> None:
        nonlocal tokens
        tokens += prompt_tokens + completion_tokens

    answer = await runner.review(settings, route=route, access=access, instructions=behaviour.get("instructions") or "",
                                 user_context="{}", url=url, content=runner.content_of(page=text, document=[]),
                                 before_call=before_call, after_call=after_call)
    return runner.ranked(answer.findings), tokens


async def evaluate(settings: Settings, *, labelled: Path, agent: Path | None = None) -> Report:
    """Score one agent definition (default: the set's agent.json) over one labelled set."""
    behaviour = load_agent(agent or labelled / "agent.json")
    expected: dict[str, list[str]] = json.loads((labelled / "expected.json").read_text())
    rows = []
    for name, wanted in sorted(expected.items()):
        text = (labelled / "documents" / name).read_text()
        started = time.perf_counter()
        try:
            findings, tokens = await review_document(settings, behaviour, text, url=f"fixture://{labelled.name}/{name}")
        except runner.Failure as exc:
            rows.append(
                Row(name, len(wanted), 0, 0, round(time.perf_counter() - started, 2), 0,
                    error=f"{exc.code}: {exc.message}"))
            continue
        found = [f.targetText for f in findings]
        rows.append(
            Row(name, len(wanted), len(found), matched(found, wanted), round(time.perf_counter() - started, 2), tokens,
                findings=found))
    return Report(agent=behaviour["name"], rows=rows)


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def table(name: str, report: Report) -> str:
    """One set's report as a Markdown table with its totals."""
    lines = [
        f"## {name}: {report.agent}", "", "| document | expected | found | matched | recall | precision | ok |",
        "|---|---:|---:|---:|---:|---:|---|"
    ]
    for r in report.rows:
        lines.append(f"| {r.document} | {r.expected} | {r.found} | {r.matched} | {_pct(r.recall)} |"
                     f" {_pct(r.precision)} | {'NO ' + r.error if r.error else 'yes'} |")
    t = report.totals()
    lines += [
        "", f"recall {_pct(t['recall'])} ({t['matched']}/{t['expected']}), precision {_pct(t['precision'])}"
        f" ({t['matched']}/{t['found']}), errors {t['errors']}, tokens {t['tokens']}, latency {t['latencyS']} s"
    ]
    return "\n".join(lines)


def compare_table(name: str, a: Report, b: Report, *, names: tuple[str, str]) -> str:
    """Two agent definitions over one set, side by side, then recall and precision with B - A."""
    lines = [
        f"## {name}: A = {names[0]}, B = {names[1]}", "",
        "| document | expected | matched A | found A | matched B | found B |", "|---|---:|---:|---:|---:|---:|"
    ]
    by_document = {r.document: r for r in b.rows}
    for ra in a.rows:
        rb = by_document[ra.document]
        lines.append(f"| {ra.document} | {ra.expected} | {ra.matched} | {ra.found} | {rb.matched} | {rb.found} |")
    ta, tb = a.totals(), b.totals()
    lines += ["", "| total | A | B | B - A |", "|---|---:|---:|---:|"]
    for metric in ("recall", "precision", "errors", "tokens"):
        lines.append(f"| {metric} | {ta[metric]:g} | {tb[metric]:g} | {round(tb[metric] - ta[metric], 4):+g} |")
    return "\n".join(lines)


def regressed(a: Report, b: Report) -> bool:
    """Whether B scores lower than A on recall or precision, or errs more (a change ships when it does not)."""
    ta, tb = a.totals(), b.totals()
    return tb["recall"] < ta["recall"] or tb["precision"] < ta["precision"] or tb["errors"] > ta["errors"]


def stand_in(provider: str, body: dict) -> str:
    """The offline stand-in model: every line of the reviewed content that holds a figure is a finding."""
    from collab.llm.fake import last_user_text

    text = last_user_text(provider, body)
    content = text.split("--- Page text ---", 1)[-1]
    lines = [line.strip() for line in content.splitlines() if re.search(r"\d", line) and not line.startswith("---")]
    findings = [{
        "title": "Check this figure", "description": "The line states a figure.", "severity": "medium",
        "targetText": line[:2000], "suggestion": "", "confidence": 50
    } for line in lines if line]
    return json.dumps({"summary": f"{len(findings)} figure(s).", "findings": findings})


def _agent_path(name: str) -> Path | None:
    if name == "current":
        return None
    if not Path(name).is_file():
        raise SystemExit(f"--compare: {name} is not an agent definition file (or 'current')")
    return Path(name)


def main(*, provider: str | None, labelled: str | None = None, compare: tuple[str, str] | None = None,
         as_json: bool = False, fixtures: Path = FIXTURES, settings: Settings | None = None,
         model: str | None = None) -> int:
    """The CLI entry: print each set's report (or two definitions side by side); with --compare, exit 1 when B
    regresses on a set; otherwise exit 1 when a document ends in error."""
    from collab.config import get_settings
    from collab.llm.fake import FakeProviders

    if model == "local":  # the embedded model of COLLAB_LOCAL_MODEL, for this eval
        with local.serving(settings or get_settings()) as served:
            return main(provider=provider, labelled=labelled, compare=compare, as_json=as_json, fixtures=fixtures,
                        settings=served, model=f"openai-compatible/{served.openai_compatible_model}")
    settings = (settings or get_settings()).model_copy()
    if model is not None:  # a server the team runs answers (its provider is the default one here)
        provider, settings = for_eval(settings, model)
    sets = [fixtures / labelled] if labelled else sorted(p for p in fixtures.iterdir() if (p / "agent.json").is_file())
    if not sets or not all((p / "expected.json").is_file() for p in sets):
        raise SystemExit(f"no labelled set found under {fixtures}")
    agents = [_agent_path(n) for n in compare] if compare else [None]
    fake = None
    if provider == "fake":
        fake = FakeProviders().start()
        fake.responder = stand_in
        spec = EXTRACTION_PROVIDERS["openai"]
        settings = settings.model_copy(update={
            "openai_base_url": fake.base_url(spec.id), "openai_api_key": "offline",
            "extraction_default_provider": "openai"
        })
    elif provider is not None:
        settings = settings.model_copy(update={"extraction_default_provider": provider})
    try:
        runs = {p.name: [asyncio.run(evaluate(settings, labelled=p, agent=a)) for a in agents] for p in sets}
    finally:
        if fake is not None:
            fake.stop()
    answered_by = "fake (offline stand-in)" if provider == "fake" else (model or settings.extraction_default_provider)
    if as_json:
        out: dict[str, Any] = {
            name: ({"a": r[0].json(), "b": r[1].json()} if compare else r[0].json())
            for name, r in runs.items()
        }
        print(json.dumps({"model": answered_by} | out, indent=1))
    else:
        print(f"model: {answered_by}\n")
        print("\n\n".join(
            compare_table(name, r[0], r[1], names=compare) if compare else table(name, r[0])
            for name, r in runs.items()))
    if compare:
        return 1 if any(regressed(r[0], r[1]) for r in runs.values()) else 0
    return 1 if any(row.error for r in runs.values() for row in r[0].rows) else 0
