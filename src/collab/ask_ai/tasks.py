"""The Ask AI job: runs in the worker, the only place the customer's provider key is decrypted."""

from typing import Any

from collab.kit import usage
from collab.kit.auth import Tenant
from collab.kit.jobs import job, past
from collab.kit.services import Services
from collab.llm.client import LlmError, complete, messages_for
from collab.llm.routing import resolve
from collab.workspaces import model_servers


# Awaited by the API: a timeout just past its own deadline; a second try only when the first ended without an
# outcome (its worker died or was stopped) while the caller still waits.
@job(lane="ai", awaited=True, timeout=past("ask_ai_timeout_s"), max_tries=2)
async def ask_ai(ctx: dict, *, api_key_id: str, workspace_id: str, model: str, prompt: str,
                 text: str) -> dict[str, Any]:
    """Rewrite `text` following `prompt` with the workspace's own key for the model's provider."""
    svc: Services = ctx["svc"]
    settings = svc.settings
    route = resolve(model)
    tenant = Tenant(api_key_id=api_key_id, workspace_id=workspace_id)
    # The workspace's own key (Ask AI never spends the platform's), or its own model server, else the platform's.
    found = await model_servers.access(svc, tenant=tenant, provider=route.provider, platform_keys=False)
    if found is None:
        what = "model server" if route.provider.self_hosted else "API key"
        return {"success": False, "error": f"No {what} configured for provider: {route.provider.display}"}
    usage.count(svc, "ask_ai", workspace_id=workspace_id, label=route.provider.id)  # calls made to the provider
    try:
        completion = await complete(route, messages=messages_for(route, system=prompt, user=text), api_key=found.key,
                                    api_base=found.base_url, timeout_s=settings.llm_call_timeout_s,
                                    attempts=settings.llm_attempts, backoff_s=settings.llm_retry_backoff_s)
    except LlmError as exc:
        # The caller chose the model: a request the provider refuses is the caller's to fix.
        raise exc.answer(route.provider.display, bad_request="INVALID_ARGUMENT") from None
    return {"success": True, "text": completion.text}
