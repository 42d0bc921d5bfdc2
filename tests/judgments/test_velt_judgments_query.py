"""memory/judgments/query in Velt's form (issue #51 item 8): a call that sends Velt's `limit` (velt-py's
QueryJudgmentsRequest) is answered with Velt's `{results, total}` beside collab's `data` and `pageToken`; collab's
own form (`pageSize`) keeps its shape."""

import pytest
from velt_py.models.memory import QueryJudgmentsRequest

from support.factories import add_activities, judged
from support.helpers import enable_activities, error, issue_paths, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # judgments are derived (and embedded) in the worker
QUERY = "/v2/memory/judgments/query"


def test_a_velt_call_gets_results_and_total_beside_the_page(client, live, sdk):
    t = new_tenant(client)
    enable_activities(client, t)
    result(
        add_activities(client, t, judged("j1", "Too vague.", ts=1_000), judged("j2", "Cite it.", ts=2_000),
                       judged("j3", "Fine now.", ts=3_000, action="comment_annotation.approve")))
    settle_jobs(live, t)
    velt = sdk(t).api.memory.queryJudgments(QueryJudgmentsRequest(organizationId="org1", decision="rejected",
                                                                  limit=1))["result"]
    assert [r["recordId"] for r in velt["results"]] == ["j2"] and velt["total"] == 1  # newest first, at most limit
    assert velt["data"] == velt["results"] and velt["pageToken"]  # collab's keys stay beside Velt's
    ours = result_of(post(client, QUERY, {"organizationId": "org1", "decision": "rejected", "pageSize": 1}, t.headers))
    assert "results" not in ours and "total" not in ours and [r["recordId"] for r in ours["data"]] == ["j2"]
    err = error(post(client, QUERY, {"limit": 1, "pageSize": 1}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["limit"]]


def result_of(response):
    assert response.status_code == 200, response.text
    return response.json()["result"]
