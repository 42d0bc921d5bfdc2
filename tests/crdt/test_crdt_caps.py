"""CRDT caps, enforced on write: editors per document and the size of an editor's state (issue #14, 8)."""

import pytest

from support.factories import page_of
from support.helpers import error, issue_paths, new_tenant, post, result

CRDT = "/v2/crdt"


@pytest.fixture
def crdt_caps(live):
    """The running service with at most 2 editors per document and 2 KiB per editor's state."""
    settings = live.svc.settings
    before = settings.crdt_max_editors_per_document, settings.crdt_max_state_bytes
    settings.crdt_max_editors_per_document, settings.crdt_max_state_bytes = 2, 2048
    yield
    settings.crdt_max_editors_per_document, settings.crdt_max_state_bytes = before


# CRDT caps, enforced on write.


def _editors(client, t, *editors):
    """Add text editors to document d1 of organization o1."""
    for editor in editors:
        result(
            post(client, f"{CRDT}/add",
                 {"organizationId": "o1", "documentId": "d1", "editorId": editor, "type": "text", "data": "hi"},
                 t.headers))


def test_crdt_editors_per_document_are_capped(client, crdt_caps):
    t = new_tenant(client)
    _editors(client, t, "e1", "e2")
    third = {"organizationId": "o1", "documentId": "d1", "editorId": "e3", "type": "text", "data": "hi"}
    err = error(post(client, f"{CRDT}/add", third, t.headers), "RESOURCE_EXHAUSTED")
    assert "at most 2 CRDT editors" in err["message"]
    # Another document has its own count; deleting an editor makes room.
    result(post(client, f"{CRDT}/add", {**third, "documentId": "d2"}, t.headers))
    result(post(client, f"{CRDT}/delete", {"organizationId": "o1", "documentId": "d1", "editorIds": ["e1"]}, t.headers))
    result(post(client, f"{CRDT}/add", third, t.headers))
    page = page_of(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1")
    assert [r["id"] for r in page["data"]] == ["e2", "e3"]


def test_an_existing_editor_at_the_cap_is_already_exists(client, crdt_caps):
    t = new_tenant(client)
    _editors(client, t, "e1", "e2")
    again = {"organizationId": "o1", "documentId": "d1", "editorId": "e1", "type": "text", "data": "other"}
    err = error(post(client, f"{CRDT}/add", again, t.headers), "ALREADY_EXISTS")
    assert err["message"] == "CRDT data already exists for this editor ID."
    error(post(client, f"{CRDT}/add", {**again, "editorId": "e3"}, t.headers), "RESOURCE_EXHAUSTED")
    page = page_of(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1")
    assert [(r["id"], r["data"]) for r in page["data"]] == [("e1", "hi"), ("e2", "hi")]


def test_crdt_state_size_is_capped_on_add_and_update(client, crdt_caps):
    t = new_tenant(client)
    editor = {"organizationId": "o1", "documentId": "d1", "editorId": "e1", "type": "text"}
    err = error(post(client, f"{CRDT}/add", {**editor, "data": "x" * 5000}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["data"]] and "2048 bytes" in err["message"]
    result(post(client, f"{CRDT}/add", {**editor, "data": "small"}, t.headers))
    err = error(post(client, f"{CRDT}/update", {**editor, "data": "x" * 5000}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["data"]]
    [record] = page_of(client, f"{CRDT}/get", t, organizationId="o1", documentId="d1")["data"]
    assert record["data"] == "small"
