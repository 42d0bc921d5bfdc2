"""`collab eval extraction`: the pipeline over fixtures/extraction, scored against each expected file.

Modes: live calls (platform keys from COLLAB_*_API_KEY), --record (live, answers stored as cassettes),
--replay (offline, the cassettes served by a local fake provider so litellm's real path runs), and
--provider fake (offline, a deterministic stand-in model: checks the pipeline, not the prompt).
"""

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from collab.config import Settings
from collab.extraction.tasks import Failure, Outcome, run
from collab.llm.routing import EXTRACTION_PROVIDERS, platform_key

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
    ok = (
        len(must_cover) == len(expected["mustCover"])
        and len(must_skip) == len(expected["mustSkip"])
        and low <= count <= high
        and len(outcome.decoded.tasks) == expected["totalTasks"]
    )
    return Row(
        fixture=expected["file"],
        tasks=f"{len(outcome.decoded.tasks)}/{expected['totalTasks']}",
        covered=f"{len(must_cover)}/{len(expected['mustCover'])}",
        skipped=f"{len(must_skip)}/{len(expected['mustSkip'])}",
        agents=f"{count} ({low}-{high})",
        schema_valid=f"{valid}/{call.calls}",
        latency_s=round(latency, 2),
        tokens=f"{call.tokens['prompt']}/{call.tokens['completion']}",
        ok=ok,
    )


async def evaluate(settings: Settings, *, provider: str, fixtures: Path = FIXTURES, record: Path | None = None) -> list[Row]:
    """Run every fixture; with `record`, store each answer under record/<fixture>.json."""
    key = platform_key(settings, EXTRACTION_PROVIDERS[provider])
    if not key:
        raise SystemExit(f"no platform key for {provider}: set COLLAB_{EXTRACTION_PROVIDERS[provider].id.upper()}_API_KEY")
    rows = []
    for expected_file in sorted(fixtures.glob("*.expected.json")):
        expected = json.loads(expected_file.read_text())
        started = time.perf_counter()
        try:
            outcome = await run(
                settings,
                content=(fixtures / expected["file"]).read_bytes(),
                mime_type=expected["mimeType"],
                file_name=expected["file"],
                provider=provider,
                key=key,
                source_id="eval",
            )
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
    from collab.testing.fakes import last_user_text

    answers: dict[str, str] = {}
    for path in directory.glob("*.json"):
        answers.update(json.loads(path.read_text()))

    def respond(provider: str, body: dict) -> str:
        return answers.get(_digest(last_user_text(provider, body)), "no recorded answer for this request")

    return respond


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    head = "| fixture | tasks | covered | skipped ok | agents (expected) | schema-valid | latency s | tokens in/out | ok |"
    lines = [head, "|---|---|---|---|---|---|---:|---|---|"]
    for r in rows:
        ok = "yes" if r.ok else f"NO {r.error}".strip()
        lines.append(
            f"| {r.fixture} | {r.tasks} | {r.covered} | {r.skipped} | {r.agents} | {r.schema_valid} | {r.latency_s} | {r.tokens} | {ok} |"
        )
    return "\n".join(lines)


def main(*, provider: str, mode: str, fixtures: Path = FIXTURES) -> int:
    """The CLI entry: print the table; exit 1 when a fixture is not ok."""
    from collab.config import get_settings
    from collab.testing import fake_models
    from collab.testing.fakes import FakeProviders

    settings = get_settings().model_copy()
    cassettes = fixtures / "cassettes" / provider
    fake = None
    model_provider = provider
    if provider == "fake" or mode == "replay":
        fake = FakeProviders().start()
        if provider == "fake":
            model_provider = "openai"
            fake.responder = fake_models.answer
        else:
            fake.responder = cassette_responder(cassettes)
        spec = EXTRACTION_PROVIDERS[model_provider]
        settings = settings.model_copy(update={f"{spec.id}_base_url": fake.base_url(spec.id), f"{spec.id}_api_key": "offline"})
    try:
        rows = asyncio.run(
            evaluate(settings, provider=model_provider, fixtures=fixtures, record=cassettes if mode == "record" else None)
        )
    finally:
        if fake is not None:
            fake.stop()
    print(table(rows))
    return 0 if all(r.ok for r in rows) else 1
