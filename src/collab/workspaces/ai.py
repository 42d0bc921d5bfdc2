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
from collab.llm.client import LlmError, complete, messages_for
from collab.llm.routing import EXTRACTION_PROVIDERS as PROVIDERS
from collab.llm.routing import base_url, resolve
from collab.workspaces.config import model_key

log = logging.getLogger("collab.workspaces.ai")
A = TypeVar("A", bound=BaseModel)


class Malformed(Exception):
    """The model answered twice, and neither answer had the expected shape."""


async def provider_key(svc: Services, tenant: Tenant, provider: str) -> tuple[str, bool]:
    """The key to call the provider with, and whether it is the platform's own (then the quota applies)."""
    if provider not in PROVIDERS:
        # Velt answers INTERNAL; a caller's bad value is a 400 here, never a 500 (ADR 0056).
        message = f"Unknown provider '{provider}': use openai, claude or gemini."
        raise invalid(message, [issue(["provider"], message)])
    spec = PROVIDERS[provider]
    key, platform = await model_key(svc, tenant=tenant, provider=spec)
    if key is None:
        raise ApiError("FAILED_PRECONDITION", f"No API key configured for provider: {spec.display}")
    return key, platform


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
    key, platform = await provider_key(svc, tenant, provider)
    prompt = prompts.get(prompt_name, settings.prompts_dir)
    route = resolve(prompt.models[provider])
    system, user = prompt.render(**variables)
    messages = messages_for(route, system=system, user=user)
    response_format = {
        "type": "json_schema", "json_schema": {"name": prompt.name, "schema": prompt.schema, "strict": True}
    }
    for attempt in (1, 2):
        if platform:
            await quota_left(svc, tenant.workspace_id)
        left = deadline - time.monotonic()
        if left <= 0:
            raise ApiError("DEADLINE_EXCEEDED", f"{route.provider.display} did not answer in time; retry later.")
        try:
            completion = await complete(route, messages=messages, api_key=key,
                                        api_base=base_url(settings, route.provider),
                                        timeout_s=min(left,
                                                      settings.llm_call_timeout_s), attempts=settings.llm_attempts,
                                        backoff_s=settings.llm_retry_backoff_s, response_format=response_format)
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
