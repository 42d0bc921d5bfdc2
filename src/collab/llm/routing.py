"""Which provider serves a model: a data table of name prefixes (DESIGN.md §5, docs/adr/0061)."""

import re
from dataclasses import dataclass
from typing import Any

from collab.kit.errors import ApiError, issue


@dataclass(frozen=True)
class Provider:
    """A model provider: its id in settings and keys, its litellm route, its display name, and whether it is a
    server the team runs (then its base URL, not the model name, says where it is)."""

    id: str
    litellm_prefix: str
    display: str
    self_hosted: bool = False

    @property
    def setting(self) -> str:
        """The stem of its settings: COLLAB_<SETTING>_BASE_URL, _API_KEY (and _MODEL for a self-hosted one)."""
        return self.id.replace("-", "_")


OPENAI = Provider("openai", "openai", "OpenAI")
ANTHROPIC = Provider("anthropic", "anthropic", "Anthropic")
# Google AI Studio, litellm's `gemini/` route (never Vertex).
GEMINI = Provider("gemini", "gemini", "Gemini")
# An Ollama server, through litellm's native route (`/api/chat`, where a JSON schema becomes Ollama's `format`).
OLLAMA = Provider("ollama", "ollama_chat", "Ollama", self_hosted=True)
# Any server that speaks OpenAI's chat completions: vLLM, llama.cpp's llama-server, LM Studio, a gateway, the
# embedded model of `COLLAB_LOCAL_MODEL`. litellm's `openai/` route with the server's base URL.
OPENAI_COMPATIBLE = Provider("openai-compatible", "openai", "OpenAI-compatible server", self_hosted=True)
PROVIDERS = {p.id: p for p in (OPENAI, ANTHROPIC, GEMINI, OLLAMA, OPENAI_COMPATIBLE)}
# Extraction names its providers openai, claude, gemini (spec), and the self-hosted kinds by their ids.
EXTRACTION_PROVIDERS = {
    "openai": OPENAI, "claude": ANTHROPIC, "gemini": GEMINI, "ollama": OLLAMA, "openai-compatible": OPENAI_COMPATIBLE
}
SELF_HOSTED = {name for name, p in EXTRACTION_PROVIDERS.items() if p.self_hosted}

# (pattern, provider, o_series). o-series: prompt folded into the user message, no sampling parameters. A
# self-hosted model is named `<provider id>/<the server's own name for it>`; the name group is what it is sent.
ROUTES: list[tuple[re.Pattern, Provider,
                   bool]] = [(re.compile(r"^o[134](-.+)?$"), OPENAI, True), (re.compile(r"^gpt-.+$"), OPENAI, False),
                             (re.compile(r"^claude-.+$"), ANTHROPIC, False),
                             (re.compile(r"^gemini-.+$"), GEMINI, False),
                             (re.compile(r"^ollama/(?P<name>\S{1,200})$"), OLLAMA, False),
                             (re.compile(r"^openai-compatible/(?P<name>\S{1,200})$"), OPENAI_COMPATIBLE, False)]

# A size in a model's name: `qwen2.5:1.5b`, `llama3.2-3b-instruct`, `smollm2-135m` (billions or millions).
_SIZE = re.compile(r"(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)([bm])(?:$|[^a-z0-9])", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    """A resolved model: provider, the name the provider is sent, and whether it is an o-series model."""

    provider: Provider
    model: str
    o_series: bool

    @property
    def litellm_model(self) -> str:
        return f"{self.provider.litellm_prefix}/{self.model}"

    @property
    def name(self) -> str:
        """The model as callers name it (with its provider's prefix when self-hosted)."""
        return f"{self.provider.id}/{self.model}" if self.provider.self_hosted else self.model

    @property
    def params_b(self) -> float | None:
        """The size the model's name declares, in billions of parameters; None when it declares none."""
        match = _SIZE.search(self.model)
        if match is None:
            return None
        return float(match.group(1)) / (1000 if match.group(2).lower() == "m" else 1)


def resolve(model: str) -> Route:
    """Route a model name by its prefix; INVALID_ARGUMENT for any other name."""
    name = model.strip()
    for pattern, provider, o_series in ROUTES:
        match = pattern.match(name)
        if match:
            return Route(provider, match.groupdict().get("name") or name, o_series)
    message = (f"Unsupported model '{model}': use a gpt-, o1, o3, o4, claude- or gemini- model, or ollama/<model> or "
               "openai-compatible/<model> for a server you run.")
    raise ApiError("INVALID_ARGUMENT", message, details={"issues": [issue(["model"], message, "invalid_enum_value")]})


def small(settings, route: Route) -> bool:
    """Whether a model gets prompts' `small` variants: its name declares a size at most the configured one."""
    size = route.params_b
    return size is not None and size <= settings.small_model_max_params_b


def for_eval(settings, model: str) -> tuple[str, Any]:
    """(the extraction provider name, settings) with which an eval answers with `model`, a server the team runs
    (`ollama/<model>`, `openai-compatible/<model>`), found at the platform's base URL for it."""
    try:
        route = resolve(model)
    except ApiError as exc:
        raise SystemExit(f"--model: {exc.message}") from None
    if not route.provider.self_hosted:
        raise SystemExit("--model takes a server you run: ollama/<model> or openai-compatible/<model> (a cloud "
                         "provider's model is the prompt file's; use --provider)")
    if base_url(settings, route.provider) is None:
        raise SystemExit(f"--model {model}: set COLLAB_{route.provider.setting.upper()}_BASE_URL to the server")
    return route.provider.id, settings.model_copy(update={f"{route.provider.setting}_model": route.model})


def base_url(settings, provider: Provider) -> str | None:
    """The platform's endpoint for a provider (COLLAB_<PROVIDER>_BASE_URL), if any."""
    return getattr(settings, f"{provider.setting}_base_url")


def platform_key(settings, provider: Provider) -> str | None:
    """The platform's own key for a provider (COLLAB_<PROVIDER>_API_KEY), if any."""
    return getattr(settings, f"{provider.setting}_api_key")


def platform_model(settings, provider: Provider) -> str | None:
    """The model the platform's self-hosted server answers with (COLLAB_<PROVIDER>_MODEL), if any."""
    return getattr(settings, f"{provider.setting}_model", None) if provider.self_hosted else None
