"""The console in a real browser (Chromium, headless): the main flow, tenancy, CSRF, keyboard-only use and an
axe-core check of every page C1 renders. Each page's screenshot is saved as an artifact of the run."""

import re

from playwright.sync_api import expect

from support.console_browser import browser, check_a11y, console_page, page, screenshot  # noqa: F401 (fixtures)
from support.helpers import new_tenant, post, result

SIGN_IN = re.compile(r"/console/sign-in$")


def test_sign_in_create_a_key_set_a_provider_key_toggle_advanced_queries_and_sign_out(page, live, client, llm):
    t = new_tenant(client)
    console_page(page, live, t)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    assert t.workspace["id"] in page.content()
    screenshot(page, "console-overview")
    check_a11y(page)

    # API keys: create one; its token is shown once, with a copy button.
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("Console key")
    page.get_by_role("button", name="Create API key").click()
    revealed = page.locator("#revealed-token").input_value()
    assert len(revealed) > 20
    expect(page.get_by_role("button", name="Copy token")).to_be_visible()
    new_key = re.search(r"\?key=([\w-]+)$", page.url).group(1)
    listed = result(post(client, "/v2/workspace/apikeys/get", {}, t.workspace_headers))
    assert {"id": new_key, "apiKeyName": "Console key", "type": "testing"} in listed
    # The new key's token works on the API at once.
    assert result(
        post(client, "/v2/workspace/apikeyconfig/get", {},
             {"x-service-api-key": new_key, "x-service-auth-token": revealed}))
    screenshot(page, "console-api-keys")
    check_a11y(page)
    page.reload()
    assert page.locator("#revealed-token").count() == 0  # shown once

    # Settings of the first key: a provider key (write-only, masked), tested against the fake provider.
    page.goto(f"/console/settings?key={t.api_key}")
    page.get_by_label("OpenAI API key").fill("sk-console-test-1234")
    page.get_by_role("button", name="Save OpenAI key").click()
    expect(page.get_by_text("OpenAI key saved (ending in 1234).")).to_be_visible()
    assert "sk-console-test-1234" not in page.content()
    expect(page.locator("code", has_text="1234").first).to_be_visible()
    page.get_by_role("button", name="Test this OpenAI key").click()
    expect(page.get_by_text("The OpenAI key works")).to_be_visible()
    assert llm.of("openai")[-1]["headers"]["authorization"] == "Bearer sk-console-test-1234"

    # Advanced queries: off, so users/get is refused; toggled on in the console, the API allows it.
    post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1", "organizationName": "O"}]},
         t.headers)
    assert post(client, "/v2/users/get", {"organizationId": "o1"}, t.headers).status_code == 400
    page.get_by_label("Enable advanced queries").check()
    page.get_by_role("button", name="Save advanced queries").click()
    expect(page.get_by_text("Advanced queries enabled.")).to_be_visible()
    assert post(client, "/v2/users/get", {"organizationId": "o1"}, t.headers).status_code == 200
    screenshot(page, "console-settings")
    check_a11y(page)

    # Sign out; the old cookie, replayed, is refused.
    cookie = next(c for c in page.context.cookies() if c["name"] == "collab_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(SIGN_IN)
    page.context.add_cookies([cookie])
    page.goto("/console/keys")
    assert SIGN_IN.search(page.url)
    check_a11y(page)
    screenshot(page, "console-sign-in")


def test_another_workspace_never_sees_this_workspaces_data(page, live, client):
    mine, theirs = new_tenant(client), new_tenant(client)
    console_page(page, live, theirs)
    for path in (f"/console/settings?key={mine.api_key}", f"/console/keys?key={mine.api_key}"):
        response = page.goto(path)
        assert response.status == 404
        assert mine.api_key not in page.content() and mine.workspace["id"] not in page.content()
    page.goto("/console/keys")
    assert mine.api_key not in page.content() and theirs.api_key in page.content()
    check_a11y(page)  # the 404 and keys pages


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(page, live, client):
    t = new_tenant(client)
    console_page(page, live, t)
    response = page.request.post("/console/settings/advanced-queries",
                                 form={"key": t.api_key, "enableAdvancedQueries": "on"})
    assert response.status == 403 and "nothing was changed" in response.text()
    assert result(post(client, "/v2/workspace/apikeyconfig/get", {}, t.headers))["enableAdvancedQueries"] is False


def test_keyboard_only_sign_in_and_navigation(page, live, client):
    t = new_tenant(client)
    page.goto("/console/sign-in")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to main content"
    page.keyboard.press("Enter")  # the skip link moves focus to the main region
    tabs = 0
    while page.evaluate("document.activeElement.id") != "f-workspaceId" and tabs < 10:
        page.keyboard.press("Tab")
        tabs += 1
    page.keyboard.type(t.workspace["id"])
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "f-authToken"
    page.keyboard.type(t.workspace["authToken"])
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/console$"))
    # Every nav item is reached with Tab (in order, after the skip link and the brand) and opened with Enter.
    for label, path in [("API keys", "/console/keys"), ("Settings", "/console/settings"),
                        ("Webhooks", "/console/webhooks"), ("Data", "/console/explorer"), ("AI", "/console/playground"),
                        ("Overview", "/console")]:
        for _ in range(40):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.textContent.trim()") == label:
                break
        else:
            raise AssertionError(f"Tab never reached {label}")
        focus = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert focus != "none"  # visible focus
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(re.escape(path) + r"(\?.*)?$"))
    page.goto("/console/sign-in")  # signed in already: the sign-in page leads to the overview
    assert page.url.endswith("/console")
