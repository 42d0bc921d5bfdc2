"""The Ask AI job: runs in the worker, the only place the customer's provider key is decrypted."""

from typing import Any

from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.services import Services
from collab.llm.client import LlmError, complete, messages_for
from collab.llm.routing import base_url, resolve
from collab.workspaces.config import provider_api_key


async def ask_ai(ctx: dict, *, api_key_id: str, workspace_id: str, model: str, prompt: str, text: str) -> dict[str, Any]:
    """Rewrite `text` following `prompt` with the workspace's own key for the model's provider."""
    svc: Services = ctx["svc"]
    settings = svc.settings
    route = resolve(model)
    tenant = Tenant(api_key_id=api_key_id, workspace_id=workspace_id)
    try:
        key = await provider_api_key(svc, tenant=tenant, provider=route.provider.id)
    except ApiError as exc:
        return {"failure": exc.code, "message": exc.message}
    if key is None:
        return {"success": False, "error": f"No API key configured for provider: {route.provider.display}"}
    try:
        completion = await complete(
            route,
            messages=messages_for(route, system=prompt, user=text),
            api_key=key,
            api_base=base_url(settings, route.provider),
            timeout_s=settings.llm_call_timeout_s,
            attempts=settings.llm_attempts,
            backoff_s=settings.llm_retry_backoff_s,
        )
    except LlmError as exc:
        return {"failure": exc.kind, "message": exc.message, "provider": route.provider.display}
    return {"success": True, "text": completion.text}
