"""The workspace's model asked for one structured answer: its key (or the platform's, under the quota), the
prompt file, a deadline, and one repair of a malformed answer."""

import logging
import time
from typing import TypeVar

from pydantic import BaseModel

from collab import prompts
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError, invalid, issue
from collab.kit.services import Services
from collab.llm import quota
from collab.llm.answers import AnswerError, parse
from collab.llm.client import LlmError, complete, messages_for, response_format
from collab.llm.routing import EXTRACTION_PROVIDERS as PROVIDERS
from collab.llm.routing import Route, resolve, small
from collab.workspaces import model_servers
from collab.workspaces.model_servers import ModelAccess

log = logging.getLogger("collab.workspaces.ai")
A = TypeVar("A", bound=BaseModel)


class Malformed(Exception):
    """The model answered twice, and neither answer had the expected shape."""


async def provider_access(svc: Services, tenant: Tenant, provider: str) -> ModelAccess:
    """How to call the provider (an extraction `provider` value): the workspace's key or model server, else the
    platform's (then `platform`: the quota applies)."""
    if provider not in PROVIDERS:
        # Velt answers INTERNAL; a caller's bad value is a 400 here, never a 500 (ADR 0056).
        message = f"Unknown provider '{provider}': use {', '.join(PROVIDERS)}."
        raise invalid(message, [issue(["provider"], message)])
    spec = PROVIDERS[provider]
    found = await model_servers.access(svc, tenant=tenant, provider=spec)
    if found is None:
        if spec.self_hosted:
            raise ApiError(
                "FAILED_PRECONDITION", f"No {spec.display} configured: set its baseUrl in aiModelApiKey "
                f"(workspace/apikeyconfig/update) or COLLAB_{spec.setting.upper()}_BASE_URL")
        raise ApiError("FAILED_PRECONDITION", f"No API key configured for provider: {spec.display}")
    return found


def route_for(prompt: prompts.Prompt, provider: str, found: ModelAccess) -> Route:
    """The model a prompt is sent to for an extraction `provider`: the prompt file's line for a cloud provider; for
    a server the team runs, the model its entry (or the platform's setting) names, else the prompt file's line."""
    spec = PROVIDERS[provider]
    if not spec.self_hosted:
        return resolve(prompt.models[provider])
    model = found.model or prompt.models.get(provider)
    if not model:
        raise ApiError(
            "FAILED_PRECONDITION", f"No model named for {spec.display}: set model in aiModelApiKey "
            f"(workspace/apikeyconfig/update) or COLLAB_{spec.setting.upper()}_MODEL")
    return resolve(model if model.startswith(f"{spec.id}/") else f"{spec.id}/{model}")


async def quota_left(svc: Services, workspace_id: str) -> None:
    """Refuse (RESOURCE_EXHAUSTED, Retry-After) once the workspace's platform-key quota for the day is spent."""
    retry_after = await quota.exhausted(svc, workspace_id=workspace_id)
    if retry_after is not None:
        raise ApiError("RESOURCE_EXHAUSTED", quota.SPENT, details={"retryAfterSeconds": retry_after},
                       headers={"Retry-After": str(retry_after)})


async def structured(svc: Services, *, tenant: Tenant, provider: str, prompt_name: str, shape: type[A],
                     variables: dict[str, object], timeout_s: float) -> A:
    """One answer of `shape` from the prompt's model for `provider`; a malformed one is sent back for repair once,
    then `Malformed`. Provider failures are `LlmError.answer`s; the whole exchange keeps within `timeout_s`."""
    settings = svc.settings
    deadline = time.monotonic() + timeout_s
    found = await provider_access(svc, tenant, provider)
    platform = found.platform
    prompt = prompts.get(prompt_name, settings.prompts_dir)
    route = route_for(prompt, provider, found)
    system, user = prompt.render(small=small(settings, route), **variables)
    messages = messages_for(route, system=system, user=user)
    structure = response_format(found.structured, name=prompt.name, schema=prompt.schema)
    for attempt in (1, 2):
        if platform:
            await quota_left(svc, tenant.workspace_id)
        left = deadline - time.monotonic()
        if left <= 0:
            raise ApiError("DEADLINE_EXCEEDED", f"{route.provider.display} did not answer in time; retry later.")
        try:
            completion = await complete(route, messages=messages, api_key=found.key, api_base=found.base_url,
                                        timeout_s=min(left,
                                                      settings.llm_call_timeout_s), attempts=settings.llm_attempts,
                                        backoff_s=settings.llm_retry_backoff_s, response_format=structure)
        except LlmError as exc:
            if platform:
                await quota.record(svc, workspace_id=tenant.workspace_id, calls=1, tokens=0)
            raise exc.answer(route.provider.display) from None
        if platform:
            await quota.record(svc, workspace_id=tenant.workspace_id, calls=1,
                               tokens=completion.prompt_tokens + completion.completion_tokens)
        try:
            return parse(completion.text, shape)
        except AnswerError as exc:
            log.warning("malformed %s answer (attempt %d): %s", prompt.name, attempt, exc)
            messages = messages + [{"role": "assistant", "content": completion.text[:20_000]}, {
                "role": "user", "content": f"That answer is invalid ({exc})."
                " Answer again with JSON only, following the schema exactly."
            }]
    raise Malformed()
