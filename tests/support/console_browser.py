"""Driving the console in a real browser: Playwright over Debian's Chromium (headless), screenshots, axe-core.

Playwright's sync API runs in the test thread; the `live` app serves from its own loop thread, so they never share
an asyncio loop. Import the fixtures `browser` (one Chromium per test module) and `page` (a fresh context per test)
into the test module: `from support.console_browser import browser, page  # noqa: F401 (fixtures)`.
"""

import os
import re
import tempfile
from pathlib import Path

import pytest

from support import clients

ARTIFACTS = Path(os.environ.get("COLLAB_ARTIFACTS_DIR") or Path(tempfile.gettempdir()) / "console-screenshots")
# axe impacts that fail a page (minor and moderate ones are reported in the failure message only when serious
# ones exist too).
FAILING = {"serious", "critical"}


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (skipped, or failed under COLLAB_REQUIRE_CLIENTS=1, when missing)."""
    executable = clients.chromium()
    from playwright.sync_api import sync_playwright

    # Module scope, not session: while a sync Playwright driver runs, the test thread counts as running an asyncio
    # loop, and every later test that calls asyncio.run() would fail.
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=executable, headless=True,
                                          args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live):
    """A fresh browser context (no cookies) at a laptop's viewport, its base URL the live app."""
    context = browser.new_context(base_url=live.url, viewport={"width": 1366, "height": 900})
    context.set_default_timeout(15_000)
    opened = context.new_page()
    yield opened
    context.close()


def sign_in(page, tenant) -> None:
    """Sign `page` in to the console with the tenant's workspace id and workspace auth token."""
    page.goto("/console/sign-in")
    page.get_by_label("Workspace id").fill(tenant.workspace["id"])
    page.get_by_label("Workspace auth token").fill(tenant.workspace["authToken"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/console$"))


def console_page(page, live, tenant):
    """`page`, signed in to the console as the tenant's workspace owner, on the Overview."""
    sign_in(page, tenant)
    return page


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as an artifact of the run (never committed); its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def axe_violations(page) -> list[dict]:
    """axe-core's violations on the page as it is now (WCAG 2 A and AA rules and best practices)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated through the DevTools protocol: the console's CSP (no inline script) stays on and is not bent.
        page.evaluate("source => (0, eval)(source)", clients.axe_script())
    return page.evaluate(
        "async () => (await axe.run(document, {runOnly: {type: 'tag', values: "
        "['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target.join(' '))}))")


def check_a11y(page) -> None:
    """Fail on any serious or critical axe-core violation of the page as it is now."""
    violations = axe_violations(page)
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, ("accessibility violations on " + page.url + ":\n" +
                         "\n".join(f"- {v['impact']} {v['id']}: {v['help']} at {v['nodes'][:5]}" for v in failing))
