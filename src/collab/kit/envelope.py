"""The wire envelope: {data} in, {result} out, with strict request models."""

from typing import Any, Generic, TypeVar

import orjson
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

T = TypeVar("T")


class Model(BaseModel):
    """Base of every request model: strict types (no "5" for 5), unknown keys ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True)


class Envelope(BaseModel, Generic[T]):
    """A request body: one required key `data` that holds the parameters."""

    model_config = ConfigDict(strict=True, extra="ignore")
    data: T


class Empty(Model):
    """An operation that takes no parameters."""


class OrjsonResponse(JSONResponse):
    """JSON rendered by orjson: faster, and non-str keys fail loudly."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)


def ok(data: Any = None, message: str = "Success", *, status_code: int = 200) -> OrjsonResponse:
    """The spec's success body: {result: {status, message, data}}."""
    result: dict[str, Any] = {"status": "success", "message": message}
    if data is not None:
        result["data"] = data
    return OrjsonResponse({"result": result}, status_code=status_code)


def raw(body: Any, status_code: int = 200) -> OrjsonResponse:
    """A body the spec shapes itself (memory search, Ask AI, user-data delete)."""
    return OrjsonResponse(body, status_code=status_code)
