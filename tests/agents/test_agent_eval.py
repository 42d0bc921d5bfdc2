"""`collab eval agents`: an agent's findings over fixtures/agents scored by recall and precision, through the
runner's own path against the fake providers, one definition or two side by side."""

import json

import pytest

from collab.agents import evaluate
from collab.llm.fake import last_user_text

SET = evaluate.FIXTURES / "pricing_tax"
STRICT = SET / "agent.strict.json"


def finding(target):
    return {
        "title": "Price without tax note", "description": "No tax note.", "severity": "high", "targetText": target,
        "suggestion": "", "confidence": 80
    }


def fixed(provider, body):
    """A model that flags the Pro price (right) and the annual discount (wrong) on the pricing page only."""
    text = last_user_text(provider, body)
    found = [finding("acme pro costs 10 dollars"),
             finding("Annual plans save 20 percent.")] if "Acme Pro" in text else []
    return json.dumps({"summary": "done", "findings": found})


@pytest.fixture
def settings(live, llm):
    return live.svc.settings.model_copy(update={"openai_api_key": "sk-eval", "extraction_default_provider": "openai"})


def test_recall_and_precision_of_fixed_findings(live, llm, settings):
    llm.responder = fixed
    report = live.run(evaluate.evaluate(settings, labelled=SET))
    rows = {r.document: r for r in report.rows}
    assert (rows["pricing_page.txt"].matched, rows["pricing_page.txt"].found) == (1, 2)  # overlap, case-insensitive
    assert (rows["newsletter.txt"].recall, rows["faq.txt"].precision) == (0.0, 1.0)
    totals = report.totals()
    assert (totals["expected"], totals["found"], totals["matched"]) == (2, 2, 1)
    assert (totals["recall"], totals["precision"], totals["errors"]) == (0.5, 0.5, 0)
    assert len(llm.of("openai")) == 3 and report.agent == "Price tax check"
    [call] = [c for c in llm.of("openai") if "Acme Pro" in last_user_text("openai", c["json"])]
    assert "whether tax is included" in call["json"]["messages"][0]["content"]  # the agent's instructions


def test_a_malformed_answer_is_an_error_row(live, llm, settings):
    llm.responder = lambda provider, body: "not json"
    report = live.run(evaluate.evaluate(settings, labelled=SET))
    assert all(r.error.startswith("MALFORMED_RESPONSE") for r in report.rows) and report.totals()["errors"] == 3


def test_the_cli_json_and_compare_with_the_stand_in_model(capsys):
    assert evaluate.main(provider="fake", as_json=True) == 0
    out = json.loads(capsys.readouterr().out)["pricing_tax"]
    assert (out["totals"]["recall"], out["totals"]["precision"], out["totals"]["found"]) == (1.0, 0.3333, 6)
    assert {d["document"] for d in out["documents"]} == {"faq.txt", "newsletter.txt", "pricing_page.txt"}

    assert evaluate.main(provider="fake", labelled="pricing_tax", compare=("current", str(STRICT))) == 0
    text = capsys.readouterr().out
    assert "A = current" in text and "| recall | 1 | 1 | +0 |" in text


@pytest.mark.parametrize("found, expected, hit", [
    ("ACME Pro costs 10 dollars a month.", "acme pro costs 10 dollars a month.", True),
    ("costs 10 dollars", "Acme Pro costs 10 dollars a month.", True),
    ("Acme Pro costs 10 dollars monthly", "Acme Pro costs 10 dollars a month.", True),
    ("Annual plans save 20 percent.", "Acme Pro costs 10 dollars a month.", False),
    ("", "Acme Pro", False),
])
def test_overlap(found, expected, hit):
    assert evaluate.overlaps(found, expected) is hit


def test_each_expected_finding_is_matched_once():
    assert evaluate.matched(["a price", "a price"], ["a price"]) == 1
    assert evaluate.matched(["x"], []) == 0
