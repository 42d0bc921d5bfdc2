"""Interactive work never waits behind bulk work: search has its own queue and worker slots."""

import base64
import threading

import pytest

from collab.kit.jobs import BULK_QUEUE, INTERACTIVE_QUEUE, lane, run_sync
from collab.testing import fake_models
from helpers import enable_activities, new_tenant, post, result, settle_jobs

CHECKS = b"Category,Check\nClaims,Every price claim states whether tax is included\n"


def judged(record_id: str, reasoning: str) -> dict:
    return {
        "id": record_id,
        "featureType": "comment",
        "actionType": "comment_annotation.reject",
        "actionUser": {"userId": "u1", "name": "User u1"},
        "targetEntityId": "ann1",
        "entityData": {"reasoning": reasoning},
    }


def wait_for(condition, what: str, limit_s: float = 60) -> None:
    """Wait for a state the service reaches on its own (not a fixed delay)."""
    pause = threading.Event()
    for _ in range(int(limit_s / 0.02)):
        if condition():
            return
        pause.wait(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_functions_are_routed_to_their_lane():
    for function in ("search_judgments", "embed_query", "ask_ai"):
        assert lane(function) == INTERACTIVE_QUEUE
    for function in ("extract_agents", "derive_judgments", "deliver_webhook", "delete_user_data", "migrate_document"):
        assert lane(function) == BULK_QUEUE


def test_interactive_lane_answers_awaited_jobs(live):
    assert live.run(run_sync(live.svc.redis, "ping", timeout_s=10, a=1)) == {"a": 1}


def test_search_answers_while_the_bulk_queue_is_full(client, live, llm):
    """Every bulk slot runs a slow extraction and 1,000 judgments wait to be embedded; a search still answers."""
    llm.responder = fake_models.answer
    searcher = new_tenant(client)
    enable_activities(client, searcher)
    result(post(client, "/v2/activities/add", {"organizationId": "org1", "documentId": "doc1", "activities": [
        judged("price", "The discount claim needs the original price shown next to the sale price."),
        judged("alt", "Images are missing alternative text for screen readers."),
    ]}, searcher.headers))
    settle_jobs(live, searcher)

    slots = live.settings.worker_max_jobs
    llm.script("openai", *[{"hang": True}] * slots)
    extractions = []
    for _ in range(slots):  # a workspace each: every one may run one at a time at least
        t = new_tenant(client)
        body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-own-key"}]}
        result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
        data = {"fileBase64": base64.b64encode(CHECKS).decode(), "mimeType": "text/csv"}
        runner = threading.Thread(target=lambda t=t, data=data: post(client, "/v2/agents/extract", data, t.headers))
        runner.start()
        extractions.append(runner)
    try:
        wait_for(lambda: len(llm.of("openai")) >= slots, "every bulk slot to hold a slow extraction")
        bulk = new_tenant(client)
        enable_activities(client, bulk)
        for batch in range(2):  # 500 activities a request at most
            activities = [judged(f"bulk{batch}-{i}", f"Bulk reasoning {batch}-{i} about claims and prices.")
                          for i in range(500)]
            result(post(client, "/v2/activities/add", {"organizationId": "org1", "documentId": "doc1",
                                                        "activities": activities}, bulk.headers))
        response = post(client, "/v2/memory/search", {"query": "show the previous cost beside the reduced price"},
                        searcher.headers)
        assert response.status_code == 200, response.text
        assert "price" in [r["recordId"] for r in response.json()["result"]["results"]]
    finally:
        llm.loop.call_soon_threadsafe(lambda: (llm.release.set(), llm.release.clear()))
        for runner in extractions:
            runner.join(120)
    settle_jobs(live, bulk)  # the bulk work was only waiting, never dropped
