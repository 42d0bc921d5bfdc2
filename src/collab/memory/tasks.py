"""Worker jobs of memory: ask and suggest, each awaited by its endpoint on the ai lane."""

from typing import Any

from collab.judgments import search
from collab.judgments.tasks import tenant_embedder
from collab.kit.auth import Tenant
from collab.kit.jobs import job, past
from collab.memory import ask, suggest
from collab.memory.schemas import AskMemory, SuggestDecision


@job(lane="ai", awaited=True, timeout=past("memory_timeout_s"), max_tries=2)
async def ask_memory(ctx: dict, *, api_key_id: str, workspace_id: str, data: dict) -> dict[str, Any]:
    """Answer one question from the tenant's judgments and knowledge (memory/ask)."""
    request = AskMemory.model_validate(data)
    # The annotation and recency shortcuts rank nothing by meaning (knowledge passages embed on their own).
    embedder = await tenant_embedder(ctx, api_key_id) if search.needs_model(request.search(limit=1)) else None
    return await ask.answer(ctx, tenant=Tenant(api_key_id=api_key_id, workspace_id=workspace_id), data=request,
                            embedder=embedder)


@job(lane="ai", awaited=True, timeout=past("memory_timeout_s"), max_tries=2)
async def suggest_decision(ctx: dict, *, api_key_id: str, workspace_id: str, data: dict) -> dict[str, Any]:
    """Suggest a decision for new content from the tenant's precedent (memory/suggest)."""
    request = SuggestDecision.model_validate(data)
    return await suggest.suggest(ctx, tenant=Tenant(api_key_id=api_key_id, workspace_id=workspace_id), data=request,
                                 embedder=await tenant_embedder(ctx, api_key_id))
