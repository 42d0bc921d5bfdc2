"""Agent executions (ADR 0055): velt-py's AgentsService runs an agent on a document against the fake model
providers and a page served on 127.0.0.1; findings become suggestions on the document; failures end `error`."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from velt_py.models.agents import (
    CountAgentExecutionsRequest,
    GetAgentAnalyticsRequest,
    GetAgentExecutionRequest,
    ListAgentExecutionsRequest,
    RunAgentExecutionRequest,
)

from collab.agents.tasks import sweep_executions
from collab.llm.fake import last_user_text
from support.factories import create_agent
from support.helpers import add_organization, error, new_tenant, post, result, settle_jobs

PAGE = b"""<html><head><title>Pricing</title><script>var hidden = "script text";</script></head>
<body><h1>Acme Pro pricing</h1><p>Acme Pro costs 10 dollars a month.</p></body></html>"""
INSTRUCTIONS = "Check that every price says whether tax is included."
FINDING = {
    "title": "Price without tax note", "description": "The price does not say whether tax is included.",
    "severity": "high", "targetText": "Acme Pro costs 10 dollars a month.",
    "suggestion": "Acme Pro costs 10 dollars a month, tax included.", "confidence": 88
}


@pytest.fixture
def page():
    """A page server on 127.0.0.1 for one test; `hits` counts its requests."""

    class Handler(BaseHTTPRequestHandler):

        def do_GET(self):
            server.hits += 1  # type: ignore[attr-defined]
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.hits = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/pricing"  # type: ignore[attr-defined]
    yield server
    server.shutdown()
    server.server_close()


def answering(*findings):
    """A responder that answers every review with these findings."""
    return lambda provider, body: json.dumps({"summary": f"{len(findings)} issue(s).", "findings": list(findings)})


def setup(client, tenant=None, **agent):
    """A tenant with an OpenAI key, a document with stored content, and an agent; (tenant, agent id)."""
    t = tenant or new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-agents"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    add_organization(client, t, "org", "doc")
    result(
        post(
            client, "/v2/crdt/add", {
                "organizationId": "org", "documentId": "doc", "editorId": "body", "type": "text",
                "data": "Draft: Acme Lite costs 5 dollars."
            }, t.headers))
    fields = {"instructions": INSTRUCTIONS, "contextGathering": {"strategies": ["web-page-text"]}} | agent
    return t, create_agent(client, t, **fields)


def ok(answer, message):
    assert answer["result"]["status"] == "success" and answer["result"]["message"] == message, answer
    return answer["result"]["data"]


def start(client, t, agent_id, url, **more):
    data = {"agentId": agent_id, "url": url, "organizationId": "org", "documentId": "doc", **more}
    return post(client, "/v2/agents/execution/run", data, t.headers)


def execution(client, t, execution_id, **more):
    return result(post(client, "/v2/agents/execution/get", {"executionId": execution_id, **more}, t.headers))


def suggestions(client, t):
    threads = result(
        post(client, "/v2/commentannotations/get", {"organizationId": "org", "documentId": "doc"}, t.headers))
    return [a for a in threads if (a.get("context") or {}).get("sourceType") == "agent"]


def test_an_execution_through_velt_py_writes_its_findings_as_suggestions(client, sdk, llm, live, page):
    t, agent_id = setup(client)
    llm.responder = answering(FINDING)
    agents = sdk(t).api.agents
    run = RunAgentExecutionRequest(agentId=agent_id, url=page.url, organizationId="org", documentId="doc",
                                   ranBy={"userId": "ana", "name": "Ana"})
    execution_id = ok(agents.runAgentExecution(run), "Agent execution created successfully")["executionId"]
    settle_jobs(live, t)

    got = ok(agents.getAgentExecution(GetAgentExecutionRequest(executionId=execution_id, includeResults=True)),
             "Execution fetched successfully")
    done = got["execution"]
    assert (done["status"], done["agentId"], done["agentVersion"]) == ("failed", agent_id, 1)
    assert done["metadata"] == {"organizationId": "org", "documentId": "doc"}
    assert done["config"] == {
        "seedUrl": page.url, "crossPageExecute": False, "maxUrlsToProcess": 50, "deviceType": "desktop"
    }
    assert done["ranBy"] == {"userId": "ana", "name": "Ana", "email": ""}
    summary = done["resultsSummary"]
    assert (summary["totalFindings"], summary["totalAnnotationsCreated"], summary["urlsProcessed"],
            summary["severityCounts"]) == (1, 1, 1, {"high": 1})
    assert done["llmModel"] == "openai/gpt-4o-mini" and done["tokenUsage"]["totalTokens"] > 0
    assert done["completedAt"] >= done["startedAt"] and done["durationMs"] is not None
    [url_result] = got["results"]
    [finding] = url_result["agentResult"]["findings"]
    assert (url_result["url"], finding["targetText"], finding["severity"]) == (page.url, FINDING["targetText"], "high")

    # What the model was asked: the agent's instructions, the page's visible text and the document's content.
    [call] = llm.of("openai")
    system = call["json"]["messages"][0]["content"]
    user = last_user_text("openai", call["json"])
    assert INSTRUCTIONS in system and "Acme Pro costs 10 dollars a month." in user
    assert "Draft: Acme Lite costs 5 dollars." in user and "script text" not in user
    assert call["headers"]["authorization"] == "Bearer sk-openai-agents"

    [thread] = suggestions(client, t)
    assert thread["annotationId"] == finding["commentId"]
    assert thread["context"] == {
        "type": "suggestion", "sourceType": "agent", "agentId": agent_id, "executionId": execution_id
    }
    agent_block = thread["comments"][0]["agent"]
    assert (agent_block["executionId"], agent_block["url"], agent_block["type"]) == (execution_id, page.url,
                                                                                     "suggestion")
    assert "tax included" in thread["comments"][0]["commentText"]

    listed = result(post(client, "/v2/agents/get", {"agentId": agent_id}, t.headers))
    summary_row = result(post(client, "/v2/agents/get", {}, t.headers))["agents"][0]
    assert listed["agent"]["id"] == agent_id and summary_row["executionCount"] == 1
    assert summary_row["lastExecutedAt"] == done["startedAt"]


def test_a_rerun_replaces_the_previous_suggestions(client, llm, live, page):
    t, agent_id = setup(client)
    llm.responder = answering(FINDING)
    first = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    llm.responder = answering({**FINDING, "title": "Second look", "severity": "low"},
                              {**FINDING, "title": "Another", "targetText": "Acme Pro pricing"})
    second = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    threads = suggestions(client, t)
    assert sorted(a["context"]["executionId"] for a in threads) == [second, second]
    again = execution(client, t, second)["execution"]
    assert again["previousExecutionId"] == first and again["resultsSummary"]["totalAnnotationsCreated"] == 2

    llm.responder = answering()
    third = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    assert execution(client, t, third)["execution"]["status"] == "passed"
    assert suggestions(client, t) == []


def test_a_second_run_while_one_runs_is_already_exists_and_a_run_past_its_budget_ends_in_error(
        client, llm, live, page, tune):
    t, agent_id = setup(client)
    tune(agent_execution_timeout_s=1.0, llm_call_timeout_s=30)
    llm.script("openai", {"hang": True})
    first = result(start(client, t, agent_id, page.url))["executionId"]
    err = error(start(client, t, agent_id, page.url), "ALREADY_EXISTS")
    assert first in err["message"]
    settle_jobs(live, t)
    done = execution(client, t, first)["execution"]
    assert done["status"] == "error" and done["error"]["code"] == "TIMEOUT"
    assert "time budget" in done["error"]["message"] and done["resultsSummary"]["urlsErrored"] == 1


def test_a_model_that_answers_garbage_twice_ends_in_error(client, llm, live, page):
    t, agent_id = setup(client)
    llm.script("openai", {"text": "no json here"}, {"text": '{"summary": 3}'})
    execution_id = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    done = execution(client, t, execution_id)["execution"]
    assert done["status"] == "error" and done["error"]["code"] == "MALFORMED_RESPONSE"
    assert "malformed after a retry" in done["error"]["message"]
    assert len(llm.of("openai")) == 2 and done["tokenUsage"]["totalTokens"] > 0
    assert suggestions(client, t) == []


def test_a_private_url_is_refused_without_the_opt_in(client, llm, live, page, tune):
    t, agent_id = setup(client)
    tune(agent_execution_allow_private_pages=False)
    execution_id = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    done = execution(client, t, execution_id)["execution"]
    assert done["status"] == "error" and done["error"]["code"] == "CONTEXT_GATHERING_ERROR"
    assert "private" in done["error"]["message"] and page.hits == 0 and llm.of("openai") == []


def test_context_none_fetches_nothing_and_a_disabled_agent_is_skipped(client, llm, live, page):
    t, agent_id = setup(client, contextGathering={"strategies": ["none"]})
    llm.responder = answering()
    execution_id = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    assert execution(client, t, execution_id)["execution"]["status"] == "passed" and page.hits == 0
    assert "Draft: Acme Lite" in last_user_text("openai", llm.of("openai")[0]["json"])

    result(post(client, "/v2/agents/update", {"agentId": agent_id, "enabled": False}, t.headers))
    skipped = execution(client, t, result(start(client, t, agent_id, page.url))["executionId"])["execution"]
    assert skipped["status"] == "skipped" and skipped["resultsSummary"]["summary"] == "The agent is disabled."


def test_run_refuses_what_it_cannot_do(client, page):
    t, agent_id = setup(client)
    assert error(start(client, t, agent_id, page.url, documentId="nope"), "NOT_FOUND")
    assert error(start(client, t, "agt_unknown", page.url), "NOT_FOUND")
    assert error(start(client, t, agent_id, "ftp://example.com"), "INVALID_ARGUMENT")
    assert error(start(client, t, agent_id, page.url, crossPageExecute=True), "INVALID_ARGUMENT")
    assert error(start(client, t, agent_id, page.url, aiConfig={}), "INVALID_ARGUMENT")
    assert error(start(client, t, agent_id, page.url, aiConfig={"modell": "x"}), "INVALID_ARGUMENT")


def test_list_count_and_analytics(client, sdk, llm, live, page):
    t, agent_id = setup(client)
    other = create_agent(client, t, instructions=INSTRUCTIONS, contextGathering={"strategies": ["none"]})
    llm.responder = answering(FINDING)
    ids = [result(start(client, t, a, page.url))["executionId"] for a in (agent_id, other)]
    settle_jobs(live, t)
    ids.append(result(start(client, t, agent_id, page.url))["executionId"])
    settle_jobs(live, t)
    agents = sdk(t).api.agents

    def listed(**data):
        return ok(agents.listAgentExecutions(ListAgentExecutionsRequest(**data)), "Executions listed successfully")

    assert [e["id"] for e in listed(agentId=agent_id)["executions"]] == [ids[2], ids[0]]
    assert [e["id"] for e in listed(organizationId="org", documentId="doc")["executions"]] == ids[::-1]
    page_one = listed(organizationId="org", documentId="doc", agentId=agent_id, pageSize=1)
    assert [e["id"] for e in page_one["executions"]] == [ids[2]]
    page_two = listed(organizationId="org", documentId="doc", agentId=agent_id, pageSize=1,
                      pageToken=page_one["nextPageToken"])
    assert [e["id"] for e in page_two["executions"]] == [ids[0]] and "nextPageToken" not in page_two
    for bad in ({}, {"organizationId": "org"}, {"agentId": agent_id,
                                                "documentId": "doc"}, {"agentId": agent_id, "pageSize": 101}):
        error(post(client, "/v2/agents/execution/list", bad, t.headers), "INVALID_ARGUMENT")

    counted = ok(agents.countAgentExecutions(CountAgentExecutionsRequest(agentIds=[agent_id, other, "agt_none"])),
                 "Execution count fetched successfully")
    assert counted == {"counts": {agent_id: 2, other: 1, "agt_none": 0}}
    assert result(post(client, "/v2/agents/execution/count", {"status": "failed"}, t.headers)) == {"total": 3}
    assert result(post(client, "/v2/agents/execution/count", {"agentIds": other, "status": "running"},
                       t.headers)) == {"counts": {other: 0}}
    error(post(client, "/v2/agents/execution/count", {"status": "done"}, t.headers), "INVALID_ARGUMENT")

    analytics = ok(agents.getAgentAnalytics(GetAgentAnalyticsRequest()), "Analytics fetched successfully")["analytics"]
    usage = analytics["tokenUsage"]
    assert usage["allTime"]["requestCount"] == 3 and usage["allTime"]["totalTokens"] > 0
    [year] = usage["yearly"]
    assert list(usage["yearly"][year]) == ["openai_gpt-4o-mini"] and "monthly" not in usage
    assert usage["byModel"]["openai_gpt-4o-mini"] == usage["allTime"]
    assert analytics["executionCounts"][agent_id]["executionCount"] == 2
    one = result(
        post(client, "/v2/agents/analytics/get", {"agentId": other, "year": year, "model": "gemini/x"},
             t.headers))["analytics"]
    assert list(one["executionCounts"]) == [other] and one["tokenUsage"]["allTime"]["requestCount"] == 1
    assert one["tokenUsage"]["byModel"] == {} and len(one["tokenUsage"]["monthly"]) == 1
    error(post(client, "/v2/agents/analytics/get", {"month": "13"}, t.headers), "INVALID_ARGUMENT")


def test_another_tenants_executions_are_not_found(client, llm, live, page):
    a, agent_id = setup(client)
    llm.responder = answering()
    execution_id = result(start(client, a, agent_id, page.url))["executionId"]
    settle_jobs(live, a)
    b = new_tenant(client)
    assert error(post(client, "/v2/agents/execution/get", {"executionId": execution_id}, b.headers),
                 "NOT_FOUND")["message"] == "Execution not found."
    assert result(post(client, "/v2/agents/execution/list", {"agentId": agent_id}, b.headers)) == {"executions": []}
    assert result(post(client, "/v2/agents/execution/count", {"agentIds": [agent_id]},
                       b.headers)) == {"counts": {agent_id: 0}}
    assert result(post(client, "/v2/agents/analytics/get", {}, b.headers))["analytics"]["executionCounts"] == {}


def test_the_sweep_ends_an_execution_left_running(client, llm, live, page, db):
    t, agent_id = setup(client)
    tune_row = "update agent_executions set status = 'running', started_at = started_at - 3600000 where id = %s"
    llm.responder = answering()
    execution_id = result(start(client, t, agent_id, page.url))["executionId"]
    settle_jobs(live, t)
    db.execute(tune_row, (execution_id, ))  # as if its worker had died mid-run an hour ago
    assert live.run(sweep_executions({"svc": live.svc}), timeout=30) >= 1
    done = execution(client, t, execution_id)["execution"]
    assert done["status"] == "error" and done["error"]["code"] == "TIMEOUT"


def test_the_version_running_is_the_one_pinned_at_start(client, llm, live, page):
    t, agent_id = setup(client)
    llm.responder = answering()
    execution_id = result(start(client, t, agent_id, page.url))["executionId"]
    # A new version lands while the run waits on the queue: the run keeps the version it started with.
    body = {"agentId": agent_id, "instructions": "Check the spelling of every heading."}
    result(post(client, "/v2/agents/version/update", body, t.headers))
    settle_jobs(live, t)
    done = execution(client, t, execution_id)["execution"]
    assert (done["status"], done["agentVersion"]) == ("passed", 1)
    system = llm.of("openai")[0]["json"]["messages"][0]["content"]
    assert INSTRUCTIONS in system and "spelling" not in system
