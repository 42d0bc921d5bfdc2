"""One call to a model through litellm, with retries inside a budget and errors classified."""

import asyncio
import functools
import importlib.util
import logging
import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collab.kit.errors import ApiError
from collab.llm.routing import Route

log = logging.getLogger("collab.llm")


def _prepare_litellm_environment() -> None:
    # No network at import (local cost map) and no tokenizer download on a first Anthropic/Gemini call:
    # point tiktoken at the encodings litellm ships.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    spec = importlib.util.find_spec("litellm")
    if spec and spec.submodule_search_locations:
        tokenizers = Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(tokenizers))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@functools.cache
def load_litellm() -> Any:
    """litellm, imported once, by the worker at start (make_worker): only workers call models, and the import costs
    seconds and ~100 MiB that the API processes (which import the job declarations, kit/jobs/registry.py) skip."""
    _prepare_litellm_environment()
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = False
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
    return litellm


_SECRET = re.compile(r"""(api[_-]?key['"]?\s*[:=]\s*['"]?)[^'",\s)]+""", re.IGNORECASE)


class _NoSecrets(logging.Filter):
    """litellm's debug lines echo call arguments, keys included: drop them, and scrub keys from the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO:
            return False
        record.msg = _SECRET.sub(r"\1[redacted]", record.getMessage())
        record.args = ()
        return True


for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
    logging.getLogger(_name).addFilter(_NoSecrets())

# A provider's failure, by kind, as the caller is answered (`LlmError.answer`).
_FAILURES = {
    "rate_limited": ("RESOURCE_EXHAUSTED", "{provider} is rate limiting requests; retry later."),
    "unavailable": ("UNAVAILABLE", "{provider} is unavailable; retry later."),
    # A provider that hangs past the call's budget is the request's deadline (504), whichever timer fires first.
    "timeout": ("DEADLINE_EXCEEDED", "{provider} did not answer in time; retry later."),
    "auth": ("FAILED_PRECONDITION", "The {provider} API key configured for this workspace was rejected by {provider}."),
    "bad_request": ("INTERNAL", "{message}")
}


class LlmError(Exception):
    """A failed model call; `kind` is one of: rate_limited, unavailable, auth, bad_request, timeout.

    `message` is generic and may be shown to tenants; the provider's own text (which can echo request content,
    account details or upstream internals) is only logged.
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message

    def answer(self, provider: str, *, bad_request: str = "INTERNAL") -> ApiError:
        """The failure as the caller is answered, naming the provider (`bad_request`: the code of a refused
        request, the caller's fault where the caller chose the model)."""
        code, template = _FAILURES.get(self.kind, ("INTERNAL", "{message}"))
        return ApiError(bad_request if self.kind == "bad_request" else code,
                        template.format(provider=provider, message=self.message))


TRANSIENT = {"rate_limited", "unavailable", "timeout"}


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


def _causes(exc: BaseException) -> list[BaseException]:
    """The exceptions beneath one (at most 8 deep)."""
    found: list[BaseException] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(found) < 8:
        found.append(cause)
        cause = cause.__cause__ or cause.__context__
    return found


def _server_status(exc: BaseException) -> int | None:
    """The HTTP status the server answered, beneath litellm's wrapping: litellm reports every failure of its Ollama
    route as a connection error with status 500, and keeps the server's answer among the causes."""
    statuses = (getattr(c, "status_code", None) for c in _causes(exc))
    return next((s for s in statuses if isinstance(s, int)), None)


def _timed_out(exc: BaseException) -> bool:
    """Whether a wrapped failure was the HTTP client's timeout (litellm's Ollama route wraps that too)."""
    return any(isinstance(c, TimeoutError) or "Timeout" in type(c).__name__ for c in _causes(exc))


def _classify(exc: Exception) -> LlmError:
    litellm = load_litellm()
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.APIConnectionError):
        if _timed_out(exc):
            return LlmError("timeout", "The model provider did not answer in time.")
        status = _server_status(exc)  # None: no answer at all (refused, reset, not HTTP)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return LlmError("rate_limited", "The model provider is rate limiting requests.")
    if isinstance(exc, litellm.AuthenticationError) or status in (401, 403):
        return LlmError("auth", "The model provider rejected the API key.")
    if isinstance(exc, litellm.Timeout) or isinstance(exc, asyncio.TimeoutError):
        return LlmError("timeout", "The model provider did not answer in time.")
    if isinstance(exc, (litellm.BadRequestError, litellm.NotFoundError)) or status in (400, 404, 422):
        log.warning("model provider refused the request (%s): %s", name, _short(exc))
        return LlmError("bad_request",
                        "The model provider refused the request (unknown model, or input it does not accept).")
    if isinstance(exc, (litellm.APIConnectionError, litellm.ServiceUnavailableError, litellm.InternalServerError)):
        return LlmError("unavailable", "The model provider is unavailable.")
    if status is not None and status >= 500:
        return LlmError("unavailable", "The model provider is unavailable.")
    log.warning("unclassified model error %s: %s", name, _short(exc))
    return LlmError("unavailable", "The model provider call failed.")


def _short(exc: Exception) -> str:
    text = str(getattr(exc, "message", "") or exc)
    return text.replace("\n", " ")[:300]


def messages_for(route: Route, *, system: str, user: str) -> list[dict[str, str]]:
    """System + user messages; o-series models get the instruction prepended in one user message."""
    if route.o_series:
        return [{"role": "user", "content": f"{system}\n\n{user}"}]
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def response_format(mode: str, *, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """How a structured answer is asked for: `json_schema` (OpenAI's strict schema; Ollama's `format`, vLLM's guided
    JSON, llama-server's grammar through litellm), `json_object` with the schema beside it (llama-cpp-python's
    server), or `none` (the answer is validated, and sent back for repair once)."""
    if mode == "none":
        return None
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


async def complete(route: Route, *, messages: list[dict[str, str]], api_key: str, api_base: str | None,
                   timeout_s: float, attempts: int = 3, backoff_s: float = 1.0,
                   response_format: dict[str, Any] | None = None) -> Completion:
    """Call the model, retrying transient failures with backoff while the budget lasts."""
    deadline = time.monotonic() + timeout_s
    kwargs: dict[str, Any] = {
        "model": route.litellm_model,
        "messages": messages,
        "api_key": api_key,
        "max_retries": 0  # retries are ours, inside the budget
    }
    if api_base:
        kwargs["api_base"] = api_base
    if response_format is not None:
        kwargs["response_format"] = response_format
    last: LlmError | None = None
    for attempt in range(1, attempts + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        started = time.perf_counter()
        try:
            response = await asyncio.wait_for(load_litellm().acompletion(timeout=left, **kwargs), timeout=left + 1)
        except Exception as exc:  # classified below; nothing unknown escapes as a 500
            last = _classify(exc)
            log.info("model call %s failed (attempt %d): %s", route.model, attempt, last.kind)
            if last.kind not in TRANSIENT or attempt == attempts:
                raise last from None
            await asyncio.sleep(min(backoff_s * 2**(attempt - 1), max(0.0, deadline - time.monotonic())))
            continue
        usage = getattr(response, "usage", None)
        completion = Completion(text=response.choices[0].message.content or "",
                                prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                                completion_tokens=getattr(usage, "completion_tokens", 0) or 0, latency_ms=round(
                                    (time.perf_counter() - started) * 1000, 1))
        log.info("model call %s ok in %.0f ms", route.litellm_model, completion.latency_ms,
                 extra={"tokens": {"prompt": completion.prompt_tokens, "completion": completion.completion_tokens}})
        return completion
    raise last or LlmError("timeout", "The model provider did not answer in time.")
