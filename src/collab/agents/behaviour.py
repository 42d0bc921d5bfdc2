"""An agent's behaviour as stored: the versioned fields, Velt's one-level merge of `agents/version/update`, and
the auth secrets inside a behaviour (sealed at rest, redacted on read). The request models are in schemas.py."""

import copy
from typing import Any, Callable, Iterator

import orjson

BEHAVIOUR_FIELDS = ("rawInstructions", "instructions", "phaseTimeoutMs", "contextGathering", "execution", "response",
                    "postProcess", "input", "scope", "setup")
# Blocks of `version/update` merged one level deep onto the stored ones (Velt's rule); the rest replace.
BLOCKS = ("contextGathering", "execution", "response", "postProcess", "input", "scope", "setup")
REDACTED = "__redacted__"
# One version's behaviour as JSON, at most: a versions/list page of them stays within reach of its byte budget.
MAX_BEHAVIOUR_BYTES = 1024 * 1024


def dump(model: Any) -> dict[str, Any]:
    """A validated block or behaviour as stored: as sent, by Velt's names, without what is discarded."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)


def behaviour_of(model: Any) -> dict[str, Any]:
    """The versioned fields of a validated request, as stored."""
    return {name: value for name, value in dump(model).items() if name in BEHAVIOUR_FIELDS}


def merged(stored: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Velt's one-level merge: each sent block's keys replace the stored block's, other fields replace whole."""
    out = copy.deepcopy(stored)
    for name, value in patch.items():
        if name in BLOCKS and isinstance(out.get(name), dict):
            out[name] = {**out[name], **value}
        else:
            out[name] = value
    return out


def size(behaviour: dict[str, Any]) -> int:
    """Bytes of a behaviour as JSON."""
    return len(orjson.dumps(behaviour))


# --- auth secrets: sealed at rest, redacted on read ---------------------------------------------------------------


def _auths(config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every auth object of a behaviour: REST endpoints' and MCP servers'."""
    options = (config.get("contextGathering") or {}).get("strategyOptions") or {}
    for endpoint in (options.get("rest-api") or {}).get("endpoints") or []:
        if isinstance(endpoint.get("auth"), dict):
            yield endpoint["auth"]
    for server in (config.get("execution") or {}).get("mcpServers") or []:
        if isinstance(server.get("auth"), dict):
            yield server["auth"]


def with_secrets(config: dict[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    """A copy of a behaviour with each secret (bearer token, basic password, header values) passed through `change`."""
    out = copy.deepcopy(config)
    for auth in _auths(out):
        for key in ("token", "password"):
            if isinstance(auth.get(key), str):
                auth[key] = change(auth[key])
        if isinstance(auth.get("headers"), dict):
            auth["headers"] = {name: change(value) for name, value in auth["headers"].items()}
    return out


def redacted(config: dict[str, Any]) -> dict[str, Any]:
    """A behaviour as reads show it: every secret replaced by Velt's placeholder."""
    return with_secrets(config, lambda _: REDACTED)
