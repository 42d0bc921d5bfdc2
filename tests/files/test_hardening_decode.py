"""Hostile uploads: every decoder is linear, text formats decode in a bounded child, other tenants keep working.

Nothing here measures time: a regression shows as a test that does not finish (the old decoders took minutes
to hours on these inputs, holding the GIL, so the whole process, HTTP clients included, stood still).
"""

import base64
import threading

import httpx
import pytest

from collab.files import DecodeError, Limits, decode
from collab.testing import fake_models
from support import pathological
from support.helpers import enable_activities, error, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

EXTRACT = "/v2/agents/extract"
SEARCH = "/v2/memory/search"
ASK = "/v2/rewriter/ask-ai"
ITEM = "Check that item 0 of the review is done"


@pytest.mark.parametrize("name, data, mime", pathological.CASES, ids=[c[0] for c in pathological.CASES])
def test_pathological_input_is_decoded_or_refused(name, data, mime):
    try:
        decoded = decode(data, mime)
    except DecodeError as exc:
        assert exc.kind in ("limits", "unreadable")
        return
    assert decoded.tasks
    assert all(len(t.text) <= Limits().max_task_chars for t in decoded.tasks)
    if pathological.REAL_ITEMS in data:
        assert ITEM in [t.text for t in decoded.tasks]


def test_five_mb_of_pathological_lines_keeps_its_real_items():
    decoded = decode(pathological.FIVE_MB_MARKDOWN, "text/markdown")
    texts = [t.text for t in decoded.tasks]
    assert texts[:2] == [ITEM, "Check that item 1 of the review is done"]
    assert len(texts) == 40
    # The heading lines still name the category of what follows them.
    assert decoded.meta["headings"] > 0


def test_headings_and_links_still_read_as_before():
    text = ("# Access control ##\n"
            "- See [the runbook](https://example.com/run) before **rotating** keys\n"
            "## C# services\n"
            "- [x] Builds [pin] the [SDK](https://example.com/sdk) version\n"
            "#NotAHeading is a line of text\n")
    decoded = decode(text.encode(), "text/markdown")
    assert [(t.text, t.category) for t in decoded.tasks] == [("See the runbook before rotating keys", "Access control"),
                                                             ("Builds [pin] the SDK version", "C# services")]


@pytest.mark.parametrize(
    "data, delimiter", [(b"Area|Check\nOps|Backups are restored every quarter\nOps|Alerts page the on-call\n", "|"),
                        (b'Area;Check\nOps;"Backups, restores; and logs are kept"\nOps;Alerts page the on-call\n', ";"),
                        (b"Area,Check\nOps,Use a; b and c\nOps,Alerts page; the on-call\nOps,Keys rotate\n", ","),
                        (b"Area\tCheck\nOps\tBackups are restored every quarter\nOps\tAlerts page the on-call\n", "\t"),
                        (b"Check\nBackups are restored every quarter\nAlerts page the on-call\n", ",")])
def test_csv_delimiter_is_detected_without_the_sniffer(data, delimiter):
    decoded = decode(data, "text/csv")
    assert decoded.meta["delimiter"] == delimiter
    assert len(decoded.tasks) >= 2


def test_text_decoding_past_its_time_limit_is_refused():
    with pytest.raises(DecodeError) as info:
        decode(pathological.FIVE_MB_MARKDOWN, "text/markdown", limits=Limits(text_timeout_s=0.001))
    assert info.value.kind == "limits"
    assert "took longer than" in info.value.message


def test_text_decoding_past_its_memory_limit_is_refused():
    line = b"- Check that control %06d is in place" + b" and documented" * 16 + b"\n"
    items = b"".join(line % i for i in range(15_000))
    assert len(decode(items, "text/markdown").tasks) == 15_000
    with pytest.raises(DecodeError) as info:
        decode(items, "text/markdown", limits=Limits(text_memory_bytes=48 * 1024 * 1024))
    assert info.value.kind == "limits"
    assert "memory" in info.value.message


# --- over HTTP: one tenant's hostile upload, another tenant's calls ----------------------------------------


def found(response: httpx.Response) -> list[str]:
    """The record ids a search answered (after checking it answered normally)."""
    assert response.status_code == 200, response.text
    return [hit["recordId"] for hit in response.json()["result"]["results"]]


def test_pathological_upload_with_another_tenant_searching_during_it(client, live, contract, llm):
    llm.responder = fake_models.answer
    key = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-hardening"}]}
    uploader, other = new_tenant(client), new_tenant(client)
    for t in (uploader, other):
        result(post(client, "/v2/workspace/apikeyconfig/update", key, t.headers))
    enable_activities(client, other)
    activity = {
        "id": "a1", "featureType": "comment", "actionType": "comment_annotation.reject", "actionUser": {"userId": "u1"},
        "targetEntityId": "ann1",
        "entityData": {"reasoning": "The discount claim needs the original price shown next to the sale price."}
    }
    body = {"organizationId": "org1", "documentId": "doc1", "activities": [activity]}
    result(post(client, "/v2/activities/add", body, other.headers))
    settle_jobs(live, other)
    search = {"query": "discount claims need the original price"}
    ask = {"model": "gpt-4o", "prompt": "Make it formal.", "text": "hey, ship it"}
    # Before the upload, once: the other tenant's calls answer, and its activity is found.
    assert found(post(client, SEARCH, search, other.headers)) == ["a1"]
    assert post(client, ASK, ask, other.headers).json()["result"]["success"] is True
    body = {"fileBase64": base64.b64encode(pathological.FIVE_MB_MARKDOWN).decode(), "mimeType": "text/markdown"}
    outcome: dict[str, httpx.Response] = {}

    def upload() -> None:
        # The extraction budget (COLLAB_EXTRACTION_TIMEOUT_S, 120 s) ends the call; the client waits a little more.
        with httpx.Client(base_url=live.url, timeout=150, event_hooks={"response": [contract.check]}) as c:
            outcome["response"] = post(c, EXTRACT, body, uploader.headers)

    thread = threading.Thread(target=upload, daemon=True)
    thread.start()
    answers = []
    # The other tenant keeps calling while the upload is in flight (and a few times at least); each call has
    # 10 s, far more than it needs, and must answer normally.
    with httpx.Client(base_url=live.url, timeout=10, event_hooks={"response": [contract.check]}) as c:
        while len(answers) < 6 or (thread.is_alive() and len(answers) < 60):
            searched = post(c, SEARCH, search, other.headers)
            asked = post(c, ASK, ask, other.headers)
            answers += [searched.status_code, asked.status_code]
            assert found(searched) == ["a1"]
            assert asked.status_code == 200 and asked.json()["result"]["success"] is True, asked.text
    thread.join(timeout=150)
    response = outcome["response"]
    # Decoded, or refused as INVALID_ARGUMENT: never a 500.
    if response.status_code == 200:
        agents = result(response)["extractionResult"]["agents"]
        assert ITEM in [task for agent in agents for task in agent["sourceTasks"]]
    else:
        error(response, "INVALID_ARGUMENT", 400)
