"""A model's structured answer: the JSON object of the expected shape, found in whatever text came back."""

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)
A = TypeVar("A", bound=BaseModel)


class AnswerError(Exception):
    """A model answer that is not valid JSON of the expected shape."""


def parse(text: str, shape: type[A]) -> A:
    """Parse a model answer into `shape`, tolerating code fences and text around the JSON object."""
    cleaned = _FENCE.sub("", text.strip())
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        raise AnswerError("the answer holds no JSON object")
    try:
        return shape.model_validate(json.loads(cleaned[start:end + 1]))
    except json.JSONDecodeError as exc:
        raise AnswerError(f"invalid JSON: {exc.msg} at {exc.pos}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AnswerError(f"{exc.error_count()} schema error(s), first at {where}: {first['msg']}") from None
