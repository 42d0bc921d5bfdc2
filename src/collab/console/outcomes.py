"""What the Webhooks, Data and AI pages share: the selected API key, form values read into the API's own request
models, and service errors turned into words next to the fields that caused them."""

from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile

from collab.console.forms import PAGE, by_field
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.validation import issues_from_errors

M = TypeVar("M", bound=BaseModel)


@dataclass
class Outcome:
    """A form's fate: field errors (by dotted path), a message for the whole form, and what the service answered."""

    errors: dict[str, str] = field(default_factory=dict)
    message: str | None = None
    status: int = 200
    value: Any = None

    @property
    def ok(self) -> bool:
        return not self.errors and self.message is None

    @property
    def page_errors(self) -> dict[str, str]:
        """The errors as base.html and the field macros read them: by field name, the form's under `_page`."""
        return {**self.errors, **({PAGE: self.message} if self.message else {})}


def from_error(exc: ApiError) -> Outcome:
    """An ApiError as an Outcome: each issue beside its field, the message for the form when no field is named."""
    issues = (exc.details or {}).get("issues") or []
    errors = by_field([i for i in issues if i.get("path")])
    return Outcome(errors=errors, message=None if errors else exc.message, status=exc.http_status)


def from_validation(exc: ValidationError) -> Outcome:
    """A request model's failure as an Outcome, each message beside its field (as the API's issues name them)."""
    issues = issues_from_errors(exc.errors(include_url=False))
    errors = by_field(issues, blank="form")
    return Outcome(errors=errors, status=400, message=errors.pop("form", None))


def parse(model: type[M], values: dict[str, Any]) -> tuple[M | None, Outcome]:
    """The API's request model from form values, or the field errors it reports (as the API would)."""
    try:
        return model.model_validate(values), Outcome()
    except ValidationError as exc:
        return None, from_validation(exc)


async def run(call) -> Outcome:
    """Await a service call (an awaitable, or a function making one); its ApiError, or its request model's
    ValidationError, becomes the Outcome (other exceptions propagate: a real fault)."""
    try:
        return Outcome(value=await (call() if callable(call) else call))
    except ApiError as exc:
        return from_error(exc)
    except ValidationError as exc:
        return from_validation(exc)


def plain(records: list[Any]) -> list[Any]:
    """Listed records as plain data: budgeted listings hand them over pre-rendered (orjson fragments)."""
    return orjson.loads(orjson.dumps(records))


def given(**values: Any) -> dict[str, Any]:
    """Keyword arguments without the ones not given (the request models are strict: None is not "absent")."""
    return {k: v for k, v in values.items() if v is not None}


def text(value: Any) -> str | None:
    """A form field as text: blank means not given."""
    if value is None or not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def number(value: Any) -> int | str | None:
    """A form field as an integer when it is one; other text stays text, so the request model names the error."""
    found = text(value)
    if found is not None and found.lstrip("-").isdigit() and len(found) < 19:
        return int(found)
    return found


def words(value: Any) -> list[str] | None:
    """A comma- or space-separated form field as a list; blank means not given."""
    found = [w for w in (text(value) or "").replace(",", " ").split() if w]
    return found or None


async def selected_key(console, key: str | UploadFile | None) -> tuple[Tenant, list[dict[str, Any]], str]:
    """The tenant of `?key=` (default: the workspace's first key), every key for the selector, and the key's id.

    A key of another workspace is NOT_FOUND (raised by Console.tenant)."""
    keys = await console.api_keys()
    if key is not None and not isinstance(key, str):
        key = ""  # a file posted under the name: no such key
    if key is None:
        if not keys:
            raise ApiError("NOT_FOUND", "This workspace has no API key.")
        key = key_id(keys[0])
    return await console.tenant(key), keys, key


def key_id(row: dict[str, Any]) -> str:
    """The id of an API key row as the console lists them."""
    for name in ("id", "apiKeyId", "apiKey", "api_key_id"):
        if name in row:
            return row[name]
    raise KeyError("api key id")
