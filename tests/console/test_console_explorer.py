"""Console page 5, Data explorer, in a real browser: organizations -> folders -> documents, who can see a document
and why (direct, folder, group), its activities, a user's notifications, paging; another workspace's ids are 404."""

import re

import pytest

from support.console_browser import browser, check_a11y, console_page, page, screenshot  # noqa: F401 (fixtures)
from support.console_http import signed_in
from support.factories import add_activities, notify
from support.helpers import add_organization, enable_activities, enable_advanced_queries, new_tenant, post, result

pytestmark = pytest.mark.usefixtures("live", "embedding_model")  # the model: conftest.py


def _grant(client, t, principal, resource):
    result(post(client, "/v2/auth/permissions/add", {**principal, "permissions": {"resources": [resource]}}, t.headers))


def _explorer_tenant(client):
    """o1: folder f1 holding d1, and d2 outside it; dana (direct), fred (folder), gina (group eng) reach d1."""
    t = new_tenant(client)
    enable_activities(client, t)
    enable_advanced_queries(client, t)
    add_organization(client, t, "o1", "d1", folder="f1")
    result(
        post(client, "/v2/organizations/documents/add", {"organizationId": "o1", "documents": [{"documentId": "d2"}]},
             t.headers))
    result(
        post(client, "/v2/organizations/usergroups/add",
             {"organizationId": "o1", "organizationUserGroups": [{"groupId": "eng"}]}, t.headers))
    result(
        post(client, "/v2/organizations/usergroups/users/add",
             {"organizationId": "o1", "organizationUserGroupId": "eng", "userIds": ["gina"]}, t.headers))
    _grant(client, t, {"user": {"userId": "dana"}}, {"type": "document", "id": "d1", "organizationId": "o1"})
    _grant(client, t, {"user": {"userId": "fred"}},
           {"type": "folder", "id": "f1", "organizationId": "o1", "accessRole": "viewer"})
    _grant(client, t, {"group": {"organizationId": "o1", "organizationUserGroupId": "eng"}},
           {"type": "organization", "id": "o1", "accessRole": "viewer"})
    result(
        add_activities(
            client, t, {
                "featureType": "comment", "actionType": "comment.add", "actionUser": {"userId": "dana"},
                "targetEntityId": "ann-7"
            }, org="o1", doc="d1"))
    notify(client, t, "n1", displayBodyMessage="Please review the pricing page")
    return t


def test_explorer_walks_organizations_folders_documents_access_activities_and_notifications(page, live, client):
    t = _explorer_tenant(client)
    console_page(page, live, t)
    page.get_by_role("link", name="Data").click()
    page.wait_for_url(re.compile(r"/console/explorer"))
    orgs = page.get_by_role("table", name="Organizations of this API key")
    assert orgs.get_by_role("link", name="o1").is_visible()
    check_a11y(page)
    screenshot(page, "explorer-organizations")

    # Keyboard only: the organization link takes focus and Enter opens it.
    orgs.get_by_role("link", name="o1").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/console/explorer/organization\?"))
    documents = page.get_by_role("table", name=re.compile("^Documents"))
    assert documents.get_by_role("link", name="d1").is_visible()
    assert documents.get_by_role("link", name="d2").is_visible()
    page.get_by_role("link", name="f1").click()  # the folder: only its documents
    assert documents.get_by_role("link", name="d1").is_visible()
    assert documents.get_by_role("link", name="d2").count() == 0
    check_a11y(page)
    screenshot(page, "explorer-organization")

    documents.get_by_role("link", name="d1").click()
    page.wait_for_url(re.compile(r"/console/explorer/document\?"))
    access = page.get_by_role("table", name=re.compile("^Users with a live grant"))
    rows = {row.get_by_role("rowheader").inner_text(): row.inner_text() for row in access.locator("tbody tr").all()}
    assert set(rows) == {"dana", "fred", "gina"}
    assert "editor" in rows["dana"] and "Direct grant on this document" in rows["dana"]
    assert "viewer" in rows["fred"] and "Inherited from folder f1" in rows["fred"]
    assert "viewer" in rows["gina"] and "Through group eng" in rows["gina"]
    activities = page.get_by_role("table", name=re.compile("^Activities of this document"))
    assert "comment · comment.add" in activities.inner_text() and "ann-7" in activities.inner_text()
    check_a11y(page)
    screenshot(page, "explorer-document")

    # A user's notifications (advanced queries are on for this key).
    page.get_by_role("link", name="o1").click()
    page.get_by_label("User id").fill("u1")
    page.get_by_role("button", name="Show notifications").click()
    page.wait_for_url(re.compile(r"/console/explorer/user\?"))
    listed = page.get_by_role("table", name=re.compile("^Notifications for u1"))
    assert "Please review the pricing page" in listed.inner_text()
    check_a11y(page)
    screenshot(page, "explorer-user")


def test_explorer_pages_through_organizations(page, live, client):
    t = new_tenant(client)
    ids = [f"org-{i:02d}" for i in range(30)]
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": i} for i in ids]}, t.headers))
    console_page(page, live, t)
    page.goto(f"/console/explorer?key={t.api_key}")
    table = page.get_by_role("table", name="Organizations of this API key")
    first = table.get_by_role("rowheader").all_inner_texts()
    page.get_by_role("link", name="Next page").click()
    second = table.get_by_role("rowheader").all_inner_texts()
    assert first + second == ids and len(first) == 25
    assert page.get_by_role("link", name="Next page").count() == 0


def test_explorer_refuses_another_workspaces_ids_and_explains_a_refusal(live, client):
    t = _explorer_tenant(client)
    other = new_tenant(client)
    add_organization(client, other, "theirs", "secret-doc")
    with signed_in(live, t) as http:
        assert http.get(f"/console/explorer?key={other.api_key}").status_code == 404
        for path in ("/console/explorer/organization?org=theirs",
                     "/console/explorer/document?org=theirs&doc=secret-doc",
                     "/console/explorer/user?org=theirs&user=u1", "/console/explorer/document?org=o1&doc=secret-doc"):
            response = http.get(f"{path}&key={t.api_key}")
            assert response.status_code == 404, path
            assert "This API key has no such" in response.text
        # A page token that is not one: the error in words, not a 500.
        bad = http.get(f"/console/explorer?key={t.api_key}&page=not-a-token")
        assert bad.status_code == 400 and 'role="alert"' in bad.text
    # Without advanced queries a user's notifications are refused with the API's reason, on the page.
    plain = new_tenant(client)
    add_organization(client, plain, "o1", "d1")
    with signed_in(live, plain) as http:
        refused = http.get(f"/console/explorer/user?key={plain.api_key}&org=o1&user=u1")
        assert refused.status_code == 400 and "advanced queries" in refused.text.lower()
