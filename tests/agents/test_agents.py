"""Review agents over HTTP (`/v2/agents/*`, ADR 0054): creation and its validation, reads and listings, identity
updates, versions (update, list, restore, the kept count), delete, caps, secrets, and drafts from `agents/extract`."""

import base64
import json
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from collab.agents.service import unsealed
from collab.testing import fake_models
from support import pathological_json
from support.factories import AGENTS, agent_body, create_agent, create_group
from support.helpers import error, issue_paths, new_tenant, post, result

BRAND = {
    "name": "Brand Consistency Checker", "description": "Validates brand colors, logos, and typography across pages",
    "rawInstructions": "Check that all headings use the brand font 'Inter'.",
    "instructions": "Check that all headings use the brand font 'Inter'.", "enabled": True,
    "metadata": {"team": "growth", "owner": "jane"}, "phaseTimeoutMs": 60000, "contextGathering": {
        "strategies": ["web-page-screenshot", "web-page-text", "web-page-html"],
        "strategyOptions": {"web-page-screenshot": {"scrollBeforeCapture": True}}
    }, "execution": {
        "executionStrategy": "ai", "responseDescriptions": {"title": "Short name for the brand inconsistency"},
        "knowledge": {"useMemory": True, "maxChunks": 10, "maxPatterns": 5, "maxActivities": 5}
    }, "postProcess": {
        "guardrails": {"enabled": True}, "deletePreviousSuggestions": {"enabled": True},
        "annotations": {"enabled": True, "strategy": "findings"}
    }, "input": {
        "inputRequirements": {"requires": ["url"]}, "userContextFields": [{
            "id": "brand_color", "title": "Primary brand color?", "type": "string", "required": True
        }]
    }, "scope": {
        "pageScope": ["https://example.com/*"], "pageScopeExclude": ["https://example.com/admin/*"],
        "crossPage": {"enabled": True, "targetProperty": "brandConsistency", "pageDiscovery": "auto"}
    }
}
BEHAVIOUR = ("rawInstructions", "instructions", "phaseTimeoutMs", "contextGathering", "execution", "postProcess",
             "input", "scope")
LIST_KEYS = {
    "id", "name", "description", "enabled", "managedBy", "system", "version", "executionCount", "lastExecutedAt"
}


def call(client, t, op, data):
    return post(client, f"{AGENTS}/{op}", data, t.headers)


def agent(client, t, agent_id):
    return result(call(client, t, "get", {"agentId": agent_id}))["agent"]


def versions(client, t, agent_id, **more):
    return result(call(client, t, "versions/list", {"agentId": agent_id, **more}))


def listing(client, t, **data):
    return result(call(client, t, "get", data))


# --- create and get ---------------------------------------------------------------------------------------------


def test_a_created_agent_reads_back_with_its_identity_and_behaviour(client):
    t = new_tenant(client)
    response = call(client, t, "create", BRAND)
    body = response.json()["result"]
    assert body["message"] == "Agent created successfully" and set(body["data"]) == {"agentId"}
    answer = call(client, t, "get", {"agentId": body["data"]["agentId"]})
    assert answer.json()["result"]["message"] == "Agent fetched successfully"
    got = answer.json()["result"]["data"]["agent"]
    assert got["id"] == body["data"]["agentId"] and got["version"] == 1 and got["managedBy"] == "customer"
    assert {k: got[k]
            for k in ("name", "description", "enabled", "metadata")
            } == {k: BRAND[k]
                  for k in ("name", "description", "enabled", "metadata")}
    assert {k: got[k] for k in BEHAVIOUR} == {k: BRAND[k] for k in BEHAVIOUR}
    # A single agent carries no execution counters (the listing does).
    assert "executionCount" not in got and "lastExecutedAt" not in got


@pytest.mark.parametrize(
    "example",
    [
        agent_body(),
        BRAND,
        agent_body(
            name="Pricing Parity Checker", execution={}, input={"variableKeys": ["planId"]}, contextGathering={
                "strategies": ["web-page-text", "rest-api"], "strategyOptions": {
                    "rest-api": {
                        "endpoints": [{
                            "name": "Plan pricing", "description": "Canonical plan prices from the billing service",
                            "url": "https://api.example.com/plans/{{variables.planId}}", "method": "GET", "headers": {
                                "Accept": "application/json"
                            }, "auth": {"type": "bearer", "token": "sk_live_xxx"
                                        }, "cacheTtlSeconds": 60, "responsePath": "data.plan"
                        }]
                    }
                }
            }),
        agent_body(
            name="Docs Code Verifier", contextGathering={"strategies": ["web-page-html"]}, execution={
                "executionStrategy": "mcp-tools", "mcpServers": [{
                    "id": "velt-docs", "name": "Velt Docs MCP", "description": "Live Velt documentation MCP server",
                    "url": "https://velt.dev/docs/mcp", "transport": "http", "auth": {"type": "none"}
                }]
            }),
        # A pure service agent needs no instructions.
        {
            k: v
            for k, v in agent_body(execution={"executionStrategy": "service", "serviceId": "broken-links"}).items()
            if k != "instructions"
        }
    ],
    ids=["minimal", "full", "rest-api", "mcp-tools", "service"])
def test_velt_s_documented_examples_are_created(client, example):
    t = new_tenant(client)
    agent_id = result(call(client, t, "create", example))["agentId"]
    assert agent(client, t, agent_id)["name"] == example["name"]


def test_fields_velt_accepts_and_discards_are_not_stored(client):
    t = new_tenant(client)
    sent = agent_body(
        contextGathering={
            "strategies": ["web-page-text"], "aiConfig": {"provider": "claude", "model": "x-1", "maxToolTurns": 4}
        }, execution={
            "aiConfig": {"provider": "gemini", "model": "m", "responseMimeType": "text/plain", "maxToolTurns": 4}
        }, input={"supportedVariables": ["{{x}}"], "variableKeys": ["k"]}, sourceTasks=["from a draft"],
        somethingElse={"ignored": True})
    got = agent(client, t, create_agent(client, t, **sent))
    # model and responseMimeType are never kept; maxToolTurns only on execution.aiConfig (Velt's rules).
    assert got["contextGathering"]["aiConfig"] == {"provider": "claude"}
    assert got["execution"]["aiConfig"] == {"provider": "gemini", "maxToolTurns": 4}
    assert got["input"] == {"variableKeys": ["k"]}
    assert "sourceTasks" not in got and "somethingElse" not in got


def test_every_missing_field_is_listed_at_once(client):
    t = new_tenant(client)
    err = error(call(client, t, "create", {"name": "Only a name"}), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["contextGathering"], ["description"], ["enabled"], ["execution"]]
    err = error(call(client, t, "create", {}), "INVALID_ARGUMENT")
    assert ["name"] in issue_paths(err) and len(issue_paths(err)) == 5
    err = error(call(client, t, "create", agent_body(contextGathering={})), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["contextGathering", "strategies"]]
    assert result(call(client, t, "get", {})) == {"agents": []}  # nothing was created


def test_wrong_types_are_each_named(client):
    t = new_tenant(client)
    body = agent_body(name=5, enabled="true", phaseTimeoutMs="100", contextGathering={"strategies": "web-page-text"},
                      execution=[], metadata=["a"])
    err = error(call(client, t, "create", body), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["contextGathering", "strategies"], ["enabled"], ["execution"], ["metadata"],
                                        ["name"], ["phaseTimeoutMs"]]
    assert {i["code"] for i in err["details"]["issues"]} == {"invalid_type"}


@pytest.mark.parametrize("change, path", [
    ({"instructions": None}, ["instructions"]),
    ({"instructions": "   \n\t"}, ["instructions"]),
    ({"execution": {"executionStrategy": "stagehand-agent"}, "instructions": ""}, ["instructions"]),
    ({"execution": {"executionStrategy": "service"}}, ["execution", "serviceId"]),
    ({"execution": {"executionStrategy": "service+ai", "serviceId": "crawler"}, "instructions": " "}, ["instructions"]),
    ({"execution": {"executionStrategy": "mcp-tools"}}, ["execution", "mcpServers"]),
    ({"execution": {"executionStrategy": "mcp-tools", "mcpServers": []}}, ["execution", "mcpServers"]),
    ({"execution": {"executionStrategy": "mcp-tools", "mcpServers": [{"id": "a", "url": "ftp://a"}]}
      }, ["execution", "mcpServers", "0", "url"]),
    ({"execution": {"executionStrategy": "mcp-tools", "mcpServers": [{"id": "a", "url": "https://a", "x": 1}]}
      }, ["execution", "mcpServers", "0", "x"]),
    ({"execution": {"executionStrategy": "cobol"}}, ["execution", "executionStrategy"]),
    ({"execution": {"knowledge": {"sourceIds": ["s"]}}}, ["execution", "knowledge", "sourceIds"]),
    ({"execution": {"knowledge": {"maxChunks": 21}}}, ["execution", "knowledge", "maxChunks"]),
    ({"execution": {"aiConfig": {"provider": "mistral"}}}, ["execution", "aiConfig", "provider"]),
    ({"execution": {"aiConfig": {"maxToolTurns": 17}}}, ["execution", "aiConfig", "maxToolTurns"]),
    ({"execution": {"aiConfig": {"temperature": 1}}}, ["execution", "aiConfig", "temperature"]),
    ({"contextGathering": {"strategies": ["rest-api"]}}, ["contextGathering", "strategyOptions"]),
    ({"contextGathering": {"strategies": []}}, ["contextGathering", "strategies"]),
    ({"contextGathering": {"strategies": ["web-page-text", "web-page-text"]}}, ["contextGathering", "strategies"]),
    ({"contextGathering": {"strategies": ["telepathy"]}}, ["contextGathering", "strategies", "0"]),
    ({"contextGathering": {"strategies": ["computed-styles"], "strategyOptions": {"computed-styles": {}}}
      }, ["contextGathering", "strategyOptions", "computed-styles", "selectors"]),
    ({"postProcess": {"dedupe": {"enabled": True}}}, ["postProcess", "dedupe"]),
    ({"postProcess": {"annotations": {"strategy": "sentences"}}}, ["postProcess", "annotations", "strategy"]),
    ({"input": {"userContextFields": [{"id": "c", "title": "Color", "type": "colour"}]}
      }, ["input", "userContextFields", "0", "type"]),
    ({"input": {"userContextFields": [{"id": "", "title": "Color", "type": "string"}]}
      }, ["input", "userContextFields", "0", "id"]),
    ({"scope": {"crossPage": {"enabled": True}}}, ["scope", "crossPage", "targetProperty"]),
    ({"scope": {"crossPage": {"enabled": True, "targetProperty": "p", "pageDiscovery": "sometimes"}}
      }, ["scope", "crossPage", "pageDiscovery"]),
    ({
        "setup": {
            "checklistOrigin": {"checklistId": "c", "checklistVersion": -1, "sectionRefs": [], "memoryRuleIds": []}
        }
    }, ["setup", "checklistOrigin", "checklistVersion"]),
    ({"phaseTimeoutMs": 0}, ["phaseTimeoutMs"]),
    ({"phaseTimeoutMs": 1.5}, ["phaseTimeoutMs"]),
], ids=lambda v: json.dumps(v)[:60] if isinstance(v, dict) else None)
def test_velt_s_rules_refuse_with_the_field_named(client, change, path):
    t = new_tenant(client)
    body = {k: v for k, v in agent_body(**change).items() if v is not None}
    err = error(call(client, t, "create", body), "INVALID_ARGUMENT")
    assert path in issue_paths(err), err


def test_oversize_and_pathological_values_are_refused(client):
    t = new_tenant(client)
    cases = {
        "name": agent_body(name="n" * 201), "blank name": agent_body(name="   "),
        "description": agent_body(description="d" * 2001), "instructions": agent_body(instructions="i" * 50_001),
        "metadata bytes": agent_body(metadata={"k": "v" * 17_000}),
        "metadata keys": agent_body(metadata={f"k{i}": i
                                              for i in range(101)}),
        "too many servers": agent_body(execution={
            "executionStrategy": "mcp-tools", "mcpServers": [{"id": f"s{i}", "url": "https://a"} for i in range(6)]
        }), "endpoint timeout": agent_body(
            contextGathering={
                "strategies": ["rest-api"], "strategyOptions": {
                    "rest-api": {"endpoints": [{"description": "d", "url": "https://a", "timeoutMs": 30_001}]}
                }
            })
    }
    for label, body in cases.items():
        assert error(call(client, t, "create", body), "INVALID_ARGUMENT"), label
    # A whole configuration over 1 MiB of JSON, each field within its own bound.
    samples = [{"content": "s" * 50_000, "source": "synthetic", "findings": []} for _ in range(20)]
    big = agent_body(rawInstructions="r" * 50_000, instructions="i" * 50_000, setup={"setupSamples": samples})
    err = error(call(client, t, "create", big), "INVALID_ARGUMENT")
    assert "1024 KiB" in err["message"]
    # An integer past 2^53 and nesting past 64 levels are refused before any model.
    assert error(call(client, t, "create", agent_body(phaseTimeoutMs=2**60)), "INVALID_ARGUMENT")
    nested: dict = {}
    for _ in range(70):
        nested = {"n": nested}
    assert error(call(client, t, "create", agent_body(metadata=nested)), "INVALID_ARGUMENT")
    assert result(call(client, t, "get", {})) == {"agents": []}
    # NUL characters are dropped, names trimmed.
    got = agent(client, t, create_agent(client, t, name="  Brand\u0000 QA  "))
    assert got["name"] == "Brand QA"


# --- secrets ------------------------------------------------------------------------------------------------------

SECRET_AGENT = agent_body(
    contextGathering={
        "strategies": ["rest-api"], "strategyOptions": {
            "rest-api": {
                "endpoints": [{
                    "description": "Prices", "url": "https://api.example.com/p",
                    "auth": {"type": "bearer", "token": "sk_live_bearer_123"}
                }, {
                    "description": "Stock", "url": "https://api.example.com/s",
                    "auth": {"type": "basic", "username": "ana", "password": "pw_basic_456"}
                }]
            }
        }
    }, execution={
        "executionStrategy": "mcp-tools", "mcpServers": [{
            "id": "docs", "url": "https://mcp.example.com",
            "auth": {"type": "header", "headers": {"X-Api-Key": "hk_789"}}
        }]
    })
PLAIN = ("sk_live_bearer_123", "pw_basic_456", "hk_789")


def test_secrets_are_redacted_on_read_and_sealed_at_rest(client, db, live):
    t = new_tenant(client)
    agent_id = create_agent(client, t, **SECRET_AGENT)
    got = agent(client, t, agent_id)
    endpoints = got["contextGathering"]["strategyOptions"]["rest-api"]["endpoints"]
    assert [e["auth"] for e in endpoints] == [{"type": "bearer", "token": "__redacted__"},
                                              {"type": "basic", "username": "ana", "password": "__redacted__"}]
    assert got["execution"]["mcpServers"][0]["auth"] == {"type": "header", "headers": {"X-Api-Key": "__redacted__"}}
    stored = db.execute("select config from agent_versions where api_key_id = %s", (t.api_key, )).fetchone()["config"]
    assert not any(secret in json.dumps(stored) for secret in PLAIN)
    clear = unsealed(live.svc.keyring, api_key_id=t.api_key, agent_id=agent_id, config=stored)
    assert clear["execution"]["mcpServers"][0]["auth"]["headers"] == {"X-Api-Key": "hk_789"}
    # A version update that leaves those blocks out keeps the secrets; the redacted placeholder is never a secret.
    assert result(call(client, t, "version/update", {"agentId": agent_id, "instructions": "Newer."}))["version"] == 2
    latest = db.execute("select config from agent_versions where api_key_id = %s and version = 2",
                        (t.api_key, )).fetchone()["config"]
    assert unsealed(live.svc.keyring, api_key_id=t.api_key, agent_id=agent_id, config=latest)["contextGathering"] == \
        clear["contextGathering"]
    err = error(call(client, t, "version/update", {"agentId": agent_id, "execution": got["execution"]}),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["execution", "mcpServers", "0", "auth", "headers", "X-Api-Key"]]
    listed = json.dumps(versions(client, t, agent_id))
    assert "__redacted__" in listed and not any(secret in listed for secret in PLAIN)


PATHOLOGICAL = [
    None, True, 0, -1, 2**53, 1.5, "", " ", "x" * 3000, "\u0000", "💥", [], [None], {}, {"a": 1}, "__redacted__",
    *pathological_json.VALUES.values()
]


def _mutate(value, rng):
    """`value` with one leaf, somewhere down, replaced by a pathological value."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        return {**value, key: _mutate(value[key], rng) if rng.random() < 0.6 else rng.choice(PATHOLOGICAL)}
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        return [*value[:i], _mutate(value[i], rng), *value[i + 1:]]
    return rng.choice(PATHOLOGICAL)


def test_mutated_bodies_answer_in_the_envelope_and_never_with_a_500(client):
    t = new_tenant(client)
    agent_id = create_agent(client, t, **SECRET_AGENT)
    group_id = create_group(client, t, agentIds=[agent_id])["id"]
    seeds = {
        "create": BRAND, "version/update": {"agentId": agent_id, **{k: BRAND[k]
                                                                    for k in BEHAVIOUR}},
        "groups/create": {"name": "G", "agentIds": [agent_id], "metadata": {"a": [1, {"b": None}]}},
        "groups/add-agents": {"groupId": group_id, "agentIds": [agent_id]},
        "get": {"groupId": group_id, "filter": "customOnly", "pageSize": 2}
    }
    rng = random.Random(38)
    for op, seed in seeds.items():
        for _ in range(40):
            response = call(client, t, op, _mutate(seed, rng))  # the client checks each answer against the contract
            assert response.status_code < 500, (op, response.text[:300])
    # Whatever was accepted, the agent still reads back whole.
    assert agent(client, t, agent_id)["id"] == agent_id


# --- listing --------------------------------------------------------------------------------------------------------


def test_the_listing_is_identity_only_with_counters_and_honours_filters(client):
    t = new_tenant(client)
    first = create_agent(client, t, name="First")
    hidden = create_agent(client, t, name="Hidden", metadata={"internal": True})
    second = create_agent(client, t, name="Second", enabled=False)
    answer = call(client, t, "get", {})
    assert answer.json()["result"]["message"] == "Agents fetched successfully"
    rows = answer.json()["result"]["data"]["agents"]
    assert [r["id"] for r in rows] == [first, second]  # oldest first; metadata.internal left out
    assert all(set(r) == LIST_KEYS for r in rows)
    assert rows[1] == {
        "id": second, "name": "Second", "description": agent_body()["description"], "enabled": False,
        "managedBy": "customer", "system": False, "version": 1, "executionCount": 0, "lastExecutedAt": None
    }
    assert [r["id"] for r in listing(client, t, filter="customOnly")["agents"]] == [first, second]
    assert listing(client, t, filter="defaultOnly") == {"agents": []}  # collab has no built-in agents
    assert agent(client, t, hidden)["metadata"] == {"internal": True}  # still fetchable by id
    err = error(call(client, t, "get", {"filter": "everything"}), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["filter"]]
    # With agentId, the filter is not read (Velt).
    assert agent(client, t, first)["id"] == first
    assert result(call(client, t, "get", {"agentId": first, "filter": "defaultOnly"}))["agent"]["id"] == first


def test_a_group_s_listing_follows_the_group_s_order(client):
    t = new_tenant(client)
    a, b, c = (create_agent(client, t, name=n) for n in ("A", "B", "C"))
    group = create_group(client, t, agentIds=[c, a])
    result(call(client, t, "groups/add-agents", {"groupId": group["id"], "agentIds": [b]}))
    assert [r["id"] for r in listing(client, t, groupId=group["id"])["agents"]] == [c, a, b]
    assert [r["id"] for r in listing(client, t, groupId=group["id"], filter="customOnly")["agents"]] == [c, a, b]
    assert listing(client, t, groupId=group["id"], filter="defaultOnly") == {"agents": []}
    err = error(call(client, t, "get", {"groupId": "grp_000000000000000000000000"}), "NOT_FOUND")
    assert err["message"] == "Agent group does not exist."


def test_listings_page_with_tokens_bound_to_their_query(client):
    t = new_tenant(client)
    ids = [create_agent(client, t, name=f"Agent {i}") for i in range(5)]
    seen, token, pages = [], None, 0
    while True:
        page = listing(client, t, pageSize=2, **({"pageToken": token} if token else {}))
        seen += [r["id"] for r in page["agents"]]
        pages += 1
        token = page.get("nextPageToken")
        if token is None:
            assert "nextPageToken" not in page  # omitted, as Velt's listings do
            break
    assert seen == ids and pages == 3
    first = listing(client, t, pageSize=2)
    group = create_group(client, t, agentIds=ids)
    for other in ({"groupId": group["id"]}, {"filter": "customOnly"}):
        err = error(call(client, t, "get", {"pageToken": first["nextPageToken"], **other}), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["pageToken"]]
    by_group = listing(client, t, groupId=group["id"], pageSize=3)
    rest = listing(client, t, groupId=group["id"], pageSize=3, pageToken=by_group["nextPageToken"])
    assert [r["id"] for r in by_group["agents"] + rest["agents"]] == ids
    assert error(call(client, t, "get", {"pageSize": 0}), "INVALID_ARGUMENT")
    assert error(call(client, t, "get", {"pageSize": 1001}), "INVALID_ARGUMENT")


# --- identity updates -----------------------------------------------------------------------------------------------


def test_update_changes_identity_in_place_without_a_version(client):
    t = new_tenant(client)
    agent_id = create_agent(client, t)
    answer = call(
        client, t, "update",
        {"agentId": agent_id, "name": " Renamed ", "enabled": False, "instructions": "Behaviour is ignored here."})
    assert answer.json()["result"] == {
        "status": "success", "message": "Agent updated successfully", "data": {"agentId": agent_id}
    }
    got = agent(client, t, agent_id)
    assert (got["name"], got["enabled"], got["version"]) == ("Renamed", False, 1)
    assert got["instructions"] == agent_body()["instructions"]
    assert [v["version"] for v in versions(client, t, agent_id)["versions"]] == [1]
    # Nothing to change is a no-op success; an empty name is refused; an unknown agent is NOT_FOUND.
    assert result(call(client, t, "update", {"agentId": agent_id})) == {"agentId": agent_id}
    assert issue_paths(error(call(client, t, "update", {"agentId": agent_id, "name": ""}),
                             "INVALID_ARGUMENT")) == [["name"]]
    assert issue_paths(error(call(client, t, "update", {"name": "x"}), "INVALID_ARGUMENT")) == [["agentId"]]
    err = error(call(client, t, "update", {"agentId": "agt_000000000000000000000000", "enabled": True}), "NOT_FOUND")
    assert err["message"] == "Agent does not exist."
    assert agent(client, t, agent_id)["name"] == "Renamed"


# --- versions -------------------------------------------------------------------------------------------------------


def test_a_version_update_merges_blocks_one_level_deep_into_a_new_version(client, clock):
    t = new_tenant(client)
    agent_id = create_agent(client, t, **BRAND)
    clock["now"] += 60
    patch = {
        "agentId": agent_id, "instructions": "Check headings and CTAs.", "metadata": {"team": "brand"},
        "postProcess": {"analytics": {"enabled": False}}, "scope": {
            "crossPage": {
                "enabled": False, "targetProperty": "brandConsistency", "pageDiscovery": "manual",
                "pages": ["https://example.com/a"]
            }
        }
    }
    answer = call(client, t, "version/update", patch)
    assert answer.json()["result"] == {
        "status": "success", "message": "Agent version created successfully", "data": {"version": 2}
    }
    got = agent(client, t, agent_id)
    assert got["version"] == 2 and got["instructions"] == "Check headings and CTAs."
    # postProcess keeps the stored stages beside the sent one; scope.crossPage is replaced whole.
    assert got["postProcess"] == {**BRAND["postProcess"], "analytics": {"enabled": False}}
    assert got["scope"] == {**BRAND["scope"], "crossPage": patch["scope"]["crossPage"]}
    assert got["metadata"] == {"team": "brand"}  # replaced, not merged
    assert got["rawInstructions"] == BRAND["rawInstructions"] and got["name"] == BRAND["name"]
    listed = versions(client, t, agent_id)
    assert [(v["id"], v["version"]) for v in listed["versions"]] == [("v2", 2), ("v1", 1)]
    v2, v1 = listed["versions"]
    assert v2["createdAt"] - v1["createdAt"] == 60_000
    # Each row is a behavioural snapshot: version 1 as created, and no identity fields.
    assert {k: v1[k] for k in BEHAVIOUR} == {k: BRAND[k] for k in BEHAVIOUR}
    assert not {"name", "description", "enabled", "managedBy", "metadata"} & set(v1)
    assert "nextPageToken" not in listed
    assert result(call(client, t, "versions/list", {"agentId": agent_id})) == listed


def test_a_version_update_is_checked_on_the_merged_result(client):
    t = new_tenant(client)
    agent_id = create_agent(client, t)

    def patch(**fields):
        return call(client, t, "version/update", {"agentId": agent_id, **fields})

    assert issue_paths(error(patch(instructions="  "), "INVALID_ARGUMENT")) == [["instructions"]]
    err = error(patch(execution={"executionStrategy": "service"}), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["execution", "serviceId"]]
    err = error(patch(scope={"crossPage": {"enabled": False}}), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["scope", "crossPage", "pageDiscovery"],
                                        ["scope", "crossPage", "targetProperty"]]
    assert error(patch(execution={"knowledge": {"sourceIds": ["s"]}}), "INVALID_ARGUMENT")
    assert agent(client, t, agent_id)["version"] == 1  # nothing was stored
    # The same fields sent one call apart: the second merges onto the first.
    assert result(patch(execution={"serviceId": "crawler"}))["version"] == 2
    assert result(patch(execution={"executionStrategy": "service"}, instructions=""))["version"] == 3
    got = agent(client, t, agent_id)
    assert got["execution"] == {"serviceId": "crawler", "executionStrategy": "service"} and got["instructions"] == ""
    # A patch sending nothing still makes a version (Velt: every call is N+1).
    assert result(patch())["version"] == 4
    # A block's keys merge: options alone keep the stored strategies; strategies that need options still need them.
    options = {"web-page-html": {"includeHead": False}}
    assert result(patch(contextGathering={"strategyOptions": options}))["version"] == 5
    assert agent(client, t,
                 agent_id)["contextGathering"] == {"strategies": ["web-page-html"], "strategyOptions": options}
    err = error(patch(contextGathering={"strategies": ["rest-api"]}), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["contextGathering", "strategyOptions"]]
    err = error(call(client, t, "version/update", {"agentId": "agt_000000000000000000000000"}), "NOT_FOUND")
    assert err["message"] == "Agent does not exist."


def test_restore_undoes_one_version_at_a_time_down_to_one(client):
    t = new_tenant(client)
    agent_id = create_agent(client, t)
    for text in ("Second.", "Third."):
        result(call(client, t, "version/update", {"agentId": agent_id, "instructions": text}))
    answer = call(client, t, "versions/restore", {"agentId": agent_id})
    assert answer.json()["result"] == {
        "status": "success", "message": "Version restored successfully", "data": {"version": 2}
    }
    got = agent(client, t, agent_id)
    assert (got["version"], got["instructions"]) == (2, "Second.")
    assert [v["version"] for v in versions(client, t, agent_id)["versions"]] == [2, 1]
    assert result(call(client, t, "versions/restore", {"agentId": agent_id})) == {"version": 1}
    assert agent(client, t, agent_id)["instructions"] == agent_body()["instructions"]
    err = error(call(client, t, "versions/restore", {"agentId": agent_id}), "FAILED_PRECONDITION")
    assert "version 1" in err["message"]
    # The next change is version 2 again, with the new content.
    assert result(call(client, t, "version/update", {"agentId": agent_id, "instructions": "Fresh."})) == {"version": 2}
    assert [(v["version"], v["instructions"])
            for v in versions(client, t, agent_id)["versions"]] == [(2, "Fresh."), (1, agent_body()["instructions"])]
    assert error(call(client, t, "versions/restore", {"agentId": "agt_000000000000000000000000"}), "NOT_FOUND")
    assert issue_paths(error(call(client, t, "versions/restore", {"agentId": ""}), "INVALID_ARGUMENT")) == [["agentId"]]


def test_concurrent_version_updates_each_get_their_own_number(client):
    t = new_tenant(client)
    agent_id = create_agent(client, t)
    with ThreadPoolExecutor(5) as pool:
        answers = list(
            pool.map(lambda i: call(client, t, "version/update", {"agentId": agent_id, "instructions": f"Edit {i}."}),
                     range(5)))
    assert sorted(result(a)["version"] for a in answers) == [2, 3, 4, 5, 6]
    assert [v["version"] for v in versions(client, t, agent_id)["versions"]] == [6, 5, 4, 3, 2, 1]


def test_only_the_latest_versions_are_kept(client, tune):
    tune(agent_versions_kept=3)
    t = new_tenant(client)
    agent_id = create_agent(client, t)
    for i in range(2, 7):
        assert result(call(client, t, "version/update", {"agentId": agent_id, "instructions": f"v{i}"}))["version"] == i
    assert [v["version"] for v in versions(client, t, agent_id)["versions"]] == [6, 5, 4]
    assert result(call(client, t, "versions/restore", {"agentId": agent_id})) == {"version": 5}
    assert result(call(client, t, "versions/restore", {"agentId": agent_id})) == {"version": 4}
    err = error(call(client, t, "versions/restore", {"agentId": agent_id}), "NOT_FOUND")
    assert err["message"] == "The agent's previous version does not exist: only the latest versions are kept."
    assert agent(client, t, agent_id)["version"] == 4


def test_versions_page_newest_first_and_an_unknown_agent_has_none(client):
    t = new_tenant(client)
    agent_id = create_agent(client, t)
    for i in range(4):
        result(call(client, t, "version/update", {"agentId": agent_id, "instructions": f"Change {i}."}))
    first = versions(client, t, agent_id, pageSize=2)
    second = versions(client, t, agent_id, pageSize=2, pageToken=first["nextPageToken"])
    third = versions(client, t, agent_id, pageSize=2, pageToken=second["nextPageToken"])
    assert [v["version"] for page in (first, second, third) for v in page["versions"]] == [5, 4, 3, 2, 1]
    assert "nextPageToken" not in third
    other = create_agent(client, t)
    err = error(call(client, t, "versions/list", {"agentId": other, "pageToken": first["nextPageToken"]}),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["pageToken"]]
    assert versions(client, t, "agt_000000000000000000000000") == {"versions": []}


def test_a_versions_page_stops_at_the_byte_budget(client, tune):
    t = new_tenant(client)
    agent_id = create_agent(client, t, instructions="x" * 40_000)
    for _ in range(3):
        result(call(client, t, "version/update", {"agentId": agent_id}))
    tune(max_response_bytes=100_000)  # two versions of ~40 KB each fit, a third does not
    page = versions(client, t, agent_id)
    rest = versions(client, t, agent_id, pageToken=page["nextPageToken"])
    assert [v["version"] for v in page["versions"]] == [4, 3]
    assert [v["version"] for v in rest["versions"]] == [2, 1] and "nextPageToken" not in rest


# --- delete and caps ------------------------------------------------------------------------------------------------


def test_delete_is_idempotent_and_takes_the_agent_out_of_its_groups(client):
    t = new_tenant(client)
    agent_id, other = create_agent(client, t), create_agent(client, t)
    first = create_group(client, t, agentIds=[agent_id, other])
    only = create_group(client, t, name="Only it", agentIds=[agent_id])
    for _ in range(2):  # the second delete answers exactly like the first
        answer = call(client, t, "delete", {"agentId": agent_id})
        assert answer.json()["result"] == {
            "status": "success", "message": "Agent deleted successfully", "data": {"agentId": agent_id}
        }
    assert error(call(client, t, "get", {"agentId": agent_id}), "NOT_FOUND")["message"] == "Agent does not exist."
    groups = {g["id"]: g for g in result(call(client, t, "groups/list", {}))["groups"]}
    assert (groups[first["id"]]["agentCount"], groups[only["id"]]["agentCount"]) == (1, 0)  # groups stay, even empty
    assert result(call(client, t, "groups/get", {"groupId": first["id"]}))["group"]["agentIds"] == [other]
    assert versions(client, t, agent_id) == {"versions": []}
    assert error(call(client, t, "version/update", {"agentId": agent_id}), "NOT_FOUND")
    assert error(call(client, t, "versions/restore", {"agentId": agent_id}), "NOT_FOUND")
    assert result(call(client, t, "delete", {"agentId": "never-existed"})) == {"agentId": "never-existed"}
    assert issue_paths(error(call(client, t, "delete", {"agentId": ""}), "INVALID_ARGUMENT")) == [["agentId"]]


def test_the_agent_cap_is_resource_exhausted_until_one_is_deleted(client, tune):
    tune(agents_max_per_api_key=2)
    t = new_tenant(client)
    first, _ = create_agent(client, t), create_agent(client, t)
    err = error(call(client, t, "create", agent_body(name="Third")), "RESOURCE_EXHAUSTED", 429)
    assert "2 custom agents" in err["message"]
    assert len(listing(client, t)["agents"]) == 2
    result(call(client, t, "delete", {"agentId": first}))
    create_agent(client, t, name="Third")
    # The cap is per API key: another tenant is not affected.
    create_agent(client, new_tenant(client))


def test_the_agent_cap_holds_under_concurrent_creations(client, tune):
    tune(agents_max_per_api_key=3)
    t = new_tenant(client)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda i: call(client, t, "create", agent_body(name=f"A{i}")), range(6)))
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 429, 429, 429]
    assert len(listing(client, t)["agents"]) == 3


# --- drafts from agents/extract -------------------------------------------------------------------------------------


@pytest.fixture
def model(llm):
    llm.responder = fake_models.answer
    return llm


def drafts(client, t) -> list[dict]:
    keys = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-agents"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", keys, t.headers))
    checklist = ("Category,Check\nClaims,Every price claim states whether tax is included\n"
                 "Claims,Comparative claims name the compared product\nPrivacy,Forms link to the privacy policy\n")
    data = {"fileBase64": base64.b64encode(checklist.encode()).decode(), "mimeType": "text/csv"}
    return result(post(client, "/v2/agents/extract", data, t.headers))["extractionResult"]["agents"]


def test_an_extracted_draft_is_created_as_it_is(client, model):
    t = new_tenant(client)
    extracted = drafts(client, t)
    draft = next(d for d in extracted if d.get("userContextFields"))
    assert {f["type"] for f in draft["userContextFields"]} <= {"string", "number", "boolean"}
    required = {"enabled": True, "contextGathering": {"strategies": ["web-page-text"]}, "execution": {}}
    # The draft as extract answered it (prompt, sourceTasks and userContextFields included), plus Velt's required
    # blocks that extraction does not produce.
    agent_id = result(call(client, t, "create", {**draft, **required}))["agentId"]
    got = agent(client, t, agent_id)
    assert (got["name"], got["description"], got["instructions"]) == (draft["name"], draft["description"],
                                                                      draft["prompt"])
    assert got["input"] == {"userContextFields": draft["userContextFields"]}
    # Velt's documented mapping of the same draft gives the same agent.
    mapped = {
        "name": draft["name"], "description": draft["description"], "instructions": draft["prompt"],
        "input": {"userContextFields": draft["userContextFields"]}, **required
    }
    twin = agent(client, t, result(call(client, t, "create", mapped))["agentId"])
    assert {k: v for k, v in twin.items() if k != "id"} == {k: v for k, v in got.items() if k != "id"}
    # Every draft of the extraction is accepted.
    for each in extracted:
        result(call(client, t, "create", {**each, **required}))
    # The two names of one field are not both taken.
    err = error(call(client, t, "create", {**draft, **required, "instructions": "Other."}), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["prompt"]]
    err = error(call(client, t, "create", {**mapped, "userContextFields": draft["userContextFields"]}),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["userContextFields"]]
