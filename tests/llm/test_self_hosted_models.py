"""Models a team hosts itself (ADR 0061): `ollama/` and `openai-compatible/` names, a workspace's own server or the
platform's, through litellm to fake Ollama and OpenAI-compatible servers over HTTP on 127.0.0.1."""

import base64
import socket

import pytest

from collab.llm.routing import resolve
from collab.testing import fake_models
from support.helpers import error, issue_paths, new_tenant, post, result

ASK = "/v2/rewriter/ask-ai"
KEYCFG = "/v2/workspace/apikeyconfig"
CHECKLIST = (b"Category,Check\nClaims,Every price claim states whether tax is included\n"
             b"Claims,Comparative claims name the compared product\nPrivacy,Forms link to the privacy policy\n")


def own_server(client, llm, provider, *, model=None, key=None, base=None):
    """A tenant whose workspace has its own `provider` server: the fake, unless `base` says where."""
    t = new_tenant(client)
    entry = {"provider": provider, "baseUrl": base or llm.base_url(provider)}
    if model:
        entry["model"] = model
    if key:
        entry["customerApiKey"] = key
    result(post(client, f"{KEYCFG}/update", {"aiModelApiKey": [entry]}, t.headers))
    return t


def ask(client, t, model, text="hey, ship it"):
    return post(client, ASK, {"model": model, "prompt": "Make it formal.", "text": text}, t.headers)


def answered(response) -> dict:
    """Ask AI's `result` (it has no `status`/`data` envelope: the spec's shape)."""
    assert response.status_code == 200, response.text
    return response.json()["result"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the routing table ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, provider, litellm_model, params_b", [
    ("ollama/qwen2.5:1.5b", "ollama", "ollama_chat/qwen2.5:1.5b", 1.5),
    ("ollama/llama3.2:3b-instruct-q4_K_M", "ollama", "ollama_chat/llama3.2:3b-instruct-q4_K_M", 3.0),
    ("ollama/mistral", "ollama", "ollama_chat/mistral", None),
    ("openai-compatible/Qwen/Qwen2.5-7B-Instruct", "openai-compatible", "openai/Qwen/Qwen2.5-7B-Instruct", 7.0),
    ("openai-compatible/smollm2-135m", "openai-compatible", "openai/smollm2-135m", 0.135),
    ("gpt-4o-mini", "openai", "openai/gpt-4o-mini", None),
])
def test_names_route_by_prefix(name, provider, litellm_model, params_b):
    route = resolve(name)
    assert (route.provider.id, route.litellm_model, route.name) == (provider, litellm_model, name)
    assert route.params_b == params_b


@pytest.mark.parametrize("name", [
    "ollama/", "ollama", "openai-compatible/", "ollama/has space", "local/qwen", "qwen2.5:1.5b", "ollama/" + "x" * 201
])
def test_other_names_are_invalid_argument(client, llm, name):
    t = new_tenant(client)
    err = error(ask(client, t, name), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["model"]]
    assert "ollama/<model>" in err["message"] or "at most 200 characters" in err["message"]
    assert llm.requests == []


# --- Ask AI on a workspace's own server -------------------------------------------------------------------------


def test_ask_ai_on_the_workspaces_ollama(client, llm):
    t = own_server(client, llm, "ollama")
    assert answered(ask(client, t, "ollama/qwen2.5:1.5b")) == {"success": True, "text": "rewritten: hey, ship it"}
    [call] = llm.of("ollama")
    assert call["path"] == "/ollama/api/chat" and call["json"]["model"] == "qwen2.5:1.5b"
    assert [m["content"] for m in call["json"]["messages"]] == ["Make it formal.", "hey, ship it"]
    assert call["json"]["stream"] is False and "format" not in call["json"]  # free text: nothing constrained


def test_ask_ai_on_an_openai_compatible_server_with_and_without_a_key(client, llm):
    t = own_server(client, llm, "openai-compatible", key="vllm-key-12345678")
    assert answered(ask(client, t, "openai-compatible/Qwen/Qwen2.5-7B-Instruct"))["success"] is True
    [call] = llm.of("openai-compatible")
    assert call["path"] == "/openai-compatible/chat/completions"
    assert call["json"]["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert call["headers"]["authorization"] == "Bearer vllm-key-12345678"
    keyless = own_server(client, llm, "openai-compatible")
    llm.requests.clear()
    assert answered(ask(client, keyless, "openai-compatible/m"))["success"] is True
    assert llm.of("openai-compatible")[0]["headers"]["authorization"] == "Bearer no-key"


def test_no_server_anywhere_is_success_false(client, llm):
    t = new_tenant(client)
    assert answered(
        ask(client, t,
            "ollama/qwen2.5:1.5b")) == {"success": False, "error": "No model server configured for provider: Ollama"}
    assert llm.requests == []


def test_the_platforms_server_serves_workspaces_without_their_own(client, llm, tune):
    tune(ollama_base_url=llm.base_url("ollama"))
    t = new_tenant(client)
    assert answered(ask(client, t, "ollama/qwen2.5:1.5b"))["success"] is True
    assert llm.of("ollama")[0]["json"]["model"] == "qwen2.5:1.5b"


def test_another_tenants_server_is_not_used(client, llm):
    own_server(client, llm, "ollama")
    other = new_tenant(client)
    assert answered(ask(client, other, "ollama/qwen2.5:1.5b"))["success"] is False
    assert llm.requests == []


# Every failure a self-hosted server gives maps to the table Ask AI uses for the clouds.
@pytest.mark.parametrize("provider", ["ollama", "openai-compatible"])
@pytest.mark.parametrize("action, code", [({"status": 404}, "INVALID_ARGUMENT"), ({"status": 400}, "INVALID_ARGUMENT"),
                                          ({"status": 500}, "UNAVAILABLE"), ({"status": 503}, "UNAVAILABLE"),
                                          ({"raw": "<html><body>It works!</body></html>"}, "UNAVAILABLE"),
                                          ({"status": 401}, "FAILED_PRECONDITION"),
                                          ({"status": 429}, "RESOURCE_EXHAUSTED"),
                                          ({"hang": True}, "DEADLINE_EXCEEDED")])
def test_server_failures_map_to_the_ask_ai_table(client, llm, provider, action, code):
    t = own_server(client, llm, provider)
    llm.script(provider, *[action] * 3)  # every retry gets the same
    err = error(ask(client, t, f"{provider}/m"), code)
    display = "Ollama" if provider == "ollama" else "OpenAI-compatible server"
    assert code == "INVALID_ARGUMENT" or display in err["message"]
    assert "fake" not in err["message"]  # the server's own text is only logged


@pytest.mark.parametrize("provider", ["ollama", "openai-compatible"])
def test_a_server_that_is_down_is_unavailable(client, llm, provider):
    t = own_server(client, llm, provider, base=f"http://127.0.0.1:{closed_port()}")
    error(ask(client, t, f"{provider}/m"), "UNAVAILABLE")


# --- the workspace's entry --------------------------------------------------------------------------------------


def test_entries_are_stored_sealed_and_shown_by_host(client, llm, db):
    t = own_server(client, llm, "ollama", model="qwen2.5:7b", key="proxy-key-abcd1234")
    view = result(post(client, f"{KEYCFG}/get", {}, t.headers))
    port = llm.root.rsplit(":", 1)[1]
    assert view["aiModelApiKey"] == [{
        "provider": "ollama", "isSet": True, "last4": "1234", "keySet": True, "baseUrlHost": f"127.0.0.1:{port}",
        "model": "qwen2.5:7b"
    }]
    row = db.execute("select * from ai_provider_keys where api_key_id = %s", (t.api_key, )).fetchone()
    assert llm.root.encode() not in bytes(row["base_url_enc"]) and b"proxy-key" not in bytes(row["key_enc"])
    result(post(client, f"{KEYCFG}/update", {"aiModelApiKey": [{"provider": "ollama", "baseUrl": None}]}, t.headers))
    assert result(post(client, f"{KEYCFG}/get", {}, t.headers))["aiModelApiKey"] == []


@pytest.mark.parametrize("entry, path", [
    ({"provider": "ollama"}, ["aiModelApiKey", "0"]),
    ({"provider": "openai", "customerApiKey": "sk-12345678", "baseUrl": "https://example.com/v1"
      }, ["aiModelApiKey", "0"]),
    ({"provider": "openai"}, ["aiModelApiKey", "0"]),
    ({"provider": "ollama", "baseUrl": None, "model": "m"}, ["aiModelApiKey", "0"]),
    ({"provider": "ollama", "baseUrl": "ftp://models.example.com"}, ["aiModelApiKey", "0", "baseUrl"]),
    ({"provider": "ollama", "baseUrl": 11434}, ["aiModelApiKey", "0", "baseUrl"]),
    ({"provider": "ollama", "baseUrl": "http://models.example.com", "model": "has space"
      }, ["aiModelApiKey", "0", "model"]),
    ({"provider": "ollama", "baseUrl": "http://" + "m" * 2000 + ".com"}, ["aiModelApiKey", "0", "baseUrl"]),
    ({"provider": "llamafile", "baseUrl": "http://models.example.com"}, ["aiModelApiKey", "0", "provider"]),
])
def test_bad_entries_are_invalid_argument_and_store_nothing(client, llm, entry, path):
    t = new_tenant(client)
    err = error(post(client, f"{KEYCFG}/update", {"aiModelApiKey": [entry]}, t.headers), "INVALID_ARGUMENT")
    assert path in issue_paths(err)
    assert result(post(client, f"{KEYCFG}/get", {}, t.headers))["aiModelApiKey"] == []


def test_a_private_base_url_is_refused_unless_the_operator_allows_it(client, llm, tune):
    tune(models_allow_private_base_urls=False)
    t = new_tenant(client)
    for url in (llm.base_url("ollama"), "http://localhost:11434", "http://10.0.0.7:11434", "http://[::1]:8000/v1",
                "http://169.254.169.254/latest"):
        body = {"aiModelApiKey": [{"provider": "ollama", "baseUrl": url}]}
        err = error(post(client, f"{KEYCFG}/update", body, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["aiModelApiKey", "0", "baseUrl"]], url
    assert result(post(client, f"{KEYCFG}/get", {}, t.headers))["aiModelApiKey"] == []


def test_a_stored_private_url_is_refused_at_call_time_once_disallowed(client, llm, tune):
    t = own_server(client, llm, "ollama")  # allowed when set
    tune(models_allow_private_base_urls=False)
    err = error(ask(client, t, "ollama/m"), "FAILED_PRECONDITION")
    assert "base URL is refused" in err["message"]
    assert llm.requests == []


# --- structured answers: extraction on a server the team runs ----------------------------------------------------


def extract(client, t, provider):
    body = {"fileBase64": base64.b64encode(CHECKLIST).decode(), "mimeType": "text/csv", "provider": provider}
    return post(client, "/v2/agents/extract", body, t.headers)


def test_extraction_on_ollama_asks_for_the_schema_as_its_format(client, llm):
    llm.responder = fake_models.answer
    t = own_server(client, llm, "ollama", model="qwen2.5:14b")
    agents = result(extract(client, t, "ollama"))["extractionResult"]["agents"]
    assert {a["name"] for a in agents} == {"Claims Review", "Privacy Review"}
    [call] = llm.of("ollama")
    assert call["json"]["model"] == "qwen2.5:14b"
    assert call["json"]["format"]["type"] == "object" and "agents" in call["json"]["format"]["properties"]
    assert "Prefer 3 to 12 agents" in call["json"]["messages"][0]["content"]  # 14B: the full prompt


def test_a_small_model_gets_the_prompts_small_variant(client, llm):
    llm.responder = fake_models.answer
    t = own_server(client, llm, "ollama", model="qwen2.5:1.5b")
    result(extract(client, t, "ollama"))
    system = llm.of("ollama")[0]["json"]["messages"][0]["content"]
    assert system.startswith("Group checklist tasks into review agents.") and "Prefer 3 to 12" not in system


@pytest.mark.parametrize("mode, expected", [("json_schema", "json_schema"), ("json_object", "json_object"),
                                            ("none", None)])
def test_openai_compatible_structured_output_follows_the_setting(client, llm, tune, mode, expected):
    tune(openai_compatible_response_format=mode)
    llm.responder = fake_models.answer
    t = own_server(client, llm, "openai-compatible", model="Qwen/Qwen2.5-7B-Instruct")
    result(extract(client, t, "openai-compatible"))
    body = llm.of("openai-compatible")[0]["json"]
    assert (body.get("response_format") or {}).get("type") == expected
    if expected == "json_object":
        assert body["response_format"]["schema"]["type"] == "object"  # llama-cpp-python's server reads it there


def test_a_malformed_answer_is_sent_back_once(client, llm):
    t = own_server(client, llm, "ollama", model="qwen2.5:1.5b")
    llm.script("ollama", {"text": "Sure! Here are your agents: ..."})
    llm.responder = fake_models.answer
    assert result(extract(client, t, "ollama"))["extractionResult"]["agents"]
    first, repair = llm.of("ollama")
    assert "That answer is invalid" in repair["json"]["messages"][-1]["content"]


def test_extraction_without_a_model_named_says_where_to_name_one(client, llm):
    t = own_server(client, llm, "ollama")
    err = error(extract(client, t, "ollama"), "INTERNAL")
    assert "No model named for Ollama" in err["message"] and "COLLAB_OLLAMA_MODEL" in err["message"]
    assert llm.requests == []


def test_extraction_uses_the_platforms_model_setting(client, llm, tune):
    tune(openai_compatible_base_url=llm.base_url("openai-compatible"), openai_compatible_model="local-model")
    llm.responder = fake_models.answer
    t = new_tenant(client)
    assert result(extract(client, t, "openai-compatible"))["extractionResult"]["agents"]
    assert llm.of("openai-compatible")[0]["json"]["model"] == "local-model"


def test_the_playground_lists_the_self_hosted_providers(client, live):
    from support.console_http import signed_in

    t = new_tenant(client)
    with signed_in(live, t) as http:
        page = http.get(f"/console/playground/extraction?key={t.api_key}")
    assert page.status_code == 200
    for provider in ("openai", "claude", "gemini", "ollama", "openai-compatible"):
        assert f'value="{provider}"' in page.text, provider
