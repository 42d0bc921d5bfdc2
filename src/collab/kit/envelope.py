"""The wire envelope: {data} in, {result} out, with strict request models."""

import json
import math
from typing import Any, Callable, Generic, TypeVar

import orjson
from fastapi import Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict

T = TypeVar("T")
# Deeper JSON is refused before any model sees it (client JSON such as metadata nests far less).
MAX_JSON_DEPTH = 64


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


def listed(records: Any, token: str | None, message: str, **extra: Any) -> OrjsonResponse:
    """A page of records: {result: {status, message, data, pageToken}} (`None` on the last page)."""
    result = {"status": "success", "message": message, "data": records, "pageToken": token, **extra}
    return OrjsonResponse({"result": result})


def raw(body: Any, status_code: int = 200) -> OrjsonResponse:
    """A body the spec shapes itself (memory search, Ask AI, user-data delete)."""
    return OrjsonResponse(body, status_code=status_code)


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's parser accepts them, Postgres' jsonb would not.
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def _strip_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_strip_nul(v) for v in value]
    if isinstance(value, dict):
        return {_strip_nul(k): _strip_nul(v) for k, v in value.items()}
    return value


def _finite(text: str) -> float:
    # 1e400 parses to inf: as refused as a literal Infinity (Postgres jsonb cannot hold it).
    value = float(text)
    if math.isinf(value):
        raise json.JSONDecodeError(f"{text[:40]} is out of range for a JSON number", text, 0)
    return value


def _too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _parse(body: bytes) -> Any:
    too_deep = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        parsed = json.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise json.JSONDecodeError(too_deep, "", 0) from None
    if isinstance(parsed, (dict, list)) and _too_deep(parsed, MAX_JSON_DEPTH):
        raise json.JSONDecodeError(too_deep, "", 0)
    return parsed


class _StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            parsed = _parse(body)
            # Postgres text and jsonb cannot hold NUL: drop it from every string, once, here.
            self._json = _strip_nul(parsed) if b"\\u0000" in body else parsed
        return self._json


class StrictJsonRoute(APIRoute):
    """A route whose body parser refuses NaN and Infinity (every router uses it)."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def strict(request: Request):
            return await handler(_StrictJsonRequest(request.scope, request.receive))

        return strict
