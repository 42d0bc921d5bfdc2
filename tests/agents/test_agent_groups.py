"""Agent groups over HTTP (`/v2/agents/groups/*`, ADR 0054): creation and its rules, reads, renames, idempotent
membership in order, caps, and delete."""

from concurrent.futures import ThreadPoolExecutor

from support.factories import AGENTS, create_agent, create_group
from support.helpers import error, issue_paths, new_tenant, post, result

GROUPS = f"{AGENTS}/groups"
UNKNOWN = "grp_000000000000000000000000"


def call(client, t, op, data):
    return post(client, f"{GROUPS}/{op}", data, t.headers)


def group(client, t, group_id):
    return result(call(client, t, "get", {"groupId": group_id}))["group"]


def test_a_group_is_created_with_its_members_deduplicated_in_order(client, clock):
    t = new_tenant(client)
    a, b = create_agent(client, t), create_agent(client, t)
    sent = {
        "name": "  Brand QA  ", "description": "All brand-quality agents", "agentIds": [b, a, b],
        "metadata": {"organizationId": "org_001", "team": "growth", "apiKey": "not-mine"}
    }
    answer = call(client, t, "create", sent)
    assert answer.json()["result"]["message"] == "Agent group created successfully"
    made = answer.json()["result"]["data"]["group"]
    now = int(clock["now"] * 1000)
    assert made == {
        "id": made["id"], "name": "Brand QA", "description": "All brand-quality agents", "agentIds": [b, a],
        "metadata": {"organizationId": "org_001", "team": "growth",
                     "apiKey": t.api_key}, "createdAt": now, "updatedAt": now
    }
    answer = call(client, t, "get", {"groupId": made["id"]})
    assert answer.json()["result"] == {
        "status": "success", "message": "Agent group fetched successfully", "data": {"group": made}
    }
    # Without description or agents: no description key, no members, the API key still merged in.
    bare = create_group(client, t, name="Bare")
    assert "description" not in bare and bare["agentIds"] == [] and bare["metadata"] == {"apiKey": t.api_key}


def test_creation_is_validated_strictly(client, tune):
    tune(agent_group_max_agents=3)
    t = new_tenant(client)
    a = create_agent(client, t)
    cases = [({}, [["name"]]), ({"name": "   "}, [["name"]]), ({"name": "n" * 201}, [["name"]]),
             ({"name": "ok", "description": "d" * 2001}, [["description"]]),
             ({"name": "ok", "members": [a]}, [["members"]]), ({"name": "ok", "agentIds": [""]}, [["agentIds", "0"]]),
             ({"name": "ok", "agentIds": a}, [["agentIds"]]), ({"name": "ok", "metadata": "team"}, [["metadata"]])]
    for sent, paths in cases:
        assert issue_paths(error(call(client, t, "create", sent), "INVALID_ARGUMENT")) == paths, sent
    # The member cap applies to the ids as sent, duplicates included (Velt's rule), and is INVALID_ARGUMENT.
    err = error(call(client, t, "create", {"name": "ok", "agentIds": [a, a, a, a]}), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["agentIds"]]
    assert result(call(client, t, "create", {"name": "ok", "agentIds": [a, a, a]}))["group"]["agentIds"] == [a]
    # An unknown agent is NOT_FOUND, named in details, and nothing is created.
    err = error(call(client, t, "create", {"name": "missing", "agentIds": [a, "agt_gone"]}), "NOT_FOUND")
    assert err["message"] == "Agent does not exist."
    assert err["details"] == {"agt_gone": {"success": False, "id": "agt_gone", "message": "Agent does not exist."}}
    assert [g["name"] for g in result(call(client, t, "list", {}))["groups"]] == ["ok"]


def test_the_group_cap_counts_every_group(client, tune):
    tune(agent_groups_max_per_api_key=2)
    t = new_tenant(client)
    first, _ = create_group(client, t), create_group(client, t)
    err = error(call(client, t, "create", {"name": "Third"}), "RESOURCE_EXHAUSTED", 429)
    assert "2 agent groups" in err["message"]
    result(call(client, t, "delete", {"groupId": first["id"]}))
    create_group(client, t, name="Third")


def test_the_listing_counts_members_oldest_first_and_pages(client):
    t = new_tenant(client)
    a = create_agent(client, t)
    made = [create_group(client, t, name=f"G{i}", agentIds=[a] if i % 2 else []) for i in range(3)]
    answer = call(client, t, "list", {})
    assert answer.json()["result"]["message"] == "Agent groups listed successfully"
    rows = answer.json()["result"]["data"]["groups"]
    assert [(r["id"], r["agentCount"]) for r in rows] == [(g["id"], len(g["agentIds"])) for g in made]
    assert all("agentIds" not in r and r["metadata"] == {"apiKey": t.api_key} for r in rows)
    first = result(call(client, t, "list", {"pageSize": 2}))
    rest = result(call(client, t, "list", {"pageSize": 2, "pageToken": first["nextPageToken"]}))
    assert [r["id"] for r in first["groups"] + rest["groups"]] == [g["id"] for g in made]
    assert "nextPageToken" not in rest and "nextPageToken" not in answer.json()["result"]["data"]
    assert result(call(client, new_tenant(client), "list", {})) == {"groups": []}
    assert error(call(client, t, "get", {"groupId": UNKNOWN}), "NOT_FOUND")["message"] == "Agent group does not exist."


def test_update_renames_only_and_refuses_membership_or_metadata(client, clock):
    t = new_tenant(client)
    a = create_agent(client, t)
    made = create_group(client, t, description="Old", agentIds=[a], metadata={"team": "growth"})
    clock["now"] += 5
    answer = call(client, t, "update", {"groupId": made["id"], "name": " Brand QA (v2) "})
    assert answer.json()["result"]["message"] == "Agent group updated successfully"
    changed = answer.json()["result"]["data"]["group"]
    assert changed == {**made, "name": "Brand QA (v2)", "updatedAt": made["updatedAt"] + 5000}
    for sent, path in (({"groupId": made["id"], "metadata": {"team": "x"}}, ["metadata"]),
                       ({"groupId": made["id"], "name": "x",
                         "agentIds": []}, ["agentIds"]), ({"groupId": made["id"], "name": ""}, ["name"])):
        assert path in issue_paths(error(call(client, t, "update", sent), "INVALID_ARGUMENT"))
    err = error(call(client, t, "update", {"groupId": made["id"]}), "INVALID_ARGUMENT")
    assert err["details"]["issues"] == [{"code": "custom", "path": [], "message": "Provide name or description"}]
    assert group(client, t, made["id"]) == changed  # nothing refused was applied
    # An empty description clears it.
    cleared = result(call(client, t, "update", {"groupId": made["id"], "description": ""}))["group"]
    assert "description" not in cleared and cleared["name"] == "Brand QA (v2)"
    assert error(call(client, t, "update", {"groupId": UNKNOWN, "name": "x"}), "NOT_FOUND")


def test_adding_is_idempotent_and_keeps_the_order(client, clock):
    t = new_tenant(client)
    a, b, c = (create_agent(client, t) for _ in range(3))
    made = create_group(client, t, agentIds=[a])
    clock["now"] += 1
    answer = call(client, t, "add-agents", {"groupId": made["id"], "agentIds": [c, a, b, c]})
    assert answer.json()["result"]["message"] == "Agents added to group successfully"
    added = answer.json()["result"]["data"]["group"]
    assert added["agentIds"] == [a, c, b] and added["updatedAt"] == made["updatedAt"] + 1000
    clock["now"] += 1
    again = result(call(client, t, "add-agents", {"groupId": made["id"], "agentIds": [b, a]}))["group"]
    assert again == added  # nothing new: no duplicate, no change, updatedAt kept
    err = error(call(client, t, "add-agents", {"groupId": made["id"], "agentIds": [b, "agt_gone"]}), "NOT_FOUND")
    assert set(err["details"]) == {"agt_gone"}
    assert error(call(client, t, "add-agents", {"groupId": UNKNOWN, "agentIds": [a]}), "NOT_FOUND")
    for sent, path in (({"groupId": made["id"],
                         "agentIds": []}, ["agentIds"]), ({"groupId": made["id"], "agentIds": [""]}, ["agentIds", "0"]),
                       ({"groupId": made["id"]}, ["agentIds"]), ({"agentIds": [a]}, ["groupId"])):
        assert issue_paths(error(call(client, t, "add-agents", sent), "INVALID_ARGUMENT")) == [path]
    assert group(client, t, made["id"]) == added


def test_adding_past_the_member_cap_is_resource_exhausted(client, tune):
    tune(agent_group_max_agents=3)
    t = new_tenant(client)
    ids = [create_agent(client, t) for _ in range(4)]
    made = create_group(client, t, agentIds=ids[:2])
    err = error(call(client, t, "add-agents", {"groupId": made["id"], "agentIds": ids[1:]}), "RESOURCE_EXHAUSTED", 429)
    assert "at most 3 agents" in err["message"]
    assert group(client, t, made["id"])["agentIds"] == ids[:2]
    # Ids already in the group do not count twice.
    full = result(call(client, t, "add-agents", {"groupId": made["id"], "agentIds": ids[:3]}))["group"]
    assert full["agentIds"] == ids[:3]
    assert result(call(client, t, "add-agents", {"groupId": made["id"], "agentIds": [ids[0]]}))["group"] == full


def test_the_member_cap_holds_under_concurrent_additions(client, tune):
    tune(agent_group_max_agents=4)
    t = new_tenant(client)
    ids = [create_agent(client, t) for _ in range(6)]
    made = create_group(client, t)
    batches = [ids[:3], ids[3:]]
    with ThreadPoolExecutor(2) as pool:
        answers = list(
            pool.map(lambda b: call(client, t, "add-agents", {"groupId": made["id"], "agentIds": b}), batches))
    assert sorted(a.status_code for a in answers) == [200, 429]
    assert group(client, t, made["id"])["agentIds"] in batches


def test_removing_is_idempotent(client, clock):
    t = new_tenant(client)
    a, b, c = (create_agent(client, t) for _ in range(3))
    made = create_group(client, t, agentIds=[a, b, c])
    clock["now"] += 1
    answer = call(client, t, "remove-agents", {"groupId": made["id"], "agentIds": [b, "agt_never_a_member"]})
    assert answer.json()["result"]["message"] == "Agents removed from group successfully"
    removed = answer.json()["result"]["data"]["group"]
    assert removed["agentIds"] == [a, c] and removed["updatedAt"] == made["updatedAt"] + 1000
    clock["now"] += 1
    assert result(call(client, t, "remove-agents", {"groupId": made["id"], "agentIds": [b]}))["group"] == removed
    # The agents themselves stay; one added back goes to the end.
    assert result(post(client, f"{AGENTS}/get", {"agentId": b}, t.headers))["agent"]["id"] == b
    assert result(call(client, t, "add-agents",
                       {"groupId": made["id"], "agentIds": [b]}))["group"]["agentIds"] == [a, c, b]
    assert error(call(client, t, "remove-agents", {"groupId": UNKNOWN, "agentIds": [a]}), "NOT_FOUND")
    assert issue_paths(
        error(call(client, t, "remove-agents", {"groupId": made["id"], "agentIds": []}),
              "INVALID_ARGUMENT")) == [["agentIds"]]


def test_deleting_a_group_leaves_its_agents(client):
    t = new_tenant(client)
    a = create_agent(client, t)
    first, second = create_group(client, t, agentIds=[a]), create_group(client, t, agentIds=[a])
    answer = call(client, t, "delete", {"groupId": first["id"]})
    assert answer.json()["result"] == {
        "status": "success", "message": "Agent group deleted successfully", "data": {"groupId": first["id"]}
    }
    assert error(call(client, t, "get", {"groupId": first["id"]}), "NOT_FOUND")
    assert error(call(client, t, "delete", {"groupId": first["id"]}), "NOT_FOUND")  # Velt: not idempotent
    assert group(client, t, second["id"])["agentIds"] == [a]
    assert result(post(client, f"{AGENTS}/get", {"agentId": a}, t.headers))["agent"]["id"] == a
    assert error(post(client, f"{AGENTS}/get", {"groupId": first["id"]}, t.headers), "NOT_FOUND")
