"""`collab eval search`: the labelled set is well-formed, and the eval runs on a slice of it against a real database."""

import asyncio
import json
import subprocess
import sys
from collections import Counter

import pytest

from collab import cli
from collab.judgments import evaluate

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

KINDS = {"paraphrase", "question", "keyword"}
HARDER_KINDS = {"paraphrase", "question", "comment", "keyword"}
REPORT_HALF = {q["id"] for q in evaluate.load_set(evaluate.HARDER).queries if q["split"] == "report"}


def test_the_fixture_set_is_large_varied_and_consistent():
    labelled = evaluate.load_set()
    assert len(labelled.records) >= 300
    kinds = [q["kind"] for q in labelled.queries]
    assert len(kinds) >= 100 and set(kinds) == KINDS
    assert all(kinds.count(kind) >= 30 for kind in KINDS)
    content_types = {r["activity"]["entityTargetData"]["contentType"] for r in labelled.records}
    assert len(content_types) >= 10
    # Queries are not copies of the judgments they should find.
    reasoning = {r["activity"]["id"]: r["activity"]["entityData"]["reasoning"].lower() for r in labelled.records}
    for query in labelled.queries:
        if query["kind"] != "keyword":
            assert all(query["query"].lower() not in reasoning[r] for r in query["relevant"]), query


def test_the_harder_set_keeps_its_own_rules_and_holds_out_half():
    # check.py: paraphrases share at most one content word with their judgment, questions two, comments copy no
    # run of four words, keywords name their judgments only (its own rules, stdlib only).
    checked = subprocess.run([sys.executable, str(evaluate.HARDER / "check.py")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    labelled = evaluate.load_set(evaluate.HARDER)
    assert len(labelled.records) >= 400 and len(labelled.queries) >= 150
    assert len({r["activity"]["entityTargetData"]["contentType"] for r in labelled.records}) >= 15
    kinds = Counter((q["kind"], q["split"]) for q in labelled.queries)
    assert {kind for kind, _ in kinds} == HARDER_KINDS
    assert all(abs(kinds[kind, "tune"] - kinds[kind, "report"]) <= 1 for kind in HARDER_KINDS)
    # The two sets can be loaded side by side: no id of one is an id of the other.
    easy = evaluate.load_set()
    assert not {r["activity"]["id"] for r in easy.records} & {r["activity"]["id"] for r in labelled.records}


def test_a_half_keeps_every_judgment_and_only_its_queries():
    labelled = evaluate.load_set(evaluate.HARDER)
    report = evaluate.half(labelled, "report")
    assert report.name == "harder (report half)" and report.records == labelled.records
    assert {q["id"] for q in report.queries} == REPORT_HALF
    assert {q["id"]
            for q in evaluate.half(labelled, "tune").queries} == {q["id"]
                                                                  for q in labelled.queries} - REPORT_HALF
    assert evaluate.half(labelled, None) == labelled
    easy = evaluate.load_set()  # no split in it: a half is the whole set
    assert evaluate.half(easy, "report") == easy


def test_sample_keeps_every_kind_and_the_relevant_judgments():
    small = evaluate.sample(evaluate.load_set(), queries=12, judgments=40)
    assert len(small.queries) == 12 and {q["kind"] for q in small.queries} == KINDS
    assert len(small.records) == 40
    ids = {r["activity"]["id"] for r in small.records}
    assert all(r in ids for q in small.queries for r in q["relevant"])


def test_score_caps_recall_at_what_fits_in_the_top_k():
    assert evaluate.score(["a", "b", "x"],
                          ["a", "b"]) == {"recall@1": 1.0, "recall@3": 1.0, "recall@10": 1.0, "rr": 1.0}
    assert evaluate.score(["x", "a"], ["a", "b"]) == {"recall@1": 0.0, "recall@3": 0.5, "recall@10": 0.5, "rr": 0.5}
    assert evaluate.score(["x"], ["a"])["rr"] == 0.0


@pytest.mark.parametrize(
    "judgments, queries, problem",
    [('{"organizationId": "o", "documentId": "d", "activity": {"id": "a", "featureType": "comment"}}\n', "",
      "not an activities/add record"),
     (('{"organizationId": "o", "documentId": "d", "activity": {"id": "a", "featureType": "comment",'
       ' "actionType": "comment.add", "actionUser": {"userId": "u"}}}\n'),
      '{"id": "q1", "kind": "keyword", "query": "x", "relevant": ["nope"]}\n', "not in judgments.jsonl"),
     ("not json\n", "", "line 1"),
     (('{"organizationId": "o", "documentId": "d", "activity": {"id": "a", "featureType": "comment",'
       ' "actionType": "comment.add", "actionUser": {"userId": "u"}}}\n'),
      '{"id": "q1", "kind": "keyword", "query": "x", "relevant": ["a"], "split": "train"}\n', "split must be one of")])
def test_a_malformed_set_is_refused_with_its_line(tmp_path, capsys, judgments, queries, problem):
    (tmp_path / "judgments.jsonl").write_text(judgments)
    (tmp_path / "queries.jsonl").write_text(queries)
    code = evaluate.main(model=None, set_path=tmp_path, as_json=False, queries=None, judgments=None, bf16=False)
    assert code == 2 and problem in capsys.readouterr().err


def _check(ranking: dict, kinds: set[str], per_kind: int) -> None:
    assert set(ranking["kinds"]) == kinds
    for m in [*ranking["kinds"].values(), ranking["overall"]]:
        for k in (1, 3, 10):
            assert 0 <= m[f"recall@{k}"] <= 1
        assert m["recall@3"] <= m["recall@10"] and 0 <= m["mrr"] <= 1
        # The report's shape, not a speed: both percentiles are there and ordered.
        assert m["p50_ms"] > 0 and sorted([m["p50_ms"], m["p95_ms"]]) == [m["p50_ms"], m["p95_ms"]]
    assert all(m["queries"] == per_kind for m in ranking["kinds"].values())


def test_cli_runs_on_a_slice_of_the_fixture_set(live, db, monkeypatch, capsys):
    # The command as typed, in this process (the model is loaded once per process), on the test database.
    monkeypatch.setattr("collab.config.get_settings", lambda: live.settings)
    monkeypatch.setattr(cli, "get_settings", lambda: live.settings)
    monkeypatch.setattr(cli.collab_logging, "setup", lambda *args: None)
    code = cli.main(["eval", "search", "--queries", "12", "--judgments", "40", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    # Both sets, each in a tenant of its own: the project's whole, the harder set's held-out half.
    report, harder = json.loads(out)["sets"]
    assert report["set"] == "search" and harder["set"] == "harder (report half)"
    assert harder["judgments"] == 40 and harder["queries"] == 12
    assert {d["id"] for d in harder["perQuery"]} <= REPORT_HALF
    assert report["judgments"] == 40 and report["queries"] == 12
    assert report["load"]["judgments"] == 40 and report["load"]["vectors"] == 40
    assert set(report["rankings"]) == {"configured", "vector_only"}
    assert report["rankings"]["vector_only"]["settings"]["lexical_weight"] == 0
    for ranking in report["rankings"].values():
        _check(ranking, KINDS, 4)
    assert len(report["perQuery"]) == 12 and all(len(d["configured"]["top"]) <= 3 for d in report["perQuery"])
    # The scratch tenant is gone, and with it the 40 activities, judgments and vectors.
    assert (db.execute("select count(*) as n from workspaces where owner_email = %s",
                       (evaluate.SCRATCH_EMAIL, )).fetchone()["n"] == 0)


def test_a_query_finds_the_judgment_it_quotes_under_both_rankings(live, db, tmp_path):
    labelled = evaluate.sample(evaluate.load_set(), queries=3, judgments=30)
    # Self-retrieval: each query is a judgment's own reasoning, so it must come back in the top 10.
    quoted = [{
        "id": f"self-{r['activity']['id']}", "kind": "self", "query": r["activity"]["entityData"]["reasoning"],
        "relevant": [r["activity"]["id"]]
    } for r in labelled.records[::10]]
    report = asyncio.run(
        evaluate.run(live.settings, labelled=evaluate.LabelledSet(labelled.records, quoted), model="default"))
    assert report["model"] == "all-MiniLM-L6-v2"
    for ranking in report["rankings"].values():
        _check(ranking, {"self"}, 3)
        assert ranking["overall"]["recall@10"] == 1.0 and ranking["overall"]["mrr"] > 0
    assert "vector only" in evaluate.table(report) and "| self |" in evaluate.table(report)
    assert (db.execute("select count(*) as n from workspaces where owner_email = %s",
                       (evaluate.SCRATCH_EMAIL, )).fetchone()["n"] == 0)


def test_leftover_cleanup_never_reaches_a_tenant_that_signed_up_with_the_scratch_address(client, live, db):
    from support.helpers import new_tenant

    real = new_tenant(client, ownerEmail=evaluate.SCRATCH_EMAIL, name="Real").workspace["id"]
    db.execute("update workspaces set created_at = now() - interval '2 days' where id = %s", (real, ))
    workspace_id, _ = live.run(evaluate.scratch_tenant(live.svc))  # cleans up leftovers first
    live.run(evaluate.drop_tenant(live.svc, workspace_id=workspace_id))
    assert db.execute("select count(*) as n from workspaces where id = %s", (real, )).fetchone()["n"] == 1
