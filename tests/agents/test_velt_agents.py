"""velt-py's AgentsService against collab, with only its base URL changed: every agent and agent-group operation
answers in Velt's documented shapes and messages."""

from velt_py.models.agents import (
    AddAgentsToGroupRequest,
    CreateAgentGroupRequest,
    CreateAgentRequest,
    DeleteAgentGroupRequest,
    DeleteAgentRequest,
    GetAgentGroupRequest,
    GetAgentRequest,
    ListAgentGroupsRequest,
    ListAgentVersionsRequest,
    RemoveAgentsFromGroupRequest,
    RestoreAgentVersionRequest,
    UpdateAgentGroupRequest,
    UpdateAgentRequest,
    UpdateAgentVersionRequest,
)

from support.helpers import new_tenant


def ok(answer, message):
    assert answer["result"]["status"] == "success" and answer["result"]["message"] == message, answer
    return answer["result"]["data"]


def test_every_agent_operation_through_velt_py(client, sdk):
    t = new_tenant(client)
    agents = sdk(t).api.agents
    create = CreateAgentRequest(name="Brand Consistency Checker", description="Validates brand colors",
                                instructions="Check that all headings use the brand font 'Inter'.", enabled=True,
                                contextGathering={"strategies": ["web-page-text"]}, execution={},
                                postProcess={"guardrails": {"enabled": True}})
    agent_id = ok(agents.createAgent(create), "Agent created successfully")["agentId"]
    other = ok(agents.createAgent(CreateAgentRequest(**{**create.to_dict(), "name": "Other"})),
               "Agent created successfully")["agentId"]

    got = ok(agents.getAgent(GetAgentRequest(agentId=agent_id)), "Agent fetched successfully")["agent"]
    assert (got["id"], got["version"], got["managedBy"], got["postProcess"]) == (agent_id, 1, "customer",
                                                                                 {"guardrails": {"enabled": True}})
    listed = ok(agents.getAgent(GetAgentRequest(filter="customOnly")), "Agents fetched successfully")["agents"]
    assert [(a["id"], a["executionCount"], a["lastExecutedAt"]) for a in listed] == [(agent_id, 0, None),
                                                                                     (other, 0, None)]

    assert ok(agents.updateAgent(UpdateAgentRequest(agentId=agent_id, name="Brand Checker", enabled=False)),
              "Agent updated successfully") == {"agentId": agent_id}
    assert ok(agents.updateAgentVersion(UpdateAgentVersionRequest(agentId=agent_id, instructions="Check CTAs too.")),
              "Agent version created successfully") == {"version": 2}
    history = ok(agents.listAgentVersions(ListAgentVersionsRequest(agentId=agent_id)),
                 "Versions listed successfully")["versions"]
    assert [(v["id"], v["instructions"]) for v in history] == [("v2", "Check CTAs too."), ("v1", create.instructions)]
    assert ok(agents.restoreAgentVersion(RestoreAgentVersionRequest(agentId=agent_id)),
              "Version restored successfully") == {"version": 1}
    got = ok(agents.getAgent(GetAgentRequest(agentId=agent_id)), "Agent fetched successfully")["agent"]
    assert (got["name"], got["enabled"], got["version"], got["instructions"]) == ("Brand Checker", False, 1,
                                                                                  create.instructions)

    group = ok(
        agents.createAgentGroup(
            CreateAgentGroupRequest(name="Brand QA", description="All brand-quality agents", agentIds=[agent_id],
                                    metadata={"team": "growth"})), "Agent group created successfully")["group"]
    assert group["agentIds"] == [agent_id] and group["metadata"] == {"team": "growth", "apiKey": t.api_key}
    added = ok(agents.addAgentsToGroup(AddAgentsToGroupRequest(groupId=group["id"], agentIds=[other, agent_id])),
               "Agents added to group successfully")["group"]
    assert added["agentIds"] == [agent_id, other]
    in_group = ok(agents.getAgent(GetAgentRequest(groupId=group["id"])), "Agents fetched successfully")["agents"]
    assert [a["id"] for a in in_group] == [agent_id, other]
    renamed = ok(agents.updateAgentGroup(UpdateAgentGroupRequest(groupId=group["id"], name="Brand QA (v2)")),
                 "Agent group updated successfully")["group"]
    assert renamed["name"] == "Brand QA (v2)" and renamed["agentIds"] == [agent_id, other]
    removed = ok(agents.removeAgentsFromGroup(RemoveAgentsFromGroupRequest(groupId=group["id"], agentIds=[agent_id])),
                 "Agents removed from group successfully")["group"]
    assert removed["agentIds"] == [other]
    fetched = ok(agents.getAgentGroup(GetAgentGroupRequest(groupId=group["id"])),
                 "Agent group fetched successfully")["group"]
    assert fetched == removed
    rows = ok(agents.listAgentGroups(ListAgentGroupsRequest()), "Agent groups listed successfully")["groups"]
    assert [(r["id"], r["name"], r["agentCount"]) for r in rows] == [(group["id"], "Brand QA (v2)", 1)]

    assert ok(agents.deleteAgent(DeleteAgentRequest(agentId=other)), "Agent deleted successfully") == {"agentId": other}
    assert ok(agents.getAgentGroup(GetAgentGroupRequest(groupId=group["id"])),
              "Agent group fetched successfully")["group"]["agentIds"] == []
    assert ok(agents.deleteAgentGroup(DeleteAgentGroupRequest(groupId=group["id"])),
              "Agent group deleted successfully") == {"groupId": group["id"]}
    assert ok(agents.listAgentGroups(ListAgentGroupsRequest()), "Agent groups listed successfully") == {"groups": []}


def test_velt_py_reads_collab_s_refusals_in_velt_s_error_shape(client, sdk):
    t = new_tenant(client)
    agents = sdk(t).api.agents
    # velt-py's own note: a name-only creation lists description, enabled, contextGathering and execution.
    refused = agents.createAgent(CreateAgentRequest(name="Only a name"))["error"]
    assert refused["status"] == "INVALID_ARGUMENT"
    assert sorted(i["path"][0]
                  for i in refused["details"]["issues"]) == ["contextGathering", "description", "enabled", "execution"]
    missing = agents.getAgent(GetAgentRequest(agentId="agt_000000000000000000000000"))["error"]
    assert missing == {"status": "NOT_FOUND", "message": "Agent does not exist."}
    assert agents.updateAgentGroup(UpdateAgentGroupRequest(groupId="grp_x"))["error"]["status"] == "INVALID_ARGUMENT"
    assert agents.listAgentVersions(ListAgentVersionsRequest(agentId="agt_gone"))["result"]["data"] == {"versions": []}
    assert agents.deleteAgent(DeleteAgentRequest(agentId="agt_gone"))["result"]["data"] == {"agentId": "agt_gone"}
