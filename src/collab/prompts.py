"""Prompt files from prompts/: validated on load, strict variables, rendered by name."""

import json
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "prompts"
PROVIDERS = ("openai", "claude", "gemini")  # each prompt names its model for these; `ollama` and
# `openai-compatible` lines are optional (the workspace's entry or COLLAB_<PROVIDER>_MODEL names the model first)


class PromptError(Exception):
    """A prompt file that does not follow prompts/README.md, or a render with the wrong variables."""


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    variables: frozenset[str]
    system: Template
    user: Template
    schema: dict[str, Any]
    models: dict[str, str]
    # The `[messages.small]` variant for small models (system, user), where the file has one.
    small: tuple[Template, Template] | None = None

    def render(self, *, small: bool = False, **values: Any) -> tuple[str, str]:
        """(system, user) with every declared variable filled; missing or extra ones are errors. `small`: the
        small-model variant, where the prompt has one."""
        given = set(values)
        if given != self.variables:
            raise PromptError(f"prompt {self.name}: missing {sorted(self.variables - given)},"
                              f" unexpected {sorted(given - self.variables)}")
        strings = {k: str(v) for k, v in values.items()}
        system, user = self.small if small and self.small is not None else (self.system, self.user)
        return system.substitute(strings).strip(), user.substitute(strings).strip()


def load(path: Path) -> Prompt:
    """Read and validate one prompt file."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PromptError(f"{path.name}: {exc}") from exc
    for key in ("name", "version", "variables", "output_schema", "models", "messages"):
        if key not in data:
            raise PromptError(f"{path.name}: missing key {key!r}")
    if data["name"] != path.stem:
        raise PromptError(f"{path.name}: name {data['name']!r} does not match the file name")
    missing_models = [p for p in PROVIDERS if p not in data["models"]]
    if missing_models:
        raise PromptError(f"{path.name}: no model for {missing_models}")
    system, user = _templates(path, data["messages"], set(data["variables"]))
    small = None
    if isinstance(data["messages"].get("small"), dict):
        small_system, small_user = _templates(path, data["messages"]["small"], set(data["variables"]))
        small = (small_system, small_user)
    declared = set(data["variables"])
    schema_path = path.with_name(data["output_schema"])
    try:
        schema = json.loads(schema_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PromptError(f"{path.name}: output schema {schema_path.name}: {exc}") from exc
    if schema.get("type") != "object":
        raise PromptError(f"{path.name}: the output schema must describe an object")
    return Prompt(name=data["name"], version=int(data["version"]), variables=frozenset(declared), system=system,
                  user=user, schema=schema, models=dict(data["models"]), small=small)


def _templates(path: Path, messages: dict[str, Any], declared: set[str]) -> tuple[Template, Template]:
    """A (system, user) pair of templates, using every declared variable and nothing else."""
    system, user = Template(messages.get("system", "")), Template(messages.get("user", ""))
    for template in (system, user):
        if not template.is_valid():
            raise PromptError(f"{path.name}: a $ that is neither a variable nor $$")
    used = set(system.get_identifiers()) | set(user.get_identifiers())
    if used != declared:
        raise PromptError(f"{path.name}: undeclared {sorted(used - declared)}, unused {sorted(declared - used)}")
    return system, user


@lru_cache
def load_all(directory: str | None = None) -> dict[str, Prompt]:
    """Every prompt of the directory, by name."""
    root = Path(directory) if directory else DEFAULT_DIR
    return {p.stem: load(p) for p in sorted(root.glob("*.toml"))}


def get(name: str, directory: str | None = None) -> Prompt:
    """One prompt by name."""
    prompts = load_all(directory)
    if name not in prompts:
        raise PromptError(f"no prompt named {name!r} in {directory or DEFAULT_DIR}")
    return prompts[name]
