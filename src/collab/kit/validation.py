"""Turn pydantic and FastAPI validation errors into details.issues entries."""

from typing import Any, Iterable

# Codes follow the names that JavaScript clients of this API already know (zod's).
_CODES = {
    "missing": "invalid_type",
    "json_invalid": "invalid_json",
    "json_type": "invalid_type",
    "string_too_short": "too_small",
    "too_short": "too_small",
    "greater_than": "too_small",
    "greater_than_equal": "too_small",
    "string_too_long": "too_big",
    "too_long": "too_big",
    "less_than": "too_big",
    "less_than_equal": "too_big",
    "literal_error": "invalid_enum_value",
    "enum": "invalid_enum_value",
    "extra_forbidden": "unrecognized_keys",
    "string_pattern_mismatch": "invalid_string",
    "value_error": "custom",
    "assertion_error": "custom",
}


def _code(error_type: str) -> str:
    if error_type in _CODES:
        return _CODES[error_type]
    if error_type.endswith("_type") or error_type.endswith("_parsing") or error_type == "int_from_float":
        return "invalid_type"
    return "custom"


def _message(error: dict[str, Any]) -> str:
    if error["type"] == "missing":
        return "Required"
    msg = str(error.get("msg", "Invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg


def issues_from_errors(errors: Iterable[dict[str, Any]], strip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One issue per failing field, with `path` relative to `data`."""
    out = []
    seen = set()
    for error in errors:
        loc = list(error.get("loc", ()))
        for head in strip:
            if loc and loc[0] == head:
                loc.pop(0)
        # Union members repeat the same field; pydantic names the member type in the loc.
        loc = [p for p in loc if not (isinstance(p, str) and ("[" in p or p in {"function-after", "function-wrap"}))]
        path = [str(p) for p in loc]
        entry = {"code": _code(error["type"]), "path": path, "message": _message(error)}
        key = (tuple(path), entry["code"])
        if key in seen:
            continue
        seen.add(key)
        out.append(entry)
    return out


def summary(issues: list[dict[str, Any]]) -> str:
    """A one-line message naming the failing fields."""
    if not issues:
        return "Invalid request."
    parts = []
    for entry in issues[:5]:
        where = ".".join(entry["path"]) or "body"
        parts.append(f"{where}: {entry['message']}")
    more = f" (+{len(issues) - 5} more)" if len(issues) > 5 else ""
    return "Invalid request: " + "; ".join(parts) + more
