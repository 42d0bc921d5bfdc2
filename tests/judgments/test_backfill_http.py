"""POST /v2/memory/backfill/judgments (velt-py's backfillJudgments): the CLI's backfill over HTTP for the calling
API key, a batch a call, resumable and idempotent."""

import pytest
from velt_py.models.memory import BackfillJudgmentsRequest

from support.factories import add_activities, judged
from support.helpers import enable_activities, error, issue_paths, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")

BACKFILL = "/v2/memory/backfill/judgments"
T0 = 1_790_000_000_000


def tenant_with_activities(client, live, db):
    """Five review activities and one that is no judgment; then their judgments (and vectors) lost."""
    t = new_tenant(client)
    enable_activities(client, t)
    reviews = [judged(f"j{n}", f"The claim number {n} has no source.", ts=T0 + n) for n in range(5)]
    note = {
        "id": "j5", "featureType": "custom", "actionType": "custom.viewed", "actionUser": {"userId": "u1"},
        "targetEntityId": "e1", "timestamp": T0 + 5
    }
    result(add_activities(client, t, *reviews, note))
    settle_jobs(live, t)
    db.execute("delete from judgments where api_key_id = %s", (t.api_key, ))
    return t


def judgments(db, t) -> list[str]:
    rows = db.execute("select id from judgments where api_key_id = %s order by id", (t.api_key, )).fetchall()
    return [r["id"] for r in rows]


def test_backfill_walks_the_keys_activities_a_batch_a_call(client, live, db, sdk):
    t = tenant_with_activities(client, live, db)
    other = tenant_with_activities(client, live, db)
    backfill = sdk(t).api.memory.backfillJudgments
    first = backfill(BackfillJudgmentsRequest(batchSize=4))["result"]
    assert first["status"] == "success" and first["message"] == "Judgments backfilled."
    assert first["data"] == {"processed": 4, "judgments": 4, "embedded": 4, "resumeFrom": "j3", "done": False}
    assert judgments(db, t) == ["j0", "j1", "j2", "j3"]
    last = backfill(BackfillJudgmentsRequest(batchSize=4, resumeFrom="j3"))["result"]["data"]
    assert last == {"processed": 2, "judgments": 1, "embedded": 1, "resumeFrom": None, "done": True}
    assert judgments(db, t) == ["j0", "j1", "j2", "j3", "j4"]
    assert judgments(db, other) == []  # another key's activities are never read
    # Idempotent: again from the start, the same judgments; `force` embeds every text again.
    again = result(post(client, BACKFILL, {"batchSize": 1000}, t.headers))
    assert again == {"processed": 6, "judgments": 5, "embedded": 0, "resumeFrom": None, "done": True}
    forced = result(post(client, BACKFILL, {"force": True}, t.headers))
    assert forced["judgments"] == 5 and forced["embedded"] == 5
    assert judgments(db, t) == ["j0", "j1", "j2", "j3", "j4"]


def test_backfill_within_timestamp_bounds(client, live, db):
    t = tenant_with_activities(client, live, db)
    out = result(post(client, BACKFILL, {"timestampLowerBoundMs": T0 + 1, "timestampUpperBoundMs": T0 + 2}, t.headers))
    assert (out["processed"], out["done"]) == (2, True)
    assert judgments(db, t) == ["j1", "j2"]


def test_backfill_refuses_other_keys_and_bad_input(client, live, db):
    t = new_tenant(client)
    e = error(post(client, BACKFILL, {"storeDbId": "s1", "allApiKeysInStore": True, "migrateOldSdk": True}, t.headers),
              "INVALID_ARGUMENT")
    assert sorted(tuple(p) for p in issue_paths(e)) == [("allApiKeysInStore", ), ("migrateOldSdk", ), ("storeDbId", )]
    e = error(
        post(client, BACKFILL, {"timestampLowerBoundMs": 5, "timestampUpperBoundMs": 4, "batchSize": 0}, t.headers),
        "INVALID_ARGUMENT")
    assert sorted(tuple(p) for p in issue_paths(e)) == [("batchSize", ), ("timestampLowerBoundMs", )]
    for bad in ({"batchSize": 1001}, {"batchSize": "5"}, {"force": "yes"}, {"resumeFrom": ""},
                {"resumeFrom": "x" * 201}, {"timestampLowerBoundMs": -1}):
        field = next(iter(bad))
        assert [tuple(p) for p in issue_paths(error(post(client, BACKFILL, bad, t.headers), "INVALID_ARGUMENT"))
                ] == [(field, )], bad
    assert result(post(client, BACKFILL, {"allApiKeysInStore": False}, t.headers))["done"] is True
