"""Agent prompt tools (agents/prompt/enhance, validate, refine, agents/config/resolve) through velt-py's
AgentsService, the worker's ai lane and litellm to fake providers on 127.0.0.1: the model's checked answer in
Velt's shapes, one repair on a malformed answer, then each tool's documented fallback."""

import json

import pytest
from velt_py.models.agents import (
    EnhancePromptRequest,
    RefinePromptRequest,
    ResolveConfigRequest,
    ValidatePromptRequest,
)

from support.helpers import error, issue_paths, new_tenant, post, result

GARBAGE = "Sure! The prompt looks great to me."
DEFAULT_CONFIG = {
    "extraction_strategies": ["web-page-text", "web-page-html", "web-page-screenshot"], "execution_strategy": "ai",
    "reasoning": "Default configuration applied"
}
BROKEN_LINKS = "## Objective\nIdentify all broken links on the page."
FEEDBACK = {
    "demoId": "demo-1", "demoTitle": "Malformed mailto", "demoHtml": "<a href=\"mailto:invalid email@\">Email us</a>",
    "demoExpected": "detected", "feedback": "Malformed mailto links are broken links too."
}
CASE = {
    "id": "demo-1", "title": "Broken documentation link", "tier": "obvious_match",
    "dimension_tested": "HTTP status codes: 404", "html": "<a href=\"https://docs.example.com/api\">API</a>",
    "expected": "detected", "reason": "Link returns 404"
}


def tenant_with_key(client, provider="openai"):
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": provider, "customerApiKey": f"sk-{provider}-prompt-tools"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    return t


# Per tool: the velt-py call, its request, the model's well-formed answer, what the caller gets from it, the
# result key, the success message, and the documented fallback.
TOOLS = {
    "enhance": ("enhancePrompt", EnhancePromptRequest(prompt="Check that the page uses our brand colors"), {
        "requirement": "Please specify which brand colors to verify", "context": "We need the hex values",
        "suggestion": ["#1A73E8 only", "the whole palette"], "suggestion_type": "single-select"
    }, {
        "requirement": "Please specify which brand colors to verify", "context": "We need the hex values",
        "suggestion": ["#1A73E8 only", "the whole palette"], "suggestion_type": "single-select"
    }, "enhancedPrompt", "Prompt enhanced successfully", {"requirement": None}),
    "validate": ("validatePrompt", ValidatePromptRequest(prompt="Make sure there are no broken links on {{site_name}}"),
                 {
                     "analysis_prompt": BROKEN_LINKS, "requires_tool": "TOOL_TEXT_EXTRACTOR",
                     "response_descriptions": [{"field": "title", "description": "The broken link"}],
                     "demos": {"detection_dimensions": ["HTTP status codes"],
                               "cases": [CASE]}, "suggested_required_inputs": []
                 }, {
                     "analysis_prompt": BROKEN_LINKS, "requires_tool": "TOOL_TEXT_EXTRACTOR",
                     "response_descriptions": {"title": "The broken link"},
                     "demos": {"detection_dimensions": ["HTTP status codes"],
                               "cases": [CASE]}, "suggested_required_inputs": []
                 }, "validationResult", "Prompt validated successfully", {
                     "analysis_prompt": "Make sure there are no broken links on {{site_name}}", "requires_tool": "NONE",
                     "response_descriptions": {}, "demos": {}, "suggested_required_inputs": [{
                         "name": "site_name", "description": "Site name", "example": "",
                         "reason": "The prompt uses {{site_name}} and no declared user context field provides it."
                     }]
                 }),
    "refine": ("refinePrompt", RefinePromptRequest(analysisPrompt=BROKEN_LINKS, demoFeedback=[FEEDBACK]), {
        "analysis_prompt": BROKEN_LINKS + "\nInclude malformed mailto links.",
        "response_descriptions": [{"field": "severity", "description": "high for malformed mailto"}]
    }, {
        "analysis_prompt": BROKEN_LINKS + "\nInclude malformed mailto links.",
        "response_descriptions": {"severity": "high for malformed mailto"}
    }, "refinerResult", "Prompt refined successfully", {"analysis_prompt": BROKEN_LINKS, "response_descriptions": {}}),
    "resolve": ("resolveConfig", ResolveConfigRequest(instructions="Verify all CTAs use the brand color #1A73E8."), {
        "extraction_strategies": ["web-page-screenshot", "computed-styles"], "execution_strategy": "ai",
        "reasoning": "A visual check of rendered colours.",
        "computed_styles": {"selectors": [".cta"], "properties": []}
    }, {
        "extraction_strategies": ["web-page-screenshot", "computed-styles"], "execution_strategy": "ai",
        "reasoning": "A visual check of rendered colours.",
        "strategy_options": {"computed-styles": {"selectors": [".cta"]}}
    }, "resolvedConfig", "Config resolved successfully", DEFAULT_CONFIG),
}
PROMPTS = {
    "enhance": "agent_prompt_enhance", "validate": "agent_prompt_validate", "refine": "agent_prompt_refine",
    "resolve": "agent_config_resolve"
}


def call(sdk, t, tool):
    method, request, *_ = TOOLS[tool]
    return getattr(sdk(t).api.agents, method)(request)


def data_of(answer, tool):
    *_, key, message, _fallback = TOOLS[tool]
    assert answer["result"]["status"] == "success" and answer["result"]["message"] == message, answer
    assert set(answer["result"]["data"]) == {key}
    return answer["result"]["data"][key]


@pytest.mark.parametrize("tool", list(TOOLS))
def test_the_models_answer_comes_back_in_velts_shape(client, llm, sdk, tool):
    t = tenant_with_key(client)
    _, request, good, shown, *_ = TOOLS[tool]
    llm.script("openai", {"text": json.dumps(good)})
    assert data_of(call(sdk, t, tool), tool) == shown
    [sent] = llm.of("openai")
    body = sent["json"]
    assert sent["model"] == "gpt-4o-mini"
    assert sent["headers"]["authorization"] == "Bearer sk-openai-prompt-tools"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == PROMPTS[tool]
    first_input = next(iter(request.to_dict().values()))
    assert first_input in body["messages"][-1]["content"]


@pytest.mark.parametrize("tool", list(TOOLS))
def test_garbage_twice_answers_the_documented_fallback(client, llm, sdk, tool):
    t = tenant_with_key(client)
    llm.script("openai", {"text": GARBAGE}, {"text": GARBAGE})
    assert data_of(call(sdk, t, tool), tool) == TOOLS[tool][-1]
    first, second = llm.of("openai")
    assert "That answer is invalid" in second["json"]["messages"][-1]["content"]
    assert second["json"]["messages"][-2] == {"role": "assistant", "content": GARBAGE}


@pytest.mark.parametrize("tool", list(TOOLS))
def test_garbage_once_then_good_answers_the_good_one(client, llm, sdk, tool):
    t = tenant_with_key(client)
    _, _, good, shown, *_ = TOOLS[tool]
    llm.script("openai", {"text": "```json\n{\"half\": "}, {"text": json.dumps(good)})
    assert data_of(call(sdk, t, tool), tool) == shown
    assert len(llm.of("openai")) == 2


def test_a_sufficient_prompt_is_requirement_null_only(client, llm, sdk):
    t = tenant_with_key(client)
    llm.script(
        "openai",
        {"text": json.dumps({"requirement": None, "context": None, "suggestion": None, "suggestion_type": None})})
    assert data_of(call(sdk, t, "enhance"), "enhance") == {"requirement": None}


def test_a_clarification_without_its_options_is_retried(client, llm, sdk):
    t = tenant_with_key(client)
    half = {"requirement": "Which colours?", "context": None, "suggestion": None, "suggestion_type": None}
    llm.script("openai", {"text": json.dumps(half)}, {"text": json.dumps(TOOLS["enhance"][2])})
    assert data_of(call(sdk, t, "enhance"), "enhance") == TOOLS["enhance"][3]
    assert "context, suggestion and suggestion_type" in llm.of("openai")[1]["json"]["messages"][-1]["content"]


def test_declared_context_fields_reach_the_model_and_are_not_suggested_again(client, llm, sdk):
    t = tenant_with_key(client)
    fields = [{"id": "site_name", "title": "Site name", "type": "string"}]
    request = ValidatePromptRequest(prompt="Check {{site_name}} and {{brand}} for broken links",
                                    userContextFields=fields)
    llm.script("openai", {"text": GARBAGE}, {"text": GARBAGE})
    got = data_of(sdk(t).api.agents.validatePrompt(request), "validate")
    assert [i["name"] for i in got["suggested_required_inputs"]] == ["brand"]
    assert "- site_name: Site name (string)" in llm.of("openai")[0]["json"]["messages"][-1]["content"]


def test_resolve_without_selectors_for_computed_styles_is_retried(client, llm, sdk):
    t = tenant_with_key(client)
    inert = {**TOOLS["resolve"][2], "computed_styles": None}
    llm.script("openai", {"text": json.dumps(inert)}, {"text": json.dumps(inert)})
    assert data_of(call(sdk, t, "resolve"), "resolve") == DEFAULT_CONFIG


def test_resolve_answers_the_default_when_the_model_cannot_be_reached(client, llm, sdk):
    no_key = new_tenant(client)
    assert data_of(call(sdk, no_key, "resolve"), "resolve") == DEFAULT_CONFIG
    t = tenant_with_key(client)
    llm.script("openai", *[{"status": 500}] * 3)
    assert data_of(call(sdk, t, "resolve"), "resolve") == DEFAULT_CONFIG
    answer = sdk(t).api.agents.resolveConfig(ResolveConfigRequest(instructions="Check headings", provider="mistral"))
    assert data_of(answer, "resolve") == DEFAULT_CONFIG


@pytest.mark.parametrize("tool", ["enhance", "validate", "refine"])
def test_an_unknown_provider_is_refused_on_its_field_and_calls_no_model(client, llm, tool):
    t = tenant_with_key(client)
    body = {**TOOLS[tool][1].to_dict(), "provider": "mistral"}
    err = error(post(client, f"/v2/agents/prompt/{tool}", body, t.headers), "INVALID_ARGUMENT")
    assert "mistral" in err["message"] and issue_paths(err) == [["provider"]]
    assert llm.requests == []


def test_the_provider_override_picks_the_providers_model(client, llm, sdk):
    t = tenant_with_key(client, "anthropic")
    llm.script("anthropic", {"text": json.dumps(TOOLS["enhance"][2])})
    request = EnhancePromptRequest(prompt="Check the brand colors", provider="claude")
    assert data_of(sdk(t).api.agents.enhancePrompt(request), "enhance") == TOOLS["enhance"][3]
    [sent] = llm.of("anthropic")
    assert sent["model"] == "claude-sonnet-4-0" and sent["headers"]["x-api-key"] == "sk-anthropic-prompt-tools"


def test_another_workspaces_key_is_never_used(client, llm):
    tenant_with_key(client)  # A configured a key; B has none and no platform key is set
    b = new_tenant(client)
    err = error(post(client, "/v2/agents/prompt/enhance", {"prompt": "Check links"}, b.headers), "FAILED_PRECONDITION")
    assert err["message"] == "No API key configured for provider: OpenAI"
    assert llm.requests == []


def test_the_platform_key_serves_a_workspace_without_its_own(client, llm, live):
    t = new_tenant(client)
    live.svc.settings.gemini_api_key = "platform-gemini-key"
    try:
        llm.script("gemini", {"text": json.dumps(TOOLS["refine"][2])})
        body = {**TOOLS["refine"][1].to_dict(), "provider": "gemini"}
        assert result(post(client, "/v2/agents/prompt/refine", body, t.headers))["refinerResult"] == TOOLS["refine"][3]
    finally:
        live.svc.settings.gemini_api_key = None
    assert llm.of("gemini")[0]["headers"]["x-goog-api-key"] == "platform-gemini-key"


@pytest.mark.parametrize("path, body, paths", [
    ("/v2/agents/prompt/enhance", {}, [["prompt"]]),
    ("/v2/agents/prompt/enhance", {"prompt": "   ", "provider": 3, "userContextFields": [{"id": "x"}]},
     [["prompt"], ["provider"], ["userContextFields", "0", "title"], ["userContextFields", "0", "type"]]),
    ("/v2/agents/prompt/validate", {"prompt": "x" * 50_001}, [["prompt"]]),
    ("/v2/agents/prompt/refine", {"analysisPrompt": 5, "demoFeedback": []}, [["analysisPrompt"], ["demoFeedback"]]),
    ("/v2/agents/prompt/refine", {
        "analysisPrompt": "p", "demoFeedback": [{**FEEDBACK, "demoHtml": "", "feedback": None}]
    }, [["demoFeedback", "0", "demoHtml"], ["demoFeedback", "0", "feedback"]]),
    ("/v2/agents/config/resolve", {"instructions": "", "rawInstructions": ["x"]}, [["instructions"],
                                                                                   ["rawInstructions"]]),
])
def test_invalid_requests_list_every_failing_field(client, llm, path, body, paths):
    t = tenant_with_key(client)
    err = error(post(client, path, body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == sorted(paths)
    assert llm.requests == []


def test_velt_py_sees_a_validation_failure_as_velt_answers_it(client, sdk, llm):
    t = tenant_with_key(client)
    answer = sdk(t).api.agents.refinePrompt(RefinePromptRequest(analysisPrompt="p", demoFeedback=[]))
    assert answer["error"]["status"] == "INVALID_ARGUMENT"
    assert [i["path"] for i in answer["error"]["details"]["issues"]] == [["demoFeedback"]]
