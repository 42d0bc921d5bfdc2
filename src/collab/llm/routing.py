"""Which provider serves a model: a data table of name prefixes (DESIGN.md §5)."""

import re
from dataclasses import dataclass

from collab.kit.errors import ApiError, issue


@dataclass(frozen=True)
class Provider:
    """A model provider: its id in settings and keys, its litellm route, and its display name."""

    id: str
    litellm_prefix: str
    display: str


OPENAI = Provider("openai", "openai", "OpenAI")
ANTHROPIC = Provider("anthropic", "anthropic", "Anthropic")
# Google AI Studio, litellm's `gemini/` route (never Vertex).
GEMINI = Provider("gemini", "gemini", "Gemini")
PROVIDERS = {p.id: p for p in (OPENAI, ANTHROPIC, GEMINI)}
# Extraction names its providers openai, claude, gemini (spec).
EXTRACTION_PROVIDERS = {"openai": OPENAI, "claude": ANTHROPIC, "gemini": GEMINI}

# (pattern, provider, o_series). o-series: prompt folded into the user message, no sampling parameters.
ROUTES: list[tuple[re.Pattern, Provider, bool]] = [(re.compile(r"^o[134](-.+)?$"), OPENAI, True),
                                                   (re.compile(r"^gpt-.+$"), OPENAI, False),
                                                   (re.compile(r"^claude-.+$"), ANTHROPIC, False),
                                                   (re.compile(r"^gemini-.+$"), GEMINI, False)]


@dataclass(frozen=True)
class Route:
    """A resolved model: provider, the name litellm is given, and whether it is an o-series model."""

    provider: Provider
    model: str
    o_series: bool

    @property
    def litellm_model(self) -> str:
        return f"{self.provider.litellm_prefix}/{self.model}"


def resolve(model: str) -> Route:
    """Route a model name by its prefix; INVALID_ARGUMENT for any other name."""
    name = model.strip()
    for pattern, provider, o_series in ROUTES:
        if pattern.match(name):
            return Route(provider, name, o_series)
    message = f"Unsupported model '{model}': use a gpt-, o1, o3, o4, claude- or gemini- model."
    raise ApiError("INVALID_ARGUMENT", message, details={"issues": [issue(["model"], message, "invalid_enum_value")]})


def base_url(settings, provider: Provider) -> str | None:
    """The configured endpoint override for a provider (COLLAB_<PROVIDER>_BASE_URL), if any."""
    return getattr(settings, f"{provider.id}_base_url")


def platform_key(settings, provider: Provider) -> str | None:
    """The platform's own key for a provider (COLLAB_<PROVIDER>_API_KEY), if any."""
    return getattr(settings, f"{provider.id}_api_key")
