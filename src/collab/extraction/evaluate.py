"""`collab eval extraction`: the pipeline over fixtures/extraction, scored against each expected file.

Modes: live calls (platform keys from COLLAB_*_API_KEY), --record (live, answers stored as cassettes),
--replay (offline, the cassettes served by a local fake provider so litellm's real path runs), and
--provider fake (offline, a deterministic stand-in model: checks the pipeline, not the prompt).
--compare A B runs two prompt versions (prompts directories) over the same fixtures and prints them side by side.
"""

import asyncio
import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from collab import prompts as prompts_module
from collab.config import Settings
from collab.extraction.tasks import Failure, Outcome, run
from collab.llm.routing import EXTRACTION_PROVIDERS, for_eval, platform_model
from collab.workspaces.model_servers import eval_access

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "extraction"


def _digest(user_message: str) -> str:
    return hashlib.sha256(user_message.encode()).hexdigest()[:24]


def _norm(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Row:
    fixture: str
    tasks: str
    covered: str
    skipped: str
    agents: str
    schema_valid: str
    latency_s: float
    tokens: str
    ok: bool
    error: str = ""


def score(expected: dict, outcome: Outcome, latency: float) -> Row:
    """One table row: coverage, skips, agent count and answer validity against the expected file."""
    result = outcome.result
    covered = {_norm(t) for a in result["agents"] for t in a["sourceTasks"]}
    skipped = {_norm(s["originalText"]) for s in result["skipped"]}
    must_cover = [t for t in expected["mustCover"] if _norm(t) in covered]
    must_skip = [t for t in expected["mustSkip"] if _norm(t) in skipped]
    low, high = expected["agentCount"]["min"], expected["agentCount"]["max"]
    count = len(result["agents"])
    call = outcome.call
    valid = call.calls - call.failed_answers
    ok = (len(must_cover) == len(expected["mustCover"]) and len(must_skip) == len(expected["mustSkip"])
          and low <= count <= high and len(outcome.decoded.tasks) == expected["totalTasks"])
    return Row(fixture=expected["file"], tasks=f"{len(outcome.decoded.tasks)}/{expected['totalTasks']}",
               covered=f"{len(must_cover)}/{len(expected['mustCover'])}",
               skipped=f"{len(must_skip)}/{len(expected['mustSkip'])}", agents=f"{count} ({low}-{high})",
               schema_valid=f"{valid}/{call.calls}", latency_s=round(latency, 2),
               tokens=f"{call.tokens['prompt']}/{call.tokens['completion']}", ok=ok)


async def evaluate(settings: Settings, *, provider: str, fixtures: Path = FIXTURES,
                   record: Path | None = None) -> list[Row]:
    """Run every fixture; with `record`, store each answer under record/<fixture>.json."""
    access = eval_access(settings, EXTRACTION_PROVIDERS[provider])
    rows = []
    for expected_file in sorted(fixtures.glob("*.expected.json")):
        expected = json.loads(expected_file.read_text())
        started = time.perf_counter()
        try:
            outcome = await run(settings, content=(fixtures / expected["file"]).read_bytes(),
                                mime_type=expected["mimeType"], file_name=expected["file"], provider=provider,
                                access=access, source_id="eval")
        except Failure as exc:
            rows.append(Row(expected["file"], "-", "-", "-", "-", "-", 0.0, "-", False, f"{exc.code}: {exc.message}"))
            continue
        rows.append(score(expected, outcome, time.perf_counter() - started))
        if record is not None:
            record.mkdir(parents=True, exist_ok=True)
            answers = {_digest(user): text for _, user, text in outcome.call.transcript}
            (record / f"{expected['file']}.json").write_text(json.dumps(answers, indent=1, sort_keys=True))
    return rows


def cassette_responder(directory: Path):
    """A fake-provider responder that answers from recorded cassettes (unknown requests get no answer)."""
    from collab.llm.fake import last_user_text

    answers: dict[str, str] = {}
    for path in directory.glob("*.json"):
        answers.update(json.loads(path.read_text()))

    def respond(provider: str, body: dict) -> str:
        return answers.get(_digest(last_user_text(provider, body)), "no recorded answer for this request")

    return respond


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    head = (
        "| fixture | tasks | covered | skipped ok | agents (expected) | schema-valid | latency s | tokens in/out | ok |"
    )
    lines = [head, "|---|---|---|---|---|---|---:|---|---|"]
    for r in rows:
        ok = "yes" if r.ok else f"NO {r.error}".strip()
        lines.append(f"| {r.fixture} | {r.tasks} | {r.covered} | {r.skipped} | {r.agents} | {r.schema_valid}"
                     f" | {r.latency_s} | {r.tokens} | {ok} |")
    return "\n".join(lines)


def _counts(value: str) -> tuple[int, int] | None:
    """ "3/4" as (3, 4); None for a failed fixture's "-"."""
    got, _, of = value.partition("/")
    return (int(got), int(of)) if of else None


def totals(rows: list[Row]) -> dict[str, tuple[float, float | None]]:
    """Per metric (value, out of): fixtures ok, tasks covered and skipped as expected, schema-valid answers,
    tokens and latency summed over the fixtures."""
    out: dict[str, tuple[float, float | None]] = {"fixtures ok": (sum(r.ok for r in rows), len(rows))}
    for label, name in (("mustCover covered", "covered"), ("mustSkip skipped", "skipped"), ("schema-valid answers",
                                                                                            "schema_valid")):
        pairs = [_counts(getattr(r, name)) for r in rows]
        out[label] = (sum(p[0] for p in pairs if p), sum(p[1] for p in pairs if p))
    tokens = [r.tokens.split("/") for r in rows if r.tokens != "-"]
    out["tokens in"] = (sum(int(t[0]) for t in tokens), None)
    out["tokens out"] = (sum(int(t[1]) for t in tokens), None)
    out["latency s (sum)"] = (round(sum(r.latency_s for r in rows), 2), None)
    return out


def compare_table(a: list[Row], b: list[Row], *, names: tuple[str, str]) -> str:
    """Two prompt versions side by side: per fixture, then the totals with the difference B - A."""

    def cell(value: float, of: float | None) -> str:
        return f"{value:g}/{of:g}" if of is not None else f"{value:g}"

    na, nb = names
    lines = [
        f"A = {na}, B = {nb}", "",
        "| fixture | covered A | covered B | skipped ok A | skipped ok B | agents A | agents B | ok A | ok B |",
        "|---|---|---|---|---|---|---|---|---|"
    ]
    by_fixture = {r.fixture: r for r in b}
    for ra in a:
        rb = by_fixture[ra.fixture]
        oks = ["yes" if r.ok else f"NO {r.error}".strip() for r in (ra, rb)]
        lines.append(f"| {ra.fixture} | {ra.covered} | {rb.covered} | {ra.skipped} | {rb.skipped}"
                     f" | {ra.agents} | {rb.agents} | {oks[0]} | {oks[1]} |")
    lines += ["", "| total | A | B | B - A |", "|---|---:|---:|---:|"]
    ta, tb = totals(a), totals(b)
    for metric, (va, of_a) in ta.items():
        vb, of_b = tb[metric]
        lines.append(f"| {metric} | {cell(va, of_a)} | {cell(vb, of_b)} | {round(vb - va, 2):+g} |")
    return "\n".join(lines)


def regressions(a: list[Row], b: list[Row]) -> list[str]:
    """Fixtures that pass with version A and fail with B (a prompt change ships when there are none)."""
    passed_b = {r.fixture for r in b if r.ok}
    return [r.fixture for r in a if r.ok and r.fixture not in passed_b]


def prompts_dir(name: str) -> str | None:
    """A --compare argument: a prompts directory, or "current" for the packaged prompts/."""
    if name == "current":
        return None
    if not Path(name).is_dir():
        raise SystemExit(f"--compare: {name} is not a directory of prompt files (or 'current')")
    return name


def write_report(path: Path, rows: list[Row], *, model: str) -> None:
    """The run as JSON (`--report`): the model that answered and each fixture's row, for a later `--compare`."""
    path.write_text(json.dumps({"model": model, "rows": [asdict(r) for r in rows]}, indent=1))


def read_report(path: Path) -> tuple[str, list[Row]]:
    """A report written by `--report`: (the model that answered, its rows)."""
    try:
        data = json.loads(path.read_text())
        return data["model"], [Row(**r) for r in data["rows"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--compare: {path} is not a report written by --report ({exc})") from None


def answering(settings: Settings, provider: str) -> str:
    """The model the eval's extraction calls go to, as a report names it."""
    spec = EXTRACTION_PROVIDERS[provider]
    extract = prompts_module.get("extract_agents", settings.prompts_dir)
    model = platform_model(settings, spec) or extract.models.get(provider) or "?"
    return f"{spec.id}/{model}" if spec.self_hosted and not model.startswith(f"{spec.id}/") else model


def main(*, provider: str, mode: str, fixtures: Path = FIXTURES, compare: tuple[str, ...] | None = None,
         model: str | None = None, report: Path | None = None) -> int:
    """The CLI entry: print the table (or two versions side by side, or this run beside an earlier `--report`);
    exit 1 when a fixture is not ok (or, compared, when one that passed fails now)."""
    from collab.config import get_settings
    from collab.llm import local

    if model == "local":  # the embedded model, for this eval (make eval-local)
        with local.serving(get_settings()) as served:
            return _main(served, provider=provider, mode=mode, fixtures=fixtures, compare=compare,
                         model=f"openai-compatible/{served.openai_compatible_model}", report=report)
    return _main(get_settings().model_copy(), provider=provider, mode=mode, fixtures=fixtures, compare=compare,
                 model=model, report=report)


def _main(settings: Settings, *, provider: str, mode: str, fixtures: Path, compare: tuple[str, ...] | None,
          model: str | None, report: Path | None) -> int:
    from collab.llm.fake import FakeProviders, answer

    if model is not None:
        provider, settings = for_eval(settings, model)
    previous = read_report(Path(compare[0])) if compare and len(compare) == 1 else None
    dirs = [prompts_dir(n) for n in compare] if compare and previous is None else []
    cassettes = fixtures / "cassettes" / provider
    fake = None
    model_provider = provider
    if provider == "fake" or mode == "replay":
        fake = FakeProviders().start()
        if provider == "fake":
            model_provider = "openai"
            fake.responder = answer
        else:
            fake.responder = cassette_responder(cassettes)
        spec = EXTRACTION_PROVIDERS[model_provider]
        settings = settings.model_copy(
            update={f"{spec.id}_base_url": fake.base_url(spec.id), f"{spec.id}_api_key": "offline"})
    versions = [settings.model_copy(update={"prompts_dir": d}) for d in dirs] if dirs else [settings]
    try:
        runs = [
            asyncio.run(
                evaluate(s, provider=model_provider, fixtures=fixtures, record=cassettes if mode == "record" else None))
            for s in versions
        ]
    finally:
        if fake is not None:
            fake.stop()
    answered_by = "fake (offline stand-in)" if provider == "fake" else answering(settings, model_provider)
    if report is not None:
        write_report(report, runs[0], model=answered_by)
    if previous is not None and compare is not None:
        print(compare_table(previous[1], runs[0], names=(f"{compare[0]} ({previous[0]})", answered_by)))
        return 0 if not regressions(previous[1], runs[0]) else 1
    if len(runs) == 1:
        print(f"model: {answered_by}\n")
        print(table(runs[0]))
        return 0 if all(r.ok for r in runs[0]) else 1
    assert compare is not None
    print(compare_table(runs[0], runs[1], names=(compare[0], compare[1])))
    return 0 if not regressions(runs[0], runs[1]) else 1
