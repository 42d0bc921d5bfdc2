"""Review → judgments → search (ADR 0055): a reviewer accepting or rejecting an agent's suggestion through
commentannotations/update makes a judgment that memory/search finds, with the finding as its reasoning."""

import pytest
from test_agent_executions import FINDING, answering, page, setup, start, suggestions  # noqa: F401 (fixture)

from support.helpers import enable_activities, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments and embeds them (conftest.py)


def review(client, t, annotation_id, status):
    body = {
        "organizationId": "org", "documentId": "doc", "annotationIds": [annotation_id],
        "updatedData": {"status": status}, "actionUser": {"userId": "rita", "name": "Rita"}
    }
    return result(post(client, "/v2/commentannotations/update", body, t.headers))


def judgments_of(client, t, annotation_id):
    body = {"query": "tax", "organizationId": "org", "filters": {"annotationId": annotation_id}, "limit": 20}
    response = post(client, "/v2/memory/search", body, t.headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]["results"]


def suggested(client, t, llm, live, page_url, agent_id):
    llm.responder = answering(FINDING)
    result(start(client, t, agent_id, page_url))
    settle_jobs(live, t)
    [thread] = suggestions(client, t)
    return thread


def test_accepting_an_agent_suggestion_makes_a_searchable_judgment(client, llm, live, page):
    t, agent_id = setup(client)
    enable_activities(client, t)
    thread = suggested(client, t, llm, live, page.url, agent_id)
    review(client, t, thread["annotationId"], {"id": "resolved"})
    settle_jobs(live, t)

    found = judgments_of(client, t, thread["annotationId"])
    [accepted] = [r for r in found if r["decision"] == "approved"]
    assert FINDING["description"] in accepted["reasoning"] and FINDING["suggestion"] in accepted["reasoning"]
    assert accepted["actionUser"]["userId"] == "rita" and accepted["agent"] is None  # the reviewer's judgment
    # The agent's own suggestion is a judgment too (an agent's comment), and resolving one besides.
    assert {"comment", "resolve", "approved"} <= {r["decision"] for r in found}

    activities = result(post(client, "/v2/activities/get", {"organizationId": "org", "documentId": "doc"}, t.headers))
    [logged] = [a for a in activities if a["actionType"] == "comment_annotation.suggestion_accept"]
    assert logged["entityData"]["suggestion"]["status"] == "accepted"
    assert logged["entityData"]["suggestion"]["targetText"] == FINDING["targetText"]


def test_rejecting_an_agent_suggestion_makes_a_rejected_judgment(client, llm, live, page):
    t, agent_id = setup(client)
    enable_activities(client, t)
    thread = suggested(client, t, llm, live, page.url, agent_id)
    review(client, t, thread["annotationId"], {"id": "rejected", "type": "terminal", "name": "Rejected"})
    settle_jobs(live, t)

    found = judgments_of(client, t, thread["annotationId"])
    [rejected] = [r for r in found if r["decision"] == "rejected"]
    assert FINDING["description"] in rejected["reasoning"] and rejected["agent"] is None
    assert "approved" not in {r["decision"] for r in found}


def test_a_status_change_on_a_human_thread_or_a_second_resolve_is_no_suggestion_decision(client, llm, live, page):
    t, agent_id = setup(client)
    enable_activities(client, t)
    thread = suggested(client, t, llm, live, page.url, agent_id)
    review(client, t, thread["annotationId"], {"id": "in_progress"})
    review(client, t, thread["annotationId"], {"id": "resolved"})
    review(client, t, thread["annotationId"], {"id": "rejected", "type": "terminal"})  # terminal to terminal: none
    human = {"annotationId": "human", "commentData": [{"commentText": "Looks fine", "from": {"userId": "rita"}}]}
    result(
        post(client, "/v2/commentannotations/add",
             {"organizationId": "org", "documentId": "doc", "commentAnnotations": [human]}, t.headers))
    review(client, t, "human", {"id": "resolved"})
    settle_jobs(live, t)

    activities = result(post(client, "/v2/activities/get", {"organizationId": "org", "documentId": "doc"}, t.headers))
    decided = [(a["actionType"], a["targetEntityId"]) for a in activities if "suggestion_" in a["actionType"]]
    assert decided == [("comment_annotation.suggestion_accept", thread["annotationId"])]
