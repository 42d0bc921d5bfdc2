"""Turn pydantic and FastAPI validation errors into details.issues entries."""

from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from pydantic import BaseModel, ValidationError, model_validator
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from collab.kit.errors import ApiError, invalid

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
    # Findings of `rules` (below).
    "rule": "custom",
    "required": "invalid_type"
}


def _code(error_type: str) -> str:
    if error_type in _CODES:
        return _CODES[error_type]
    if error_type.endswith("_type") or error_type.endswith("_parsing") or error_type == "int_from_float":
        return "invalid_type"
    return "custom"


def _message(error: Mapping[str, Any]) -> str:
    if error["type"] == "missing":
        return "Required"
    msg = str(error.get("msg", "Invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg


def issues_from_errors(errors: Iterable[Mapping[str, Any]], strip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
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


def failure(errors: Sequence[Mapping[str, Any]], strip: tuple[str, ...] = ()) -> ApiError:
    """INVALID_ARGUMENT listing every failing field. When all of them are ids left out that carry their own
    message (see `rules`), that message is the answer's, as Velt clients know it."""
    issues = issues_from_errors(errors, strip)
    if errors and all(e["type"] == "required" for e in errors):
        return invalid(issues[0]["message"], issues)
    return invalid(summary(issues), issues)


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


# --- rules over several fields -------------------------------------------------------------------------


class Broken(NamedTuple):
    """What a rule found wrong: the field it names (None: the body as a whole), the message and the issue code."""

    field: str | None
    message: str
    code: str = "custom"


# A rule reads the given values of its fields (absent and null read alike: `values.get(name)` is None) and
# answers None, one Broken, or a list of them.
Check = Callable[[Mapping[str, Any]], "Broken | list[Broken] | None"]
# Error types of rule findings: `required` keeps its own message as the answer's (the ids Velt clients know).
_TYPES = {"custom": "rule", "invalid_type": "required"}


def rule(*fields: str) -> Callable[[Check], tuple[tuple[str, ...], Check]]:
    """Declare a check over `fields` of a model; pass the results to `rules`."""
    return lambda check: (fields, check)


def _found(result: "Broken | list[Broken] | None") -> list[Broken]:
    return [] if result is None else [result] if isinstance(result, Broken) else list(result)


def _line(broken: Broken, value: Any) -> InitErrorDetails:
    loc = () if broken.field is None else (broken.field, )
    # The message goes in as context, never as the template: braces in it stay as written.
    kind = PydanticCustomError(_TYPES.get(broken.code, "rule"), "{message}", {"message": broken.message})
    return {"type": kind, "loc": loc, "input": value}


def _again(error: ErrorDetails) -> InitErrorDetails:
    """A pydantic error as it came, to raise again beside the rules' findings (type, location and message kept)."""
    context = {**(error.get("ctx") or {}), "message": error["msg"]}
    return {
        "type": PydanticCustomError(error["type"], "{message}", context), "loc": error["loc"], "input": error["input"]
    }


def rules(*declared: tuple[tuple[str, ...], Check]) -> Any:
    """A model validator running each rule, naming the field it is about. A rule runs when the model validates,
    and also when other fields fail but its own do not, so one answer lists every failing field (pydantic skips
    model validators as soon as one field fails). On that path a rule reads the values as sent: under strict
    types they are what validation keeps, for the presence and equality checks rules make."""

    def validate(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            model = handler(data)
        except ValidationError as exc:
            if not isinstance(data, dict):
                raise
            errors = exc.errors()
            failed = {e["loc"][0] for e in errors if e["loc"]}
            sent = _sent(cls, data)
            found = [
                _line(broken, data) for fields, check in declared if not failed & set(fields)
                for broken in _found(check({f: sent[f]
                                            for f in fields if f in sent}))
            ]
            if not found:
                raise
            raise ValidationError.from_exception_data(cls.__name__, [*map(_again, errors), *found]) from None
        given = model.model_fields_set
        found = [
            _line(broken, data) for fields, check in declared
            for broken in _found(check({f: getattr(model, f)
                                        for f in fields if f in given}))
        ]
        if found:
            raise ValidationError.from_exception_data(cls.__name__, found)
        return model

    # pydantic's stubs type the decorator form (where mypy unwraps @classmethod); a classmethod object is what it takes.
    return model_validator(mode="wrap")(classmethod(validate))  # type: ignore[arg-type]


def _sent(cls: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """The body's values by field name (a field sent under its alias included)."""
    sent = {}
    for name, info in cls.model_fields.items():
        alias = info.validation_alias
        names = [name] + ([alias] if isinstance(alias, str) else
                          [a for a in getattr(alias, "choices", []) if isinstance(a, str)])
        for key in names:
            if key in data:
                sent[name] = data[key]
                break
    return sent


def required(*fields: str) -> Callable[[dict[str, Any]], None]:
    """A model's json_schema_extra listing `fields` as required: fields a rule refuses to leave out or null."""

    def extra(schema: dict[str, Any]) -> None:
        schema["required"] = [*schema.get("required", []), *(f for f in fields if f not in schema.get("required", []))]

    return extra
