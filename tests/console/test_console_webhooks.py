"""Console page 4, Webhooks, in a real browser: create an endpoint, see the message an API call caused delivered
with its attempt, retry it, send a test event, reveal the secret, disable and delete; plus what forms refuse."""

import re

import pytest

from support.console_browser import browser, check_a11y, console_page, page, screenshot  # noqa: F401 (fixtures)
from support.console_http import csrf, field_error, signed_in
from support.factories import add_activities, enable_webhooks, messages, secret_of, settle
from support.helpers import enable_activities, new_tenant, result

pytestmark = pytest.mark.usefixtures("live", "embedding_model")  # the model: conftest.py


def _webhook_tenant(client):
    t = new_tenant(client)
    enable_webhooks(client, t)
    enable_activities(client, t)
    return t


def test_endpoint_made_in_the_console_logs_the_delivery_an_api_call_caused_and_retries_it(page, live, client, receiver):
    t = _webhook_tenant(client)
    console_page(page, live, t)
    page.get_by_role("link", name="Webhooks").click()
    page.wait_for_url(re.compile(r"/console/webhooks"))
    assert page.get_by_text("No endpoints yet.").is_visible()
    check_a11y(page)
    screenshot(page, "webhooks-empty")

    page.get_by_label("URL").fill(receiver.url("/hook"))
    page.get_by_label("Description").fill("Ops hook")
    page.get_by_label("Event types").select_option(["comment.add"])
    page.get_by_role("button", name="Create endpoint").click()
    page.wait_for_url(re.compile(r"endpoint=ep_"))
    assert page.get_by_role("status").get_by_text("Endpoint created.").is_visible()
    endpoint_id = re.search(r"endpoint=(ep_[A-Za-z0-9_-]+)", page.url).group(1)
    assert page.get_by_text("No messages yet.").is_visible()

    # An activity added over the API becomes a message the worker delivers; the log shows it with its attempt.
    result(
        add_activities(client, t,
                       {"featureType": "comment", "actionType": "comment.add", "actionUser": {"userId": "u1"}},
                       org="o1", doc="d1"))
    settle(live, t)
    page.reload()
    log = page.get_by_role("table", name="Messages sent to this endpoint, newest first, with every attempt")
    rows = log.locator("tbody tr")
    assert rows.count() == 1
    assert "comment.add" in rows.first.inner_text() and "succeeded" in rows.first.inner_text()
    assert "Attempt 1: HTTP 200" in rows.first.inner_text() and "Response: ok" in rows.first.inner_text()
    check_a11y(page)
    screenshot(page, "webhooks-log")

    # Retry: a second attempt, seen by the receiver and in the log.
    receiver.reply(503)
    rows.first.get_by_role("button", name=re.compile("^Retry message")).click()
    assert page.get_by_role("status").get_by_text("Message queued for redelivery.").is_visible()
    settle(live, t)
    page.reload()
    text = log.locator("tbody tr").first.inner_text()
    assert "Attempt 2: HTTP 503" in text
    assert len(receiver.requests) == 2
    api_log = messages(client, t, endpointId=endpoint_id)["messages"]
    assert [a["statusCode"] for a in api_log[0]["attempts"]] == [200, 503]

    # The secret: revealed once, as the API has it; a test event lands in the log too.
    page.get_by_role("button", name="Reveal secret").click()
    assert page.locator("#secret-value").inner_text() == secret_of(client, t, endpoint_id)
    page.get_by_label("Test event type").select_option("comment.add")
    page.get_by_role("button", name="Send test event").click()
    assert page.get_by_role("status").get_by_text("Test event queued.").is_visible()
    assert "whsec_" not in page.content()  # the secret is not carried over to the next page
    settle(live, t)
    page.reload()
    assert log.locator("tbody tr").count() == 2
    assert receiver.requests[-1].path == "/hook" and b'"test":true' in receiver.requests[-1].body

    # Disable, then delete (after the confirm dialog).
    page.get_by_role("button", name="Disable").click()
    assert page.get_by_role("status").get_by_text("Endpoint disabled.").is_visible()
    assert page.get_by_role("button", name="Enable").is_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete endpoint").click()
    assert page.get_by_role("status").get_by_text("Endpoint deleted.").is_visible()
    assert page.get_by_text("No endpoints yet.").is_visible()


def test_edit_form_shows_errors_next_to_fields_and_keeps_the_endpoint(page, live, client, receiver):
    t = _webhook_tenant(client)
    console_page(page, live, t)
    page.goto(f"/console/webhooks?key={t.api_key}")
    page.get_by_label("URL").fill(receiver.url("/hook"))
    page.get_by_role("button", name="Create endpoint").click()
    page.wait_for_url(re.compile(r"endpoint=ep_"))
    page.get_by_label("URL").fill("ftp://example.com/hook")  # a URL the browser takes and the API refuses
    page.get_by_role("button", name="Save endpoint").click()
    assert page.locator("#error-url").inner_text()
    assert page.get_by_label("URL").get_attribute("aria-invalid") == "true"
    assert page.get_by_label("URL").input_value() == "ftp://example.com/hook"  # what was typed stays
    check_a11y(page)
    screenshot(page, "webhooks-edit-error")
    listed = client.post("/v2/workspace/advancedwebhook/endpoints/get", json={"data": {}}, headers=t.headers)
    assert [e["url"] for e in result(listed)["data"]] == [receiver.url("/hook")]  # unchanged


def test_webhook_forms_refuse_bad_input_other_workspaces_and_missing_csrf(live, client, receiver):
    t = _webhook_tenant(client)
    other = _webhook_tenant(client)
    with signed_in(live, t) as http:
        token = csrf(http, "/console/webhooks")
        # A URL the API refuses: the page again (400), the reason next to the URL field, nothing created.
        bad = http.post("/console/webhooks/create", data={"csrf": token, "key": t.api_key, "url": "ftp://example.com"})
        assert bad.status_code == 400 and field_error(bad.text, "url")
        assert result_endpoints(client, t) == []
        # Without the CSRF token: refused (403), nothing created.
        refused = http.post("/console/webhooks/create", data={"key": t.api_key, "url": receiver.url()})
        assert refused.status_code == 403 and result_endpoints(client, t) == []
        # Another workspace's key, or an endpoint of another workspace: not found, nothing learned or changed.
        assert http.get(f"/console/webhooks?key={other.api_key}").status_code == 404
        created = http.post("/console/webhooks/create", data={"csrf": token, "key": t.api_key, "url": receiver.url()})
        assert created.status_code == 303
        theirs = result(
            client.post("/v2/workspace/advancedwebhook/endpoints/create",
                        json={"data": {"url": receiver.url("/theirs")}}, headers=other.headers))
        assert http.get(f"/console/webhooks?key={t.api_key}&endpoint={theirs['id']}").status_code == 404
        gone = http.post("/console/webhooks/delete", data={"csrf": token, "key": t.api_key, "endpoint": theirs["id"]})
        assert gone.status_code == 404
        assert (http.post("/console/webhooks/delete",
                          data={"csrf": token, "key": other.api_key, "endpoint": theirs["id"]}).status_code == 404)
        assert [e["id"] for e in result_endpoints(client, other)] == [theirs["id"]]
        # A retry of a message that does not exist: a message on the page, not a 500.
        mine = result_endpoints(client, t)[0]["id"]
        missing = http.post("/console/webhooks/retry",
                            data={"csrf": token, "key": t.api_key, "endpoint": mine, "message": "msg_nope"})
        assert missing.status_code == 404 and "Message not found" in missing.text


def test_webhooks_page_says_when_webhooks_are_off(live, client):
    t = new_tenant(client)
    with signed_in(live, t) as http:
        page = http.get(f"/console/webhooks?key={t.api_key}")
        assert page.status_code == 200 and "Advanced webhooks are off for this key" in page.text
        assert f'href="/console/settings?key={t.api_key}"' in page.text


def result_endpoints(client, t):
    listed = client.post("/v2/workspace/advancedwebhook/endpoints/get", json={"data": {}}, headers=t.headers)
    return result(listed)["data"]


def _tab_to(page, selector: str, limit: int = 80) -> None:
    """Press Tab until the element matching `selector` has focus (the keyboard's own order, no clicks)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} never took focus by Tab")


def test_keyboard_only_creates_an_endpoint_and_opens_its_log(page, live, client, receiver):
    t = _webhook_tenant(client)
    console_page(page, live, t)
    page.goto(f"/console/webhooks?key={t.api_key}")
    _tab_to(page, "#f-url")
    page.keyboard.type(receiver.url("/hook"))
    page.keyboard.press("Enter")  # submits the create form
    page.wait_for_url(re.compile(r"endpoint=ep_"))
    _tab_to(page, "button[data-confirm^='Delete']")  # the actions come in reading order
    _tab_to(page, "form[action$='/secret'] button")
    page.keyboard.press("Enter")
    assert page.locator("#secret-value").inner_text().startswith("whsec_")
