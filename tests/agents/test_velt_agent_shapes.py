"""Agents in Velt's documented shapes (issue #51 items 2, 3 and 8), driven by velt-py: user-context field types as
Velt's create page lists them, `system` on agents/get, an execution's findings as suggestion threads at the root,
and agents/execution/get's crawlerResults with what the page fetch got."""

from test_agent_executions import FINDING, answering, ok, page, setup  # noqa: F401 (page: the fixture)
from velt_py.models.agents import (
    CreateAgentRequest,
    GetAgentExecutionRequest,
    GetAgentRequest,
    RunAgentExecutionRequest,
    UpdateAgentVersionRequest,
)
from velt_py.models.comment_annotation_api import GetCommentAnnotationsRequest

from support.helpers import new_tenant, settle_jobs

BASE = {
    "name": "Brand", "description": "Checks the brand.", "instructions": "Check it.", "enabled": True,
    "contextGathering": {"strategies": ["web-page-text"]}, "execution": {}
}


def _fields(kind):
    return {"userContextFields": [{"id": "brand", "title": "Brand", "type": kind}]}


def test_user_context_field_types_are_string_number_or_boolean(client, sdk):
    t = new_tenant(client)
    agents = sdk(t).api.agents
    for kind in ("text", "date", "url", "list"):
        refused = agents.createAgent(CreateAgentRequest(**BASE, input=_fields(kind)))["error"]
        assert refused["status"] == "INVALID_ARGUMENT", kind
        assert [i["path"] for i in refused["details"]["issues"]] == [["input", "userContextFields", "0", "type"]]
    agent_id = None
    for kind in ("string", "number", "boolean"):
        agent_id = ok(agents.createAgent(CreateAgentRequest(**BASE, input=_fields(kind))),
                      "Agent created successfully")["agentId"]
    refused = agents.updateAgentVersion(UpdateAgentVersionRequest(agentId=agent_id, input=_fields("date")))["error"]
    assert refused["status"] == "INVALID_ARGUMENT"
    assert [i["path"] for i in refused["details"]["issues"]] == [["input", "userContextFields", "0", "type"]]
    assert ok(agents.updateAgentVersion(UpdateAgentVersionRequest(agentId=agent_id, input=_fields("number"))),
              "Agent version created successfully") == {"version": 2}


def test_agents_get_flags_none_system(client, sdk):
    # collab has no built-in agents (Velt's spell-check and the like): every agent is the workspace's own.
    t = new_tenant(client)
    agents = sdk(t).api.agents
    agent_id = ok(agents.createAgent(CreateAgentRequest(**BASE)), "Agent created successfully")["agentId"]
    got = ok(agents.getAgent(GetAgentRequest(agentId=agent_id)), "Agent fetched successfully")["agent"]
    assert got["system"] is False
    listed = ok(agents.getAgent(GetAgentRequest()), "Agents fetched successfully")["agents"]
    assert [a["system"] for a in listed] == [False]
    assert ok(agents.getAgent(GetAgentRequest(filter="defaultOnly")), "Agents fetched successfully")["agents"] == []


def test_findings_are_suggestions_at_the_root_and_the_fetch_is_recorded(client, sdk, llm, live, page):
    t, agent_id = setup(client)
    llm.responder = answering(FINDING)
    velt = sdk(t).api
    run = RunAgentExecutionRequest(agentId=agent_id, url=page.url, organizationId="org", documentId="doc")
    execution_id = ok(velt.agents.runAgentExecution(run), "Agent execution created successfully")["executionId"]
    settle_jobs(live, t)

    done = ok(velt.agents.getAgentExecution(GetAgentExecutionRequest(executionId=execution_id)),
              "Execution fetched successfully")["execution"]
    crawl = done["crawlerResults"]
    assert (crawl["status"], crawl["totalUrlsFound"], crawl["pagesVisited"]) == ("completed", 1, 1)
    [fetched] = crawl["pages"]
    assert (fetched["url"], fetched["status"], fetched["title"]) == (page.url, 200, "Pricing")
    assert fetched["bytes"] > 100 and "Acme Pro costs 10 dollars a month." in fetched["excerpt"]
    assert "script text" not in fetched["excerpt"] and len(fetched["excerpt"].encode()) <= 1000

    got = velt.commentAnnotations.getCommentAnnotations(
        GetCommentAnnotationsRequest(organizationId="org", documentId="doc", agentId=agent_id))
    [thread] = got["result"]["data"]
    assert (thread["type"], thread["sourceType"], thread["suggestion"]) == ("suggestion", "agent",
                                                                            {"status": "pending"})
    agent = thread["agent"]
    assert (agent["agentId"], agent["executionId"], agent["url"]) == (agent_id, execution_id, page.url)
    assert agent["agentName"] and agent["reason"]["title"] == FINDING["title"]
    assert agent["reason"]["description"] == FINDING["description"]
    # The form a client may read already stays.
    assert thread["context"] == {
        "type": "suggestion", "sourceType": "agent", "agentId": agent_id, "executionId": execution_id
    }
    by_execution = velt.commentAnnotations.getCommentAnnotations(
        GetCommentAnnotationsRequest(organizationId="org", documentId="doc", executionId=execution_id))
    assert [a["annotationId"] for a in by_execution["result"]["data"]] == [thread["annotationId"]]
