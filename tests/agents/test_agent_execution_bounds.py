"""What one tenant's agent executions may cost everyone else (ADR 0055, Bounds): a hostile page is read in linear,
bounded time off the event loop, any charset reads as text, executions share their workspace's AI slots and cap,
userContext is bounded and counted in the content budget, and a key keeps a bounded number of executions."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from collab.agents.runner import MAX_CONTENT_CHARS, html_text, page_text
from collab.llm.fake import last_user_text
from support.factories import agent_body, create_agent, wait_for
from support.helpers import add_organization, error, issue_paths, new_tenant, post, result, settle_jobs

FINDINGS_NONE = '{"summary": "No issues.", "findings": []}'


@pytest.fixture
def site():
    """A page server on 127.0.0.1 whose body and content type a test sets (`site.body`, `site.content_type`)."""

    class Handler(BaseHTTPRequestHandler):

        def do_GET(self):
            body = server.body  # type: ignore[attr-defined]
            self.send_response(200)
            self.send_header("content-type", server.content_type)  # type: ignore[attr-defined]
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.body, server.content_type = b"<html><p>hello</p></html>", "text/html"  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/page"  # type: ignore[attr-defined]
    yield server
    server.shutdown()
    server.server_close()


def tenant(client, *providers, documents=("doc", )):
    t = new_tenant(client)
    keys = {"openai": "sk-openai-bounds", "anthropic": "sk-ant-bounds"}
    entries = [{"provider": p, "customerApiKey": keys[p]} for p in providers]
    result(post(client, "/v2/workspace/apikeyconfig/update", {"aiModelApiKey": entries}, t.headers))
    add_organization(client, t, "org", *documents)
    return t


def start(client, t, agent_id, url, document="doc", **more):
    data = {"agentId": agent_id, "url": url, "organizationId": "org", "documentId": document, **more}
    return post(client, "/v2/agents/execution/run", data, t.headers)


def execution(client, t, execution_id):
    return result(post(client, "/v2/agents/execution/get", {"executionId": execution_id}, t.headers))["execution"]


def settle_all(live, db, t):
    """Settle the tenant's jobs until none is left (an execution waiting for a slot queues a job of its own)."""
    for _ in range(100):
        settle_jobs(live, t)
        row = db.execute("select count(*) as n from jobs where api_key_id = %s and status in ('queued', 'running')",
                         (t.api_key, )).fetchone()
        if row["n"] == 0:
            return
    raise AssertionError("the tenant's jobs never settled")


def ask_ai(client, t, model="claude-sonnet-4-0"):
    return post(client, "/v2/rewriter/ask-ai", {"model": model, "prompt": "Make it formal.", "text": "hey"}, t.headers)


# --- finding 2: HTML to text is linear, bounded and off the loop ---------------------------------------------------


def test_html_to_text_is_linear_on_unterminated_tags():
    for markup in ("<a" * 500_000, "<a b='" * 200_000, "<!--" * 250_000, "<script>" * 125_000, "< " * 500_000):
        started = time.process_time()
        html_text(markup)
        assert time.process_time() - started < 1.0, markup[:10]
    assert html_text('<p title="a>b">x &amp; y</p><SCRIPT>if (a<b) go()</SCRIPT>z < 3<a') == "x & y\nz < 3"


def test_a_page_of_two_mebibytes_of_unterminated_tags_ends_promptly_and_stalls_nobody(client, llm, live, site):
    a = tenant(client, "openai")
    b = tenant(client, "anthropic")
    agent_id = create_agent(client, a, instructions="Check the page.",
                            contextGathering={"strategies": ["web-page-text"]})
    site.body = b"<html>" + b"<a" * (1024 * 1024 - 3)
    llm.responder = lambda provider, body: FINDINGS_NONE
    started = time.monotonic()
    execution_id = result(start(client, a, agent_id, site.url))["executionId"]
    asked = time.monotonic()
    answer = ask_ai(client, b)  # another tenant, while A's page is read
    assert answer.status_code == 200 and time.monotonic() - asked < 5, answer.text
    settle_jobs(live, a)
    done = execution(client, a, execution_id)
    assert done["status"] == "passed" and time.monotonic() - started < 30
    assert "Page text" in last_user_text("openai", llm.of("openai")[0]["json"])


def test_only_the_first_bytes_of_a_page_are_read(client, llm, live, site, tune):
    t = tenant(client, "openai")
    tune(agent_execution_page_parse_max_bytes=4096)
    agent_id = create_agent(client, t, instructions="Check.", contextGathering={"strategies": ["web-page-text"]})
    site.body = b"<html><p>" + b"early words " * 400 + b"</p>" + b"<p>late words</p>" * 2000 + b"</html>"
    llm.responder = lambda provider, body: FINDINGS_NONE
    execution_id = result(start(client, t, agent_id, site.url))["executionId"]
    settle_jobs(live, t)
    assert execution(client, t, execution_id)["status"] == "passed"
    user = last_user_text("openai", llm.of("openai")[0]["json"])
    assert "early words" in user and "late words" not in user


# --- finding 13: a page's charset is used only when it names a text encoding ---------------------------------------


@pytest.mark.parametrize("charset", ["rot13", "base64", "hex", "zlib_codec", "no-such-charset"])
def test_a_page_with_a_charset_that_is_no_text_encoding_reads_as_utf8(client, llm, live, site, charset):
    t = tenant(client, "openai")
    agent_id = create_agent(client, t, instructions="Check.", contextGathering={"strategies": ["web-page-text"]})
    site.body, site.content_type = "<html><p>Prix: 10 €</p></html>".encode(), f"text/html; charset={charset}"
    llm.responder = lambda provider, body: FINDINGS_NONE
    execution_id = result(start(client, t, agent_id, site.url))["executionId"]
    settle_jobs(live, t)
    done = execution(client, t, execution_id)
    assert done["status"] == "passed", done.get("error")
    assert "Prix: 10 €" in last_user_text("openai", llm.of("openai")[0]["json"])


def test_page_text_never_fails_on_a_text_codec_without_replace():
    assert page_text("<p>é</p>".encode(), charset="idna", content_type="text/html", max_bytes=100) == "é"
    assert page_text(b"plain\x00 text", charset="latin-1", content_type="text/plain", max_bytes=100) == "plain text"


# --- finding 3: executions share their workspace's AI slots and cap ------------------------------------------------


def test_executions_hold_their_workspace_ai_slots_and_a_capped_few_of_the_lane(client, llm, live, db, tune):
    documents = tuple(f"doc{n}" for n in range(10))
    a = tenant(client, "openai", "anthropic", documents=documents)
    b = tenant(client, "anthropic")
    agent_id = create_agent(client, a, instructions="Check.", contextGathering={"strategies": ["none"]})
    tune(llm_call_timeout_s=60, ai_max_concurrency=2)
    llm.responder = lambda provider, body: FINDINGS_NONE
    llm.hold("sk-openai-bounds")  # A's model calls take as long as the test
    try:
        answers = [start(client, a, agent_id, "https://example.com/", document=d) for d in documents]
        started = [r.json()["result"]["data"]["executionId"] for r in answers if r.status_code == 200]
        assert len(started) == 3  # the workspace's cap (COLLAB_AGENT_EXECUTIONS_MAX_RUNNING)
        for refused in answers[3:]:
            assert "executions running" in error(refused, "RESOURCE_EXHAUSTED")["message"]
        wait_for(lambda: llm.held >= 2, "two of A's model calls held")

        asked = time.monotonic()
        answer = ask_ai(client, b)  # another workspace: its AI answers while A's calls hang
        assert answer.status_code == 200 and time.monotonic() - asked < 5, answer.text
        # A's two running calls hold both of A's AI slots: its own Ask AI is refused, it waits for none of the lane.
        assert "in flight" in error(ask_ai(client, a), "RESOURCE_EXHAUSTED")["message"]
        assert len(llm.of("openai")) == 2  # the third execution waits for a slot, off the lane
        assert [execution(client, a, x)["status"] for x in started] == ["running"] * 3
    finally:
        llm.release_held()
    settle_all(live, db, a)
    assert [execution(client, a, x)["status"] for x in started] == ["passed"] * 3
    tries = db.execute(
        "select args->>'execution_id' as execution, count(*) as jobs, bool_and(status = 'succeeded') as ok "
        "from jobs where api_key_id = %s and function = 'run_agent_execution' group by 1", (a.api_key, )).fetchall()
    assert all(row["ok"] for row in tries) and max(row["jobs"] for row in tries) >= 2  # one waited, then ran


# --- finding 7: userContext is bounded, and counted in the content budget ------------------------------------------


def test_user_context_is_bounded_in_bytes_and_string_length(client, site):
    t = tenant(client, "openai")
    agent_id = create_agent(client, t, instructions="Check.", enabled=False)  # a run within bounds is `skipped`
    big = {f"k{n}": "x" * 3000 for n in range(6)}  # 18 KB of JSON
    err = error(start(client, t, agent_id, site.url, userContext=big), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["userContext"]] and "bytes" in err["message"]
    err = error(start(client, t, agent_id, site.url, userContext={"ok": "fine", "long": ["y" * 4001]}),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["userContext", "long"]]
    assert result(start(client, t, agent_id, site.url, userContext={"ok": "z" * 4000}))["executionId"]


def test_user_context_counts_within_the_content_budget(client, llm, live, site):
    t = tenant(client, "openai")
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "org", "documentId": "doc", "editorId": "body", "type": "text", "data": "d" * 100_000},
             t.headers))
    agent_id = create_agent(client, t, instructions="Check.", contextGathering={"strategies": ["none"]})
    context = {f"field{n}": "c" * 3900 for n in range(4)}  # 15.6 KB, within the bound
    llm.script("openai", {"text": "not json"}, {"text": FINDINGS_NONE})  # the repair sends the prompt again
    execution_id = result(start(client, t, agent_id, site.url, userContext=context))["executionId"]
    settle_jobs(live, t)
    assert execution(client, t, execution_id)["status"] == "passed"
    first, repair = llm.of("openai")
    system, user = (m["content"] for m in first["json"]["messages"])
    assert "c" * 3900 in system and user.count("d" * 1000) > 10  # the context whole, the document cut
    template = 2500  # the prompt's own words around the instructions, the context and the content
    assert len(system) + len(user) < MAX_CONTENT_CHARS + template
    # The repair sends it all again with the malformed answer (at most 20,000 characters) and a line.
    assert sum(len(m["content"]) for m in repair["json"]["messages"]) < MAX_CONTENT_CHARS + template + 20_500


def test_a_key_keeps_a_bounded_number_of_executions(client, live, site, tune, db, clock):
    t = tenant(client, "openai")
    tune(agent_executions_kept_per_api_key=10)
    agent_id = create_agent(client, t, instructions="Check.", enabled=False)  # each run is `skipped` at once
    ids = []
    for _ in range(14):
        clock["now"] += 1
        ids.append(result(start(client, t, agent_id, site.url))["executionId"])
    kept = [
        r["id"] for r in db.execute("select id from agent_executions where api_key_id = %s order by started_at, id", (
            t.api_key, )).fetchall()
    ]
    assert sorted(kept) == sorted(ids[-10:])
    assert result(post(client, "/v2/agents/execution/count", {}, t.headers)) == {"total": 10}
    assert error(post(client, "/v2/agents/execution/get", {"executionId": ids[0]}, t.headers), "NOT_FOUND")


# --- finding 16: the behaviour bytes a key's agents keep are budgeted ----------------------------------------------


def test_agents_versions_are_refused_past_the_keys_byte_budget(client, tune, db):
    t = tenant(client, "openai")
    tune(agent_versions_max_bytes_per_api_key=150_000)
    words = "Check every heading for spelling. " * 1400  # about 48 KB of behaviour per version
    first = create_agent(client, t, instructions=words)
    second = create_agent(client, t, instructions=words)
    result(
        post(client, "/v2/agents/version/update", {"agentId": first, "instructions": words + "Also dates."}, t.headers))
    err = error(
        post(client, "/v2/agents/version/update", {"agentId": second, "instructions": words + "More."}, t.headers),
        "RESOURCE_EXHAUSTED")
    assert "MiB" in err["message"] or "bytes" in err["message"]
    error(post(client, "/v2/agents/create", {**agent_body(), "instructions": words}, t.headers), "RESOURCE_EXHAUSTED")
    stored = db.execute("select count(*) as n, sum(config_bytes) as bytes from agent_versions where api_key_id = %s",
                        (t.api_key, )).fetchone()
    assert stored["n"] == 3 and stored["bytes"] <= 150_000
    # Room made (a version restored) lets a write in again; a small agent fits at once.
    result(post(client, "/v2/agents/versions/restore", {"agentId": first}, t.headers))
    result(post(client, "/v2/agents/version/update", {"agentId": second, "instructions": words + "More."}, t.headers))
    assert create_agent(client, t, instructions="Short.")


def test_concurrent_versions_never_pass_the_byte_budget_together(client, tune, db):
    t = tenant(client, "openai")
    tune(agent_versions_max_bytes_per_api_key=300_000)
    words = "Check every price for a tax note. " * 1400
    agents = [create_agent(client, t, instructions="Short.") for _ in range(8)]

    def update(agent_id):
        return post(client, "/v2/agents/version/update", {"agentId": agent_id, "instructions": words}, t.headers)

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(r.status_code for r in pool.map(update, agents))
    stored = db.execute("select sum(config_bytes) as bytes from agent_versions where api_key_id = %s",
                        (t.api_key, )).fetchone()
    assert stored["bytes"] <= 300_000 and 429 in codes and 200 in codes and set(codes) <= {200, 429}
