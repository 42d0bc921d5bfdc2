"""Console page 6, AI playgrounds, in a real browser: a judgment search (seeded over the API) with similarity and
the path it took, an extraction against the fake provider, Ask AI; plus uploads and input the forms refuse."""

import csv
import io
import re

import pytest

from collab.extraction.schemas import MAX_FILE_BYTES
from collab.testing import fake_models
from support.console_browser import browser, check_a11y, console_page, page, screenshot  # noqa: F401 (fixtures)
from support.console_http import csrf, field_error, signed_in
from support.factories import add_activities, judged
from support.helpers import enable_activities, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("live", "embedding_model")  # the model: conftest.py
CHECKLIST = [("Claims", "Every price claim states whether tax is included"),
             ("Claims", "Comparative claims name the compared product"),
             ("Privacy", "Forms link to the privacy policy"),
             ("Privacy", "Tracking pixels are disclosed in the cookie banner"), ("Notes", "N/A")]


def _checklist() -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Category", "Check"])
    writer.writerows(CHECKLIST)
    return out.getvalue().encode()


def _ai_tenant(client):
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-console-key"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    return t


def test_search_shows_similarity_and_the_path_taken(page, live, client):
    t = new_tenant(client)
    enable_activities(client, t)
    result(
        add_activities(client, t,
                       judged("price", "The discount claim needs the original price shown next to the sale price."),
                       judged("alt", "Images are missing alternative text for screen readers.", target="ann2")))
    settle_jobs(live, t)
    console_page(page, live, t)
    page.get_by_role("link", name="AI", exact=True).click()
    page.wait_for_url(re.compile(r"/console/playground"))
    check_a11y(page)
    page.get_by_label("Query").fill("pictures lack descriptions for blind users")
    page.get_by_label("Results").fill("1")
    page.get_by_role("button", name="Search").click()
    table = page.get_by_role("table", name="Judgments found, best first")
    row = table.locator("tbody tr")
    assert row.count() == 1 and "alt" in row.inner_text() and "rejected" in row.inner_text()
    similarity = float(row.locator("td").first.inner_text())
    assert 0 < similarity <= 1
    assert page.locator("#search-summary .path").inner_text() == "vector"
    check_a11y(page)
    screenshot(page, "playground-search")

    # The annotation shortcut: the thread of ann2, similarity 1.0, path "annotation".
    page.get_by_label("Annotation id").fill("ann2")
    page.get_by_label("Organization id").fill("org1")
    page.get_by_role("button", name="Search").click()
    assert page.locator("#search-summary .path").inner_text() == "annotation"
    assert table.locator("tbody tr td").first.inner_text() == "1.000"

    # A search the API refuses: the reason next to the field that caused it.
    page.get_by_label("Annotation id").fill("")
    page.get_by_label("Organization id").fill("")
    page.get_by_label("Scope", exact=True).select_option("organization")
    page.get_by_role("button", name="Search").click()
    assert "Required" in page.locator("#error-organizationId").inner_text()
    assert page.get_by_label("Organization id").get_attribute("aria-invalid") == "true"


def test_extraction_against_the_fake_provider_and_ask_ai(page, live, client, llm):
    rewrite = llm.responder  # the fakes' default: "rewritten: <text>"
    llm.responder = fake_models.answer  # the stand-in extraction model
    t = _ai_tenant(client)
    console_page(page, live, t)
    page.goto(f"/console/playground/extraction?key={t.api_key}")
    check_a11y(page)
    page.get_by_label("Checklist file").set_input_files(
        files=[{"name": "marketing.csv", "mimeType": "text/csv", "buffer": _checklist()}])
    page.get_by_label("Provider").select_option("openai")
    page.get_by_role("button", name="Extract agents").click()
    assert page.locator("#total-tasks").inner_text() == "5"
    agents = page.get_by_role("table", name="Draft agents").get_by_role("rowheader").all_inner_texts()
    assert sorted(agents) == ["Claims Review", "Privacy Review"]
    skipped = page.get_by_role("table", name="Skipped tasks").inner_text()
    assert "N/A" in skipped and "Not a check." in skipped
    source_id = page.locator("#source-id").inner_text()
    assert source_id.startswith("src_")
    assert [call["provider"] for call in llm.requests] == ["openai"]
    check_a11y(page)
    screenshot(page, "playground-extraction")

    llm.responder = rewrite
    page.get_by_role("link", name="Ask AI").click()
    page.get_by_label("Model").fill("gpt-4o")
    page.get_by_label("Prompt").fill("Make it formal.")
    page.get_by_label("Text").fill("hey, ship it")
    page.get_by_role("button", name="Ask").click()
    assert page.locator("#answer-text").inner_text() == "rewritten: hey, ship it"
    check_a11y(page)
    screenshot(page, "playground-ask")


@pytest.mark.parametrize("upload, expected",
                         [(None, "Choose a file to upload."),
                          (("notes.exe", b"MZ\x90\x00", "application/octet-stream"), "not a supported file type"),
                          (("big.csv", b"a,b\n" * (MAX_FILE_BYTES // 4 + 1), "text/csv"), "over 5 MB"),
                          (("empty.csv", b"", "text/csv"), "The file is empty.")])
def test_extraction_upload_errors_show_next_to_the_file_field(live, client, llm, upload, expected):
    t = _ai_tenant(client)
    with signed_in(live, t) as http:
        token = csrf(http, f"/console/playground/extraction?key={t.api_key}")
        files = {"file": upload} if upload else {"file": ("", b"", "application/octet-stream")}
        response = http.post("/console/playground/extraction", data={"csrf": token, "key": t.api_key}, files=files)
        assert response.status_code == 400
        assert expected in field_error(response.text, "file")
    assert llm.requests == []


def test_playground_refuses_missing_csrf_other_workspaces_and_bad_ask_input(live, client, llm):
    t, other = _ai_tenant(client), _ai_tenant(client)
    with signed_in(live, t) as http:
        files = {"file": ("c.csv", _checklist(), "text/csv")}
        refused = http.post("/console/playground/extraction", data={"key": t.api_key}, files=files)
        assert refused.status_code == 403
        token = csrf(http, f"/console/playground/ask?key={t.api_key}")
        foreign = http.post("/console/playground/ask",
                            data={"csrf": token, "key": other.api_key, "model": "gpt-4o", "prompt": "p", "text": "t"})
        assert foreign.status_code == 404
        unknown = http.post("/console/playground/ask",
                            data={"csrf": token, "key": t.api_key, "model": "llama-3", "prompt": "p", "text": "t"})
        assert unknown.status_code == 400 and field_error(unknown.text, "model")
        blank = http.post("/console/playground/ask",
                          data={"csrf": token, "key": t.api_key, "model": "gpt-4o", "prompt": "p", "text": " "})
        assert blank.status_code == 400 and field_error(blank.text, "text")
        assert http.get(f"/console/playground?key={other.api_key}").status_code == 404
    assert llm.requests == []
