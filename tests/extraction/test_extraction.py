"""POST /v2/agents/extract: validation, the pipeline through litellm to fake providers, errors, persistence."""

import base64
import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from collab.testing import fake_models
from support.helpers import error, issue_paths, new_tenant, post, result

EXTRACT = "/v2/agents/extract"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "extraction"
CSV = "text/csv"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def checklist(rows: list[tuple[str, str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Category", "Check"])
    writer.writerows(rows)
    return out.getvalue().encode()


SMALL = checklist([("Claims", "Every price claim states whether tax is included"),
                   ("Claims", "Comparative claims name the compared product"),
                   ("Privacy", "Forms link to the privacy policy"),
                   ("Privacy", "Tracking pixels are disclosed in the cookie banner"), ("Notes", "N/A")])


@pytest.fixture
def model(llm):
    llm.responder = fake_models.answer
    return llm


def tenant_with_key(client, provider="openai"):
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": provider, "customerApiKey": f"sk-{provider}-extract-key"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    return t


def extract(client, t, data: bytes = SMALL, mime: str = CSV, **extra):
    return post(client, EXTRACT, {"fileBase64": b64(data), "mimeType": mime, **extra}, t.headers)


def source_row(db, source_id):
    return db.execute("select * from knowledge_sources where id = %s", (source_id, )).fetchone()


# --- the full path ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider, key_provider", [("openai", "openai"), ("claude", "anthropic"),
                                                    ("gemini", "gemini")])
def test_extracts_agents_through_each_provider(client, model, db, provider, key_provider):
    t = tenant_with_key(client, key_provider)
    data = result(extract(client, t, provider=provider, fileName="marketing.csv"))
    out = data["extractionResult"]
    assert set(out) == {"agents", "summary", "skipped", "totalTasksParsed", "memory"}
    names = sorted(a["name"] for a in out["agents"])
    assert names == ["Claims Review", "Privacy Review"]
    claims = next(a for a in out["agents"] if a["name"] == "Claims Review")
    assert claims["sourceTasks"] == [
        "Every price claim states whether tax is included", "Comparative claims name the compared product"
    ]
    assert set(claims) == {"name", "description", "prompt", "sourceTasks", "userContextFields"}
    assert "{{brand_name}}" in claims["prompt"]
    assert claims["userContextFields"] == [{
        "id": "brand_name", "title": "Brand name", "type": "string", "example": "Acme"
    }]  # the model said "text": the draft says what agents/create takes (issue #51 item 2)
    assert out["skipped"] == [{"originalText": "N/A", "reason": "Not a check."}]
    assert out["totalTasksParsed"] == 5
    assert isinstance(out["summary"], str) and "2 agents" in out["summary"]

    [call] = model.of(key_provider)
    body = call["json"]
    if key_provider == "openai":
        assert call["model"] == "gpt-4o-mini"
        assert body["response_format"]["type"] == "json_schema"
        schema = body["response_format"]["json_schema"]["schema"]
        field = schema["properties"]["agents"]["items"]["properties"]["userContextFields"]["items"]
        assert field["properties"]["type"]["enum"] == ["string", "number", "boolean"]
        assert "[1] (Claims) Every price claim states whether tax is included" in body["messages"][1]["content"]
    elif key_provider == "anthropic":
        assert call["headers"]["x-api-key"] == "sk-anthropic-extract-key"
        assert body["tool_choice"]["name"] == "json_tool_call"
    else:
        assert body["generationConfig"]["response_mime_type"] == "application/json"

    row = source_row(db, out["memory"]["sourceId"])
    assert row["api_key_id"] == t.api_key and row["status"] == "ready"
    assert bytes(row["content"]) == SMALL and row["mime_type"] == CSV and row["file_name"] == "marketing.csv"
    assert "Forms link to the privacy policy" in row["canonical_text"]
    assert [task["text"] for task in row["tasks"]][:2] == claims["sourceTasks"]
    assert row["result"] == out


def test_default_provider_is_used_when_omitted(client, model):
    t = tenant_with_key(client, "openai")
    result(extract(client, t))
    assert len(model.of("openai")) == 1


def test_platform_key_is_used_when_the_workspace_has_none(client, model, live):
    t = new_tenant(client)
    live.svc.settings.gemini_api_key = "platform-gemini-key"
    try:
        result(extract(client, t, provider="gemini"))
    finally:
        live.svc.settings.gemini_api_key = None
    assert model.of("gemini")[0]["headers"]["x-goog-api-key"] == "platform-gemini-key"


def test_missing_provider_key_is_internal(client, model, db):
    t = new_tenant(client)
    err = error(extract(client, t, provider="claude"), "INTERNAL")
    assert "Anthropic" in err["message"]
    assert model.requests == []


@pytest.mark.parametrize("provider", ["mistral", "OPENAI", ""])
def test_unknown_provider_passes_validation_then_internal(client, model, db, provider):
    t = tenant_with_key(client)
    error(extract(client, t, provider=provider), "INTERNAL")
    n = db.execute("select count(*) as n from knowledge_sources where api_key_id = %s", (t.api_key, )).fetchone()["n"]
    assert n == 0 and model.requests == []


def test_cap_at_50_keeps_total(client, model):
    t = tenant_with_key(client)
    rows = [(f"Area {i:02d}", f"Check number {i} of area {i:02d} is satisfied") for i in range(60)]
    out = result(extract(client, t, checklist(rows)))["extractionResult"]
    assert len(out["agents"]) == 50
    assert out["totalTasksParsed"] == 60
    assert "cut at the limit of 50" in out["summary"]


def test_large_checklist_is_chunked_and_merged(client, model, db):
    t = tenant_with_key(client)
    data = (FIXTURES / "large_2000_rows.csv").read_bytes()
    out = result(extract(client, t, data, fileName="large_2000_rows.csv"))["extractionResult"]
    calls = model.of("openai")
    merges = [c for c in calls if "Agents (" in c["json"]["messages"][1]["content"]]
    assert len(calls) - len(merges) > 1 and len(merges) == 1
    assert out["totalTasksParsed"] == 2000
    assert sum(len(a["sourceTasks"]) for a in out["agents"]) + len(out["skipped"]) == 2000
    expected = json.loads((FIXTURES / "large_2000_rows.expected.json").read_text())
    assert expected["agentCount"]["min"] <= len(out["agents"]) <= expected["agentCount"]["max"]
    assert len({a["name"] for a in out["agents"]}) == len(out["agents"])


# --- model failures ----------------------------------------------------------------------------


def test_malformed_answer_is_repaired_once(client, model):
    t = tenant_with_key(client)
    model.script("openai", {"text": "Sure! Here are your agents: agents = [...]"})
    out = result(extract(client, t))["extractionResult"]
    assert len(out["agents"]) == 2
    calls = model.of("openai")
    assert len(calls) == 2
    assert "invalid" in calls[1]["json"]["messages"][-1]["content"]


def test_malformed_twice_is_reported_not_passed_through(client, model, db):
    t = tenant_with_key(client)
    bad = json.dumps({"agents": [{"name": "x"}], "skipped": [], "summary": ""})
    model.script("openai", {"text": bad}, {"text": bad})
    err = error(extract(client, t), "INTERNAL")
    assert "malformed" in err["message"]
    row = db.execute("select status, error from knowledge_sources where api_key_id = %s", (t.api_key, )).fetchone()
    assert row["status"] == "failed" and "malformed" in row["error"]


def test_rate_limit_is_retried(client, model):
    t = tenant_with_key(client)
    model.script("openai", {"status": 429}, {"status": 503})
    result(extract(client, t))
    assert len(model.of("openai")) == 3


def test_provider_down_is_internal(client, model):
    t = tenant_with_key(client)
    model.script("openai", *[{"status": 500}] * 3)
    err = error(extract(client, t), "INTERNAL")
    assert "unavailable" in err["message"].lower()


def test_job_over_budget_is_deadline_exceeded(client, model, live, db):
    t = tenant_with_key(client)
    model.script("openai", {"hang": True})
    live.svc.settings.extraction_timeout_s = 2.0
    try:
        error(extract(client, t), "DEADLINE_EXCEEDED")
    finally:
        live.svc.settings.extraction_timeout_s = 120.0
    row = db.execute("select status from knowledge_sources where api_key_id = %s", (t.api_key, )).fetchone()
    assert row["status"] == "failed"


def test_redis_down_is_unavailable_and_nothing_written(client, model, live, db, tmp_path):
    from collab.kit.redisclient import redis_client

    t = tenant_with_key(client)
    original = live.svc.redis
    live.svc.redis = redis_client(f"unix://{tmp_path}/none.sock")
    try:
        error(extract(client, t), "UNAVAILABLE")
    finally:
        live.svc.redis = original
    n = db.execute("select count(*) as n from knowledge_sources where api_key_id = %s", (t.api_key, )).fetchone()["n"]
    assert n == 0


# --- validation and hostile files --------------------------------------------------------------


@pytest.mark.parametrize("data, paths",
                         [({}, [["fileBase64"], ["mimeType"]]),
                          ({"fileBase64": "", "mimeType": ""}, [["fileBase64"], ["mimeType"]]),
                          ({"fileBase64": "   \n ", "mimeType": CSV}, [["fileBase64"]]),
                          ({"fileBase64": "###not base64###", "mimeType": CSV}, [["fileBase64"]]),
                          ({"fileBase64": b64(b"a,b"), "mimeType": "image/png"}, [["mimeType"]]),
                          ({"fileBase64": b64(b"a,b"), "mimeType": "application/msword"}, [["mimeType"]]),
                          ({"fileBase64": 12, "mimeType": ["text/csv"]}, [["fileBase64"], ["mimeType"]]),
                          ({"fileBase64": b64(b"a,b"), "mimeType": CSV, "fileName": 5}, [["fileName"]])])
def test_validation(client, model, data, paths):
    t = tenant_with_key(client)
    err = error(post(client, EXTRACT, data, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == paths
    assert model.requests == []


def test_decoded_size_limit(client, model):
    t = tenant_with_key(client)
    err = error(extract(client, t, b"a" * (5 * 1024 * 1024 + 1)), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["fileBase64"]] and "5 MB" in err["message"]
    # An over-long string is refused on its length, before any decoding.
    err = error(extract(client, t, b"a" * (5 * 1024 * 1024 + 300_000)), "INVALID_ARGUMENT")
    assert err["details"]["issues"][0]["code"] == "too_big"


def test_six_megabyte_file_is_refused(client, model):
    t = tenant_with_key(client)
    response = extract(client, t, b"x" * (6 * 1024 * 1024))
    assert response.status_code in (400, 413)
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_mime_type_parameters_are_accepted(client, model):
    t = tenant_with_key(client)
    result(extract(client, t, mime="Text/CSV; charset=utf-8"))


def test_zip_bomb_xlsx_is_invalid_argument(client, model):
    t = tenant_with_key(client)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("xl/worksheets/sheet1.xml", "w") as member:
            chunk = b"\0" * (1024 * 1024)
            for _ in range(150):
                member.write(chunk)
    err = error(extract(client, t, buffer.getvalue(), XLSX), "INVALID_ARGUMENT")
    assert model.requests == []
    assert err["message"]


def test_binary_garbage_as_text_is_internal(client, model):
    import random

    t = tenant_with_key(client)
    err = error(extract(client, t, random.Random(1).randbytes(20_000), "text/plain"), "INTERNAL")
    assert model.requests == [] and err["message"]


# --- the fixtures, end to end ------------------------------------------------------------------


@pytest.mark.parametrize("expected_file", sorted(FIXTURES.glob("*.expected.json")), ids=lambda p: p.name.split(".")[0])
def test_fixture_covers_and_skips_as_expected(client, model, expected_file):
    expected = json.loads(expected_file.read_text())
    t = tenant_with_key(client)
    data = (FIXTURES / expected["file"]).read_bytes()
    out = result(extract(client, t, data, expected["mimeType"], fileName=expected["file"]))["extractionResult"]
    covered = {" ".join(s.split()) for a in out["agents"] for s in a["sourceTasks"]}
    for text in expected["mustCover"]:
        assert " ".join(text.split()) in covered, text
    skipped = [" ".join(s["originalText"].split()) for s in out["skipped"]]
    for text in expected["mustSkip"]:
        assert " ".join(text.split()) in skipped, text
    assert out["totalTasksParsed"] >= expected["totalTasks"]
