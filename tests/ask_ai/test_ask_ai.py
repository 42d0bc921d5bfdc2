"""POST /v2/rewriter/ask-ai through the worker and litellm to fake providers over HTTP."""

import logging

import pytest

from support.helpers import error, issue_paths, new_tenant, post, result

ASK = "/v2/rewriter/ask-ai"
KEYS = {"openai": "sk-openai-test-1111", "anthropic": "sk-ant-test-2222", "gemini": "AIza-test-3333"}


def tenant_with_keys(client, *providers):
    t = new_tenant(client)
    entries = [{"provider": p, "customerApiKey": KEYS[p]} for p in providers]
    result(post(client, "/v2/workspace/apikeyconfig/update", {"aiModelApiKey": entries}, t.headers))
    return t


def ask(client, t, model, prompt="Make it formal.", text="hey, ship it"):
    return client.post(ASK, json={"data": {"model": model, "prompt": prompt, "text": text}}, headers=t.headers)


@pytest.mark.parametrize("model, provider, o_series", [("gpt-4o", "openai", False), ("o1-mini", "openai", True),
                                                       ("o3", "openai", True), ("o4-mini", "openai", True),
                                                       ("claude-sonnet-4-0", "anthropic", False),
                                                       ("gemini-2.5-flash", "gemini", False)])
def test_routes_by_prefix_and_sends_the_right_messages(client, llm, model, provider, o_series):
    t = tenant_with_keys(client, provider)
    response = ask(client, t, model)
    assert response.status_code == 200, response.text
    assert response.json() == {
        "result": {
            "success": True, "text": "rewritten: " + ("Make it formal.\n\nhey, ship it" if o_series else "hey, ship it")
        }
    }
    [call] = llm.requests
    assert call["provider"] == provider and call["model"] == model
    body = call["json"]
    for sampling in ("temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty", "seed"):
        assert sampling not in body
    if provider == "openai":
        assert call["headers"]["authorization"] == f"Bearer {KEYS['openai']}"
        assert "max_tokens" not in body and "max_completion_tokens" not in body
        if o_series:
            assert body["messages"] == [{"role": "user", "content": "Make it formal.\n\nhey, ship it"}]
        else:
            assert body["messages"] == [{"role": "system", "content": "Make it formal."},
                                        {"role": "user", "content": "hey, ship it"}]
    elif provider == "anthropic":
        assert call["headers"]["x-api-key"] == KEYS["anthropic"]
        assert call["path"] == "/anthropic/v1/messages"
        assert body["system"] == [{"type": "text", "text": "Make it formal."}]
        assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hey, ship it"}]}]
    else:
        assert call["headers"]["x-goog-api-key"] == KEYS["gemini"]
        assert call["path"] == "/gemini/models/gemini-2.5-flash:generateContent"
        assert body["system_instruction"] == {"parts": [{"text": "Make it formal."}]}
        assert body["contents"] == [{"role": "user", "parts": [{"text": "hey, ship it"}]}]
        assert "generationConfig" not in body or not body["generationConfig"]


@pytest.mark.parametrize("model", ["llama-3", "o2-mini", "gpt", "claude", "o1mini", "mistral-large"])
def test_unknown_prefix_is_invalid_argument(client, llm, model):
    t = tenant_with_keys(client, "openai")
    err = error(ask(client, t, model), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["model"]]
    assert llm.requests == []


@pytest.mark.parametrize("model, display", [("gpt-4o", "OpenAI"), ("claude-3-5-haiku-latest", "Anthropic"),
                                            ("gemini-2.0-flash", "Gemini")])
def test_missing_key_is_success_false(client, llm, model, display):
    t = tenant_with_keys(client)  # no provider keys at all
    response = ask(client, t, model)
    assert response.status_code == 200
    assert response.json() == {"result": {"success": False, "error": f"No API key configured for provider: {display}"}}
    assert llm.requests == []


def test_another_providers_key_does_not_count(client, llm):
    t = tenant_with_keys(client, "anthropic")
    assert ask(client, t, "gpt-4o").json()["result"]["success"] is False


@pytest.mark.parametrize("data, paths",
                         [({}, [["model"], ["prompt"], ["text"]]),
                          ({"model": "", "prompt": " ", "text": "x"}, [["model"], ["prompt"]]),
                          ({"model": "gpt-4o", "prompt": "p", "text": "x" * 100_001}, [["text"]]),
                          ({"model": 4, "prompt": ["p"], "text": None}, [["model"], ["prompt"], ["text"]])])
def test_validation(client, llm, data, paths):
    t = tenant_with_keys(client, "openai")
    err = error(client.post(ASK, json={"data": data}, headers=t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == paths
    assert llm.requests == []


def test_text_at_limit_is_accepted(client, llm):
    t = tenant_with_keys(client, "openai")
    assert ask(client, t, "gpt-4o", text="y" * 100_000).json()["result"]["success"] is True


def test_bad_customer_key_is_failed_precondition_naming_provider_not_key(client, llm):
    t = tenant_with_keys(client, "anthropic")
    llm.script("anthropic", {"status": 401})
    err = error(ask(client, t, "claude-sonnet-4-0"), "FAILED_PRECONDITION")
    assert "Anthropic" in err["message"] and KEYS["anthropic"] not in err["message"]
    assert len(llm.requests) == 1  # not retried


def test_rate_limited_then_success_is_retried(client, llm):
    t = tenant_with_keys(client, "openai")
    llm.script("openai", {"status": 429}, {"status": 429})
    assert ask(client, t, "gpt-4o").json() == {"result": {"success": True, "text": "rewritten: hey, ship it"}}
    assert len(llm.requests) == 3


def test_rate_limited_after_retries_is_resource_exhausted(client, llm):
    t = tenant_with_keys(client, "gemini")
    llm.script("gemini", {"status": 429}, {"status": 429}, {"status": 429})
    error(ask(client, t, "gemini-2.5-flash"), "RESOURCE_EXHAUSTED")
    assert len(llm.requests) == 3


def test_server_error_forever_is_unavailable(client, llm):
    t = tenant_with_keys(client, "openai")
    llm.script("openai", *[{"status": 500}] * 5)
    error(ask(client, t, "gpt-4o"), "UNAVAILABLE")
    assert len(llm.requests) == 3


def test_a_provider_that_hangs_is_deadline_exceeded(client, llm):
    t = tenant_with_keys(client, "openai")
    llm.script("openai", *[{"hang": True}] * 3)
    error(ask(client, t, "gpt-4o"), "DEADLINE_EXCEEDED", 504)


def test_redis_down_is_unavailable(client, llm, live, tmp_path):
    from collab.kit.redisclient import redis_client

    t = tenant_with_keys(client, "openai")
    original = live.svc.redis
    live.svc.redis = redis_client(f"unix://{tmp_path}/none.sock")
    try:
        error(ask(client, t, "gpt-4o"), "UNAVAILABLE")
    finally:
        live.svc.redis = original
    assert llm.requests == []


def test_key_never_logged(client, llm, caplog):
    t = tenant_with_keys(client, "openai", "anthropic", "gemini")
    llm.script("anthropic", {"status": 401})
    with caplog.at_level(logging.DEBUG):
        for model in ("gpt-4o", "claude-sonnet-4-0", "gemini-2.5-flash"):
            ask(client, t, model)
    logged = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert logged  # something was logged at all
    for key in KEYS.values():
        assert key not in logged


def test_per_workspace_rate_limit(client, llm, live):
    t = tenant_with_keys(client, "openai")
    live.svc.settings.rate_limit_ai = "2/minute"
    try:
        assert ask(client, t, "gpt-4o").status_code == 200
        assert ask(client, t, "gpt-4o").status_code == 200
        error(ask(client, t, "gpt-4o"), "RESOURCE_EXHAUSTED")
        other = tenant_with_keys(client, "openai")
        assert ask(client, other, "gpt-4o").status_code == 200
    finally:
        live.svc.settings.rate_limit_ai = "120/minute"


def test_per_workspace_concurrency_limit(client, llm, live):
    t = tenant_with_keys(client, "openai")
    # Every slot held by another (live) holder; holds expire at their score (ms of Redis time).
    holders = {f"h{i}": 9_999_999_999_999 for i in range(live.settings.ai_max_concurrency)}
    live.run(live.svc.redis.zadd(f"collab:conc:ai:{t.workspace['id']}", holders))
    try:
        error(ask(client, t, "gpt-4o"), "RESOURCE_EXHAUSTED")
    finally:
        live.run(live.svc.redis.delete(f"collab:conc:ai:{t.workspace['id']}"))
    assert ask(client, t, "gpt-4o").json()["result"]["success"] is True
