"""`collab eval search --memory`: ask and suggest measured on a slice of the labelled set with the offline stand-in
model; the scratch tenant is gone afterwards."""

import pytest

from collab import cli
from collab.judgments import evaluate
from collab.memory import evaluate as memory_evaluate

pytestmark = pytest.mark.usefixtures("embedding_model")


def test_the_eval_measures_ask_and_suggest_on_a_slice(live, llm, db):
    # The session's fake providers answer as the offline stand-in (`--provider fake` starts one of its own).
    llm.responder = memory_evaluate.stand_in
    settings = live.settings.model_copy(update={"openai_api_key": "offline", "memory_provider": "openai"})
    labelled = evaluate.sample(evaluate.load_set(), queries=12, judgments=40)
    [report] = live.run(
        memory_evaluate.run_sets(settings, sets=[labelled], unanswerable=memory_evaluate.load_unanswerable(),
                                 model=None), timeout=600)
    assert (report["set"], report["judgments"], report["provider"]) == ("search", 40, "openai")
    ask, suggest = report["ask"], report["suggest"]
    # Every labelled question finds its records; every off-topic one is declined without an answer.
    assert (ask["questions"], ask["unanswerable"], ask["abstained"]) == (12, 20, 1.0)
    assert ask["answered"] == 1.0 and ask["groundingRecall"] >= 0.75
    assert 0 < ask["citationPrecision"] <= 1 and 0 < ask["citationRecall"] <= 1
    assert 0 < suggest["scored"] <= 12 and suggest["abstained"] == 1.0
    assert suggest["accuracy"] is None or 0 <= suggest["accuracy"] <= 1
    assert "| ask | 12 |" in memory_evaluate.table(report)
    # The scratch tenant is gone (by its prefix: a real sign-up may use the scratch address, see test_eval_search).
    assert db.execute("select count(*) as n from workspaces where id like %s",
                      (evaluate.SCRATCH_PREFIX + "%", )).fetchone()["n"] == 0


def test_a_suggestion_is_scored_only_where_the_labels_agree():
    query = {"relevant": ["a", "b"]}
    assert memory_evaluate.expected_side(query, {"a": "approved", "b": "endorse"}) == "approve"
    assert memory_evaluate.expected_side(query, {"a": "approved", "b": "rejected"}) is None
    assert memory_evaluate.expected_side(query, {"a": "comment", "b": "rejected"}) is None


def test_provider_without_memory_is_refused(capsys):
    assert cli.main(["eval", "search", "--provider", "fake"]) == 2
    assert "--memory" in capsys.readouterr().err
