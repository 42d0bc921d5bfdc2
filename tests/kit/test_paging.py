"""Pages (kit/paging.py): list pages cut by bytes as well as by count (activities, notifications, CRDT
editors, judgments, recordings), and page tokens bound to their query's filters and order (issue #14, 8, 9)."""

import json

import pytest

from support.factories import activity, add_activities, notify, page_of
from support.helpers import (
    enable_activities,
    enable_advanced_queries,
    error,
    issue_paths,
    new_tenant,
    post,
    result,
    settle_jobs,
)

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

ACTIVITIES, NOTIFICATIONS, CRDT = "/v2/activities", "/v2/notifications", "/v2/crdt"
BUDGET = 4096


def every_page(client, path, t, **data):
    """Follow page tokens to the end: the list of pages' records."""
    pages, token = [], None
    while True:
        page = page_of(client, path, t, **data, **({"pageToken": token} if token else {}))
        pages.append(page["data"])
        token = page["pageToken"]
        if token is None:
            return pages
        assert len(pages) < 100


def json_bytes(records) -> int:
    return len(json.dumps(records, separators=(",", ":"), ensure_ascii=False).encode())


@pytest.fixture
def small_pages(live):
    """The running service with a 4 KiB response budget."""
    before = live.svc.settings.max_response_bytes
    live.svc.settings.max_response_bytes = BUDGET
    yield BUDGET
    live.svc.settings.max_response_bytes = before


# Pages cut by bytes as well as by count.


def assert_paged_by_bytes(pages, ids, budget, key="id"):
    assert [r[key] for page in pages for r in page] == ids  # every record once, in order
    assert len(pages) > 1
    for page in pages:
        assert json_bytes(page) <= budget or len(page) == 1


def test_activities_pages_stop_at_the_byte_budget(client, small_pages):
    t = new_tenant(client)
    enable_activities(client, t)
    big = [activity(id=f"a{i}", timestamp=1_000 + i, entityData={"text": "x" * 1500}) for i in range(7)]
    huge = activity(id="a7", timestamp=2_000, entityData={"text": "y" * (3 * small_pages)})
    result(add_activities(client, t, *big, huge))
    pages = every_page(client, f"{ACTIVITIES}/get", t, organizationId="org1", order="asc")
    assert_paged_by_bytes(pages, [f"a{i}" for i in range(8)], small_pages)
    assert [len(p) for p in pages] == [2, 2, 2, 1, 1]  # the record over the budget comes alone
    # pageSize still cuts first.
    assert len(page_of(client, f"{ACTIVITIES}/get", t, organizationId="org1", pageSize=1)["data"]) == 1


def test_notifications_pages_stop_at_the_byte_budget(client, small_pages):
    t = new_tenant(client)
    enable_advanced_queries(client, t)
    for i in range(5):
        notify(client, t, f"n{i}", displayBodyMessage="z" * 1500)
    pages = every_page(client, f"{NOTIFICATIONS}/get", t, organizationId="o1", documentId="d1", order="asc")
    assert_paged_by_bytes(pages, [f"n{i}" for i in range(5)], small_pages)


def test_judgment_queries_stop_at_the_byte_budget(client, live, small_pages):
    t = new_tenant(client)
    enable_activities(client, t)
    judged = [
        activity(id=f"j{i}", actionType="comment_annotation.reject", timestamp=1_000 + i, targetEntityId="ann1",
                 entityData={"reasoning": f"{i} " + "r" * 1500}) for i in range(5)
    ]
    result(add_activities(client, t, *judged))
    settle_jobs(live, t)
    pages = every_page(client, "/v2/memory/judgments/query", t, organizationId="org1")
    assert_paged_by_bytes(pages, [f"j{i}" for i in reversed(range(5))], small_pages, key="recordId")  # newest first
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [r["reasoning"][:1] for page in pages for r in page] == ["4", "3", "2", "1", "0"]


def test_recordings_pages_stop_at_the_byte_budget(client, small_pages):
    t = new_tenant(client)
    files = [{
        "url": f"https://cdn.example.com/{'v' * 1400}.webm", "mimeType": "video/webm", "name": "r.webm",
        "type": "video", "size": 1
    }]
    recordings = [{
        "annotationId": f"r{i}", "recordingType": "screen", "mode": "floating", "displayName": "Walk",
        "recordedTime": {"duration": 1000}, "attachments": files
    } for i in range(5)]
    result(
        post(client, "/v2/recordings/add", {"organizationId": "o1", "documentId": "d1", "recordings": recordings},
             t.headers))
    pages = every_page(client, "/v2/recordings/get", t, organizationId="o1")
    assert_paged_by_bytes(pages, [f"r{i}" for i in range(5)], small_pages, key="annotationId")
    assert [len(p) for p in pages] == [2, 2, 1]
    # pageSize still cuts first.
    page = page_of(client, "/v2/recordings/get", t, organizationId="o1", pageSize=1)
    assert [r["annotationId"] for r in page["data"]] == ["r0"] and page["pageToken"]


@pytest.mark.parametrize("fmt", ["json", "yjs"])
def test_crdt_editors_come_in_pages_of_the_byte_budget(client, small_pages, fmt):
    t = new_tenant(client)
    for i in range(5):
        result(
            post(client, f"{CRDT}/add", {
                "organizationId": "o1", "documentId": "d1", "editorId": f"e{i}", "type": "text", "data": f"{i}" * 1200
            }, t.headers))
    pages = every_page(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1", format=fmt)
    assert_paged_by_bytes(pages, [f"e{i}" for i in range(5)], small_pages)
    assert [r["data"] for page in pages for r in page] == [f"{i}" * 1200 for i in range(5)]
    # One editor asked for by id is one page, whatever its size.
    one = page_of(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1", editorId="e3", format=fmt)
    assert [r["id"] for r in one["data"]] == ["e3"] and one["pageToken"] is None


def test_small_crdt_documents_stay_one_page(client):
    t = new_tenant(client)
    for i in range(3):
        result(
            post(client, f"{CRDT}/add",
                 {"organizationId": "o1", "documentId": "d1", "editorId": f"e{i}", "type": "map", "data": {"k": i}},
                 t.headers))
    page = page_of(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1")
    assert [r["id"] for r in page["data"]] == ["e0", "e1", "e2"] and page["pageToken"] is None


# Page tokens belong to one query: its filters and its order.


def test_activity_page_tokens_only_work_with_their_filters_and_order(client):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add_activities(client, t, *(activity(id=f"a{i}", timestamp=1_000 + i) for i in range(3))))
    query = {"organizationId": "org1", "documentId": "doc1", "featureTypes": ["comment", "reaction"], "pageSize": 1}
    token = page_of(client, f"{ACTIVITIES}/get", t, **query)["pageToken"]
    # The same query goes on (list filters compare as sets; pageSize may change).
    same = {**query, "featureTypes": ["reaction", "comment"], "pageSize": 5, "pageToken": token}
    assert [r["id"] for r in page_of(client, f"{ACTIVITIES}/get", t, **same)["data"]] == ["a1", "a0"]
    for changed in ({"documentId": "doc2"}, {"order": "asc"}, {"featureTypes": ["comment"]}, {"userId": "u1"},
                    {"organizationId": "org2"}):
        response = post(client, f"{ACTIVITIES}/get", {**query, **changed, "pageToken": token}, t.headers)
        assert issue_paths(error(response, "INVALID_ARGUMENT")) == [["pageToken"]], changed


def test_notification_page_tokens_only_work_with_their_filters(client):
    t = new_tenant(client)
    enable_advanced_queries(client, t)
    for i in range(3):
        notify(client, t, f"n{i}", locationId="l1")
    query = {"organizationId": "o1", "documentId": "d1", "locationId": "l1", "pageSize": 1}
    token = page_of(client, f"{NOTIFICATIONS}/get", t, **query)["pageToken"]
    assert token is not None
    assert len(page_of(client, f"{NOTIFICATIONS}/get", t, **query, pageToken=token)["data"]) == 1
    for changed in ({"locationId": "l2"}, {"notificationIds": ["n0", "n1"]}, {"order": "asc"}):
        response = post(client, f"{NOTIFICATIONS}/get", {**query, **changed, "pageToken": token}, t.headers)
        assert issue_paths(error(response, "INVALID_ARGUMENT")) == [["pageToken"]], changed


def test_crdt_page_tokens_only_work_with_their_document(client, small_pages):
    t = new_tenant(client)
    for doc in ("d1", "d2"):
        for i in range(3):
            result(
                post(client, f"{CRDT}/add", {
                    "organizationId": "o1", "documentId": doc, "editorId": f"e{i}", "type": "text", "data": "w" * 2500
                }, t.headers))
    token = page_of(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1")["pageToken"]
    assert token is not None
    response = post(client, f"{CRDT}/get", {"organizationId": "o1", "documentId": "d2", "pageToken": token}, t.headers)
    assert issue_paths(error(response, "INVALID_ARGUMENT")) == [["pageToken"]]
