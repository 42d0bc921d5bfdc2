"""Agent prompt tools (Velt's agents/prompt/enhance, refine, validate and agents/config/resolve).

The API side validates, applies the workspace's AI rate limit and awaits one job on the ai lane,
`agent_prompt_tool` (imported by the domain's `tasks.py`, so the worker declares it). The job asks the workspace's
model for structured JSON, checks it against the tool's answer model, asks once more on a malformed answer, and
then answers the tool's deterministic fallback, so a weak model never produces an invalid result
(docs/adr/0056-agent-prompt-tools.md).
"""

import logging
import re
from dataclasses import dataclass
from typing import Any, Callable

from collab.agents.prompt_schemas import (
    RESOLVABLE_STRATEGIES,
    Answer,
    EnhanceAnswer,
    EnhancePrompt,
    RefineAnswer,
    RefinePrompt,
    ResolveAnswer,
    ResolveConfig,
    ValidateAnswer,
    ValidatePrompt,
)
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.jobs import job, past, run_sync
from collab.kit.ratelimit import workload
from collab.kit.services import Services
from collab.workspaces import ai

log = logging.getLogger("collab.agents.prompt_tools")

# Velt's documented fallback of config/resolve: what it answers whenever the model call fails.
DEFAULT_CONFIG = {
    "extraction_strategies": ["web-page-text", "web-page-html", "web-page-screenshot"], "execution_strategy": "ai",
    "reasoning": "Default configuration applied"
}
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


# --- API side -----------------------------------------------------------------------------------------
async def enhance(svc: Services, *, tenant: Tenant, data: EnhancePrompt) -> dict[str, Any]:
    """Whether a prompt says enough to run, or one clarification question with options (`enhancedPrompt`)."""
    return await _run(svc, tenant, "enhance", data.provider, data.model_dump(exclude_none=True))


async def validate(svc: Services, *, tenant: Tenant, data: ValidatePrompt) -> dict[str, Any]:
    """A simple instruction expanded into a structured QA task (`validationResult`)."""
    return await _run(svc, tenant, "validate", data.provider, data.model_dump(exclude_none=True))


async def refine(svc: Services, *, tenant: Tenant, data: RefinePrompt) -> dict[str, Any]:
    """An analysis prompt refined from feedback on demo runs (`refinerResult`)."""
    return await _run(svc, tenant, "refine", data.provider, data.model_dump(exclude_none=True))


async def resolve_config(svc: Services, *, tenant: Tenant, data: ResolveConfig) -> dict[str, Any]:
    """Recommended context-gathering and execution strategies for instructions (`resolvedConfig`)."""
    return await _run(svc, tenant, "resolve", data.provider, data.model_dump(exclude_none=True))


async def _run(svc: Services, tenant: Tenant, tool: str, provider: str | None, values: dict[str, Any]):
    settings = svc.settings
    async with workload(svc.redis, bucket=f"ai:{tenant.workspace_id}", rate=settings.rate_limit_ai,
                        limit=settings.ai_max_concurrency, ttl_s=int(settings.ask_ai_timeout_s) + 30, now=svc.clock(),
                        rate_message="Too many AI requests for this workspace; retry later.",
                        busy_message="Too many AI requests in flight for this workspace; retry shortly."):
        return await run_sync(svc.redis, "agent_prompt_tool", timeout_s=settings.ask_ai_timeout_s,
                              api_key_id=tenant.api_key_id, workspace_id=tenant.workspace_id, tool=tool,
                              provider=provider or settings.extraction_default_provider, values=values)


# --- worker side --------------------------------------------------------------------------------------


def _context_fields(values: dict[str, Any]) -> str:
    fields = values.get("userContextFields") or []
    return "\n".join(f"- {f['id']}: {f['title']} ({f['type']})" for f in fields) or "none"


def _demos(values: dict[str, Any]) -> str:
    return "\n\n".join(f"[{d['demoId']}] {d['demoTitle']}\nExpected: {d['demoExpected']}\nFeedback: {d['feedback']}\n"
                       f"HTML:\n{d['demoHtml']}" for d in values["demoFeedback"])


def _undeclared_inputs(values: dict[str, Any]) -> list[dict[str, str]]:
    """validate's local check: every {{placeholder}} of the prompt that no user context field declares."""
    declared = {f["id"] for f in values.get("userContextFields") or []}
    names = dict.fromkeys(n for n in _PLACEHOLDER.findall(values["prompt"]) if n not in declared)
    return [{
        "name": name, "description": name.replace("_", " ").capitalize(), "example": "",
        "reason": f"The prompt uses {{{{{name}}}}} and no declared user context field provides it."
    } for name in names]


@dataclass(frozen=True)
class Tool:
    """One prompt tool: its prompt file, answer shape, variables, result key and deterministic fallback."""

    prompt: str
    shape: type[Answer]
    variables: Callable[[dict[str, Any]], dict[str, Any]]
    key: str
    fallback: Callable[[dict[str, Any]], dict[str, Any]]
    quiet: bool = False  # every failure of the model answers the fallback (Velt's resolver), not an error


TOOLS = {
    "enhance": Tool("agent_prompt_enhance", EnhanceAnswer,
                    lambda v: {"prompt": v["prompt"], "context_fields": _context_fields(v)}, "enhancedPrompt",
                    lambda v: {"requirement": None}),
    "validate": Tool(
        "agent_prompt_validate", ValidateAnswer,
        lambda v: {"prompt": v["prompt"], "context_fields": _context_fields(v)}, "validationResult", lambda v: {
            "analysis_prompt": v["prompt"], "requires_tool": "NONE", "response_descriptions": {}, "demos": {},
            "suggested_required_inputs": _undeclared_inputs(v)
        }),
    "refine": Tool(
        "agent_prompt_refine", RefineAnswer,
        lambda v: {"analysis_prompt": v["analysisPrompt"], "demo_count": len(v["demoFeedback"]), "demos": _demos(v)},
        "refinerResult", lambda v: {"analysis_prompt": v["analysisPrompt"], "response_descriptions": {}}),
    "resolve": Tool(
        "agent_config_resolve", ResolveAnswer, lambda v: {
            "instructions": v["instructions"], "raw_instructions": v.get("rawInstructions") or "none",
            "strategies": ", ".join(RESOLVABLE_STRATEGIES)
        }, "resolvedConfig", lambda v: dict(DEFAULT_CONFIG), quiet=True),
}


async def answer(svc: Services, *, tenant: Tenant, tool: str, provider: str, values: dict[str, Any]) -> dict[str, Any]:
    """The tool's result (`{key: ...}`): the model's checked answer, or the tool's fallback when it gave none."""
    spec = TOOLS[tool]
    try:
        return {spec.key: await _ask(svc, tenant, spec, provider, values)}
    except ai.Malformed:
        log.warning("%s: the model's answer was malformed after a retry; answering the fallback", tool)
        return {spec.key: spec.fallback(values)}
    except ApiError as exc:
        if not spec.quiet:
            raise
        log.warning("%s: the model call failed (%s: %s); answering the default", tool, exc.code, exc.message)
        return {spec.key: spec.fallback(values)}


async def _ask(svc: Services, tenant: Tenant, spec: Tool, provider: str, values: dict[str, Any]) -> dict[str, Any]:
    """One structured answer of the tool's shape, as its result."""
    answer = await ai.structured(svc, tenant=tenant, provider=provider, prompt_name=spec.prompt, shape=spec.shape,
                                 variables=spec.variables(values), timeout_s=svc.settings.ask_ai_timeout_s - 1)
    return answer.result()


# Awaited by the API: a timeout just past its deadline; a second try only when the first ended without an outcome.
@job(lane="ai", awaited=True, timeout=past("ask_ai_timeout_s"), max_tries=2)
async def agent_prompt_tool(ctx: dict, *, api_key_id: str, workspace_id: str, tool: str, provider: str,
                            values: dict[str, Any]) -> dict[str, Any]:
    """Run one prompt tool (enhance, validate, refine, resolve) with the workspace's model."""
    tenant = Tenant(api_key_id=api_key_id, workspace_id=workspace_id)
    return await answer(ctx["svc"], tenant=tenant, tool=tool, provider=provider, values=values)
