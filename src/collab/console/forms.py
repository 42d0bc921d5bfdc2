"""Form values in, field errors out: the API's own request models validate what the console's forms post."""

from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData, UploadFile

from collab.kit.errors import ApiError
from collab.kit.validation import issues_from_errors

PAGE = "_page"  # the errors key shown at the top of the page (no single field caused it)
MAX_TEXT = 20_000  # a form value longer than this is refused next to its field before any model sees it


class FormErrors(Exception):
    """A form to show again with these messages next to its fields."""

    def __init__(self, errors: dict[str, str]):
        super().__init__(errors)
        self.errors = errors


def text(form: FormData, name: str, *, max_length: int = MAX_TEXT) -> str:
    """A text field, stripped; FormErrors when it is longer than `max_length`."""
    value = form.get(name)
    if isinstance(value, UploadFile) or value is None:
        return ""
    value = value.strip()
    if len(value) > max_length:
        raise FormErrors({name: f"Must be at most {max_length} characters."})
    return value


def checked(form: FormData, name: str) -> bool:
    """A checkbox: present means on."""
    return form.get(name) is not None


def by_field(issues: list[dict[str, Any]], blank: str = PAGE) -> dict[str, str]:
    """Each issue's message under its dotted path and, for the field macros, under the path's first name too."""
    errors: dict[str, str] = {}
    for entry in issues:
        path = [str(p) for p in entry.get("path", [])]
        errors.setdefault(".".join(path) or blank, entry["message"])
        if path:
            errors.setdefault(path[0], entry["message"])
    return errors


def errors_of(exc: ValidationError | ApiError) -> dict[str, str]:
    """Issues keyed by their dotted path (the console's form fields are named so); body-level ones on the page."""
    if isinstance(exc, ValidationError):
        return by_field(issues_from_errors(exc.errors()))
    return by_field((exc.details or {}).get("issues") or [{"path": [], "message": exc.message}])


def validated(model: type[BaseModel], data: dict[str, Any]) -> Any:
    """`model` built from `data` as the API would; FormErrors naming the fields that fail."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormErrors(errors_of(exc)) from None


def bounds(model: type[BaseModel], name: str) -> dict:
    """A number field's bounds in the schema ({min, max}), shown on the input (the model checks them again)."""
    found = {}
    for rule in model.model_fields[name].metadata:
        if hasattr(rule, "ge"):
            found["min"] = rule.ge
        if hasattr(rule, "le"):
            found["max"] = rule.le
    return found


def whole(form: FormData, name: str, errors: dict) -> int | None:
    """A whole number typed in a text field; None (and a message in `errors`) when it is not one."""
    value = text(form, name, max_length=20)
    if value.lstrip("-").isdigit():
        return int(value)
    errors[name] = "Enter a whole number of seconds." if name.endswith("Seconds") else "Enter a whole number."
    return None
