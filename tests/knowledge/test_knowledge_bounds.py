"""What one tenant's knowledge may cost the others (docs/adr/0057, "Bounds"): hostile markdown neither stalls the
worker nor another tenant's calls, a signed upload URL stores one bounded upload, a workspace's ingests leave the
extraction lane to other workspaces, and downloads are never rendered on the service's origin."""

import base64
import json
import threading
import time

import httpx
import pytest

from collab.knowledge import pipeline
from support.factories import release, wait_for
from support.helpers import error, new_tenant, post, result

pytestmark = pytest.mark.usefixtures("embedding_model")
K = "/v2/memory/knowledge"
GUIDE = b"""# Brand Guidelines

## Claims
- Medical claims must cite a peer-reviewed source.
- Never promise a cure.
"""
PROSE = b"Our audience is enterprise buyers in regulated industries. They read long documents carefully."
# The review's file: a heading whose text is followed by a long run of spaces (cubic for a lazy heading pattern)
# and a heading of a long run of `#`s (quadratic), kept whole because a prose file is its own raw text.
HOSTILE = (b"# a" + b" " * 2400 + b"x\n\n# " + b"#" * 20_000 + b"x\n\nThe company was founded in 1999.\n")


@pytest.fixture(autouse=True)
def served_here(tune, live):
    """The signed URLs point at the test's service."""
    tune(public_url=live.url)


def res(response: httpx.Response):
    assert response.status_code == 200, response.text
    return response.json()["result"]


def call(client, t, op: str, **data):
    return post(client, f"{K}/{op}", data, t.headers)


def inline(data: bytes, name: str = "guide.md", mime: str = "text/markdown") -> dict:
    return {
        "source": "inline",
        "file": {"base64": base64.b64encode(data).decode(), "mimeType": mime, "fileName": name, "fileSize": len(data)}
    }


def status(client, t, source: str) -> str:
    return res(call(client, t, "ingest-status", sourceId=source))["status"]


def test_matching_a_line_is_linear_in_its_length():
    lines = [
        "# a" + " " * 100_000 + "x",  # cubic for the old heading pattern
        "# " + "#" * 100_000 + "x",  # quadratic for it
        "- " + " " * 100_000,
        "1." + " " * 100_000 + "must",
        " " * 3 + "#" * 6 + " " * 100_000,
    ]
    started = time.thread_time()  # this thread's CPU: other processes' load does not count
    for line in lines:
        pipeline.candidates(line + "\n- Never promise a cure.\n- Always cite.\n")
        pipeline.heading(line)
    paragraph = ("word " * 400_000).strip()  # one 2 MB paragraph, cut into passages
    passages = pipeline.chunks(paragraph, max_chars=1500, max_chunks=2000)
    assert time.thread_time() - started < 5  # linear: milliseconds each; the old pattern took hours on the first
    assert len(passages) == 1334 and all(len(p) <= 1500 for p in passages)
    assert pipeline.heading("## Claims ##") == "Claims" and pipeline.heading("# C#") == "C"
    assert pipeline.heading("#") == "" and pipeline.heading("#hashtag") is None
    found, items = pipeline.candidates("# Rules\n- Never promise a cure. ##\n#\n- Always cite.\n")
    assert [(c.text, c.category) for c in found] == [("Never promise a cure. ##", "Rules"), ("Always cite.", None)]
    assert items == 2


def test_a_hostile_heading_stalls_neither_the_worker_nor_another_tenant(client, live):
    a, b = new_tenant(client), new_tenant(client)
    source = res(post(client, f"{K}/ingest", inline(HOSTILE, name="hostile.md"), a.headers))["sourceId"]
    slowest = 0.0
    deadline = time.monotonic() + 60
    while status(client, a, source) == "processing":
        assert time.monotonic() < deadline, "the ingest did not finish within a minute"
        started = time.monotonic()
        assert res(call(client, b, "list")) == []  # another tenant's read, while A's file is being read
        slowest = max(slowest, time.monotonic() - started)
    assert slowest < 3  # a stalled loop held such reads for the whole ingest (tens of seconds)
    done = res(call(client, a, "ingest-status", sourceId=source))
    assert done["status"] == "completed" and done["chunkCount"] >= 1
    assert "founded in 1999" in res(call(client, a, "download", sourceId=source))


def test_an_update_reads_its_content_off_the_loop(client, live):
    t = new_tenant(client)
    source = res(post(client, f"{K}/ingest", inline(GUIDE), t.headers))["sourceId"]
    wait_for(lambda: status(client, t, source) != "processing", "the ingest")
    content = "# a" + " " * 3000 + "x\n\n- Never promise a cure.\n- Prices must include tax.\n"
    started = time.monotonic()
    updated = res(call(client, t, "update", sourceId=source, newContent=content))
    assert time.monotonic() - started < 10
    assert updated["diff"]["added"] == ["Prices must include tax."] and updated["newVersion"] == 2


# Finding 5: the signed upload URL.


def slot(client, t, size: int, mime: str = "text/plain", **more) -> dict:
    return res(call(client, t, "upload-url", mimeType=mime, fileSize=size, **more))


def put(url: str, content, mime: str = "text/plain", **headers) -> httpx.Response:
    return httpx.put(url, content=content, headers={"Content-Type": mime, **headers}, timeout=30)


def envelope(response: httpx.Response, code: str, status_code: int) -> dict:
    assert response.status_code == status_code, response.text
    body = response.json()["error"]
    assert body["status"] == code
    return body


def test_an_upload_url_stores_one_upload(client, live, db):
    t = new_tenant(client)
    up = slot(client, t, len(PROSE))
    assert put(up["uploadUrl"], PROSE).status_code == 200
    again = envelope(put(up["uploadUrl"], b"other bytes"), "ALREADY_EXISTS", 409)
    assert again["message"] == ("This upload URL has stored its file already; an upload URL takes one upload "
                                "(request another).")
    upload_id = up["fileRef"].rsplit("/", 1)[-1]
    row = db.execute("select content from knowledge_uploads where id = %s", (upload_id, )).fetchone()
    assert bytes(row["content"]) == PROSE
    source = res(call(client, t, "ingest", source="fileRef", fileRef=up["fileRef"], mimeType="text/plain"))["sourceId"]
    wait_for(lambda: status(client, t, source) != "processing", "the ingest")
    assert "regulated industries" in res(call(client, t, "download", sourceId=source))


def test_an_upload_must_declare_its_length_within_the_file_size(client, live):
    t = new_tenant(client)
    up = slot(client, t, 10)

    def chunked():
        yield b"hello"

    missing = envelope(put(up["uploadUrl"], chunked()), "INVALID_ARGUMENT", 411)
    assert "Content-Length" in missing["message"]
    over = envelope(put(up["uploadUrl"], b"x" * 3_000_000), "INVALID_ARGUMENT", 413)
    assert over["message"] == ("The upload is 3000000 bytes, over the fileSize of 10 bytes this upload URL was "
                               "minted for.")
    # Refused before anything was stored: the URL still takes its one upload.
    assert put(up["uploadUrl"], b"0123456789").status_code == 200


def test_puts_count_against_a_rate_per_key(client, live, tune):
    tune(rate_limit_knowledge_upload="2/minute")
    t, other = new_tenant(client), new_tenant(client)
    ups = [slot(client, t, len(PROSE)) for _ in range(3)]
    assert [put(u["uploadUrl"], PROSE).status_code for u in ups[:2]] == [200, 200]
    limited = put(ups[2]["uploadUrl"], PROSE)
    envelope(limited, "RESOURCE_EXHAUSTED", 429)
    assert int(limited.headers["retry-after"]) >= 1
    assert put(slot(client, other, len(PROSE))["uploadUrl"], PROSE).status_code == 200  # another key is not held


def test_a_key_s_stored_file_bytes_have_a_quota(client, live, tune):
    t = new_tenant(client)
    tune(knowledge_max_key_bytes=len(PROSE) + len(GUIDE) - 1)
    up = slot(client, t, len(PROSE))
    assert put(up["uploadUrl"], PROSE).status_code == 200
    full = "This API key's knowledge holds the most file bytes allowed; delete some sources."
    assert error(call(client, t, "upload-url", mimeType="text/plain", fileSize=len(GUIDE)),
                 "RESOURCE_EXHAUSTED")["message"] == full
    assert error(post(client, f"{K}/ingest", inline(GUIDE), t.headers), "RESOURCE_EXHAUSTED")["message"] == full
    small = slot(client, t, 5)
    tune(knowledge_max_key_bytes=len(PROSE) + 4)
    assert envelope(put(small["uploadUrl"], b"12345"), "RESOURCE_EXHAUSTED", 429)["message"] == full
    res(post(client, f"{K}/ingest", inline(b"A short note.\n", name="n.md"), new_tenant(client).headers))  # another key


class Held:
    """A PUT whose body stops after its first bytes until released (an upload in flight)."""

    def __init__(self, url: str, size: int):
        self.gate = threading.Event()
        self.started = threading.Event()
        self.response: httpx.Response | None = None

        def body():
            yield b"x"
            self.started.set()
            self.gate.wait(30)
            yield b"x" * (size - 1)

        def send():
            self.response = put(url, body(), **{"Content-Length": str(size)})

        self.thread = threading.Thread(target=send, daemon=True)
        self.thread.start()
        assert self.started.wait(10)

    def finish(self) -> httpx.Response:
        self.gate.set()
        self.thread.join(30)
        assert self.response is not None
        return self.response


def test_uploads_in_flight_are_capped_per_process_and_per_key(client, live, tune):
    a, b = new_tenant(client), new_tenant(client)
    tune(knowledge_uploads_in_flight=1)
    first = slot(client, a, 100)
    held = Held(first["uploadUrl"], 100)
    wait_for(lambda: put(slot(client, b, 5)["uploadUrl"], b"12345").status_code == 429, "the process's cap")
    assert held.finish().status_code == 200
    assert put(slot(client, b, 5)["uploadUrl"], b"12345").status_code == 200

    tune(knowledge_uploads_in_flight=10, knowledge_uploads_in_flight_per_key=1)
    held = Held(slot(client, a, 100)["uploadUrl"], 100)
    wait_for(lambda: put(slot(client, a, 5)["uploadUrl"], b"12345").status_code == 429, "the key's cap")
    assert put(slot(client, b, 5)["uploadUrl"], b"12345").status_code == 200  # another key is not held back
    assert held.finish().status_code == 200


# Finding 15: downloads.


def test_downloads_are_attachments_that_are_never_rendered(client, live):
    t = new_tenant(client)
    up = slot(client, t, len(PROSE))  # minted without a fileName
    assert put(up["uploadUrl"], PROSE).status_code == 200
    source = res(call(client, t, "ingest", source="fileRef", fileRef=up["fileRef"], mimeType="text/plain"))["sourceId"]
    wait_for(lambda: status(client, t, source) != "processing", "the ingest")
    done = res(call(client, t, "ingest-status", sourceId=source))
    original, canonical = httpx.get(done["originalDownloadUrl"]), httpx.get(done["canonicalMdDownloadUrl"])
    refused = httpx.get(live.url + "/knowledge/files/x.y")
    assert (original.status_code, canonical.status_code, refused.status_code) == (200, 200, 403)
    assert original.content == PROSE
    assert original.headers["content-disposition"] == "attachment; filename*=UTF-8''knowledge-source.txt"
    assert canonical.headers["content-disposition"] == "attachment; filename*=UTF-8''knowledge-source.md"
    assert refused.headers["content-disposition"] == "attachment"
    assert refused.json()["error"]["status"] == "PERMISSION_DENIED"
    for answer in (original, canonical, refused):
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["content-security-policy"] == "sandbox"


# Finding 6: the extraction lane.


def test_a_workspace_s_ingests_leave_the_extraction_lane_to_other_workspaces(client, live, llm, tune):
    from collab.testing import fake_models

    rules = json.dumps({"rules": [{"content": "Never promise a cure.", "category": "Claims"}]})
    llm.responder = lambda provider, body: rules if provider == "openai" else fake_models.answer(provider, body)
    tune(llm_call_timeout_s=60)  # A's model calls hang until released, holding whatever slot their ingest has
    a, b = new_tenant(client), new_tenant(client)
    for t, provider, key in ((a, "openai", "sk-openai-a"), (b, "anthropic", "sk-anthropic-b")):
        body = {"aiModelApiKey": [{"provider": provider, "customerApiKey": key}]}
        result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    lane = live.svc.settings.worker_extraction_max_jobs
    llm.script("openai", *[{"hang": True}] * lane)
    sources = [
        res(post(client, f"{K}/ingest", inline(GUIDE, name=f"guide-{n}.md"), a.headers))["sourceId"]
        for n in range(lane + 2)
    ]
    per_workspace = live.svc.settings.extraction_max_concurrency_per_workspace
    wait_for(lambda: len(llm.of("openai")) >= per_workspace, "A's first ingests to call the model")
    try:
        csv = b"Category,Check\nClaims,Every price claim states whether tax is included\n"
        started = time.monotonic()
        extracted = result(
            post(client, "/v2/agents/extract",
                 {"fileBase64": base64.b64encode(csv).decode(), "mimeType": "text/csv", "provider": "claude"},
                 b.headers))
        took = time.monotonic() - started
        assert extracted["extractionResult"]["agents"]
        assert took < 15  # behind A's ingests it waited for their model calls (a minute)
        assert len(llm.of("openai")) == per_workspace  # the rest of A's ingests wait, off the lane
    finally:
        wait_for(lambda: (release(llm), all(status(client, a, s) != "processing" for s in sources))[1], "A's ingests",
                 limit_s=90)
    # Each waited without spending a try: all completed.
    assert [status(client, a, s) for s in sources] == ["completed"] * len(sources)
