"""`collab eval search --memory`: ask and suggest measured on a slice of the labelled set, through the command as
typed, with the offline stand-in model; the scratch tenant is gone afterwards."""

import json

import pytest

from collab import cli
from collab.judgments import evaluate
from collab.memory import evaluate as memory_evaluate

pytestmark = pytest.mark.usefixtures("embedding_model")


def test_cli_measures_ask_and_suggest_on_a_slice(live, db, monkeypatch, capsys):
    monkeypatch.setattr("collab.config.get_settings", lambda: live.settings)
    monkeypatch.setattr(cli, "get_settings", lambda: live.settings)
    monkeypatch.setattr(cli.collab_logging, "setup", lambda *args: None)
    code = cli.main([
        "eval", "search", "--memory", "--provider", "fake", "--set",
        str(evaluate.FIXTURES), "--queries", "12", "--judgments", "40", "--json"
    ])
    out = capsys.readouterr().out
    assert code == 0, out
    [report] = json.loads(out)["sets"]
    assert (report["set"], report["judgments"], report["provider"]) == ("search", 40, "fake (offline stand-in)")
    ask, suggest = report["ask"], report["suggest"]
    # Every labelled question finds its records; every off-topic one is declined without an answer.
    assert (ask["questions"], ask["unanswerable"], ask["abstained"]) == (12, 20, 1.0)
    assert ask["answered"] == 1.0 and ask["groundingRecall"] >= 0.75
    assert 0 < ask["citationPrecision"] <= 1 and 0 < ask["citationRecall"] <= 1
    assert 0 < suggest["scored"] <= 12 and suggest["abstained"] == 1.0
    assert suggest["accuracy"] is None or 0 <= suggest["accuracy"] <= 1
    assert (db.execute("select count(*) as n from workspaces where owner_email = %s",
                       (evaluate.SCRATCH_EMAIL, )).fetchone()["n"] == 0)


def test_a_suggestion_is_scored_only_where_the_labels_agree():
    query = {"relevant": ["a", "b"]}
    assert memory_evaluate.expected_side(query, {"a": "approved", "b": "endorse"}) == "approve"
    assert memory_evaluate.expected_side(query, {"a": "approved", "b": "rejected"}) is None
    assert memory_evaluate.expected_side(query, {"a": "comment", "b": "rejected"}) is None


def test_provider_without_memory_is_refused(capsys):
    assert cli.main(["eval", "search", "--provider", "fake"]) == 2
    assert "--memory" in capsys.readouterr().err
