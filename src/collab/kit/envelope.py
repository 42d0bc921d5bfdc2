"""The wire envelope: {data} in, {result} out, with strict request models."""

import json
import math
import re
from typing import Any, Callable, Generic, TypeVar

import orjson
from fastapi import Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict

from collab.kit.errors import ApiError, invalid
from collab.kit.handler import fast_handler

T = TypeVar("T")
# Deeper JSON is refused before any model sees it (client JSON such as metadata nests far less).
MAX_JSON_DEPTH = 64
# The integers every JSON reader holds exactly (JavaScript's Number.MAX_SAFE_INTEGER); larger ones are refused.
MAX_SAFE_INTEGER = 2**53 - 1
# A run of 16 digits is the shortest text of an integer past MAX_SAFE_INTEGER: without one, no check is needed.
_LONG_DIGITS = re.compile(rb"\d{16}")
_OPTIONS = orjson.OPT_NON_STR_KEYS


class Model(BaseModel):
    """Base of every request model: strict types (no "5" for 5), unknown keys ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True)


class Envelope(BaseModel, Generic[T]):
    """A request body: one required key `data` that holds the parameters."""

    model_config = ConfigDict(strict=True, extra="ignore")
    data: T


class Empty(Model):
    """An operation that takes no parameters."""


def _as_double(value: int) -> float | str:
    try:
        return float(value)
    except OverflowError:  # past the double range: only text holds it
        return str(value)


def _safe_integers(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        return _as_double(value)
    if isinstance(value, list):
        return [_safe_integers(v) for v in value]
    if isinstance(value, dict):
        return {k: _safe_integers(v) for k, v in value.items()}
    return value


def dumps(content: Any) -> bytes:
    """JSON bytes as every response renders them. An integer past 2^53 - 1 can only come from stored JSON (a
    large double such as 1e30, which Postgres jsonb writes out as integer digits, or a row stored before
    ingress refused such integers): it is written as the double a JavaScript reader holds, so nothing fails
    to render (orjson stops at 64 bits) and nothing claims more precision than it has."""
    try:
        return orjson.dumps(content, option=_OPTIONS | orjson.OPT_STRICT_INTEGER)
    except orjson.JSONEncodeError:
        return orjson.dumps(_safe_integers(content), option=_OPTIONS)


class OrjsonResponse(JSONResponse):
    """JSON rendered by orjson: faster, and non-str keys fail loudly."""

    def render(self, content: Any) -> bytes:
        return dumps(content)


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


def _unsafe_integers(value: Any, limit: int = 20) -> list[list[Any]]:
    """Paths (from the body's root) of integers outside ±MAX_SAFE_INTEGER, the first `limit` of them."""
    found: list[list[Any]] = []
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack and len(found) < limit:
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, [*path, k]) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, [*path, i]) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_SAFE_INTEGER:
            found.append(path)
    return found


def unsafe_integer_error(parsed: Any) -> ApiError | None:
    """INVALID_ARGUMENT naming each integer that JSON readers cannot hold exactly; None when there is none."""
    paths = _unsafe_integers(parsed)
    if not paths:
        return None
    message = f"Integers must be between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER} (2^53 - 1)."
    issues = []
    for path in paths:
        # Paths are relative to `data`, like every other issue; one outside `data` is named in the message only.
        inside = bool(path) and path[0] == "data"
        where = ".".join(str(p) for p in path) or "body"
        issues.append(
            {"code": "too_big", "path": [str(p) for p in path[1:]] if inside else [], "message": f"{where}: {message}"})
    return invalid(f"Invalid request: {issues[0]['message']}", issues)


def _parse(body: bytes) -> Any:
    too_deep = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    try:
        parsed = json.loads(body, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise json.JSONDecodeError(too_deep, "", 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError:
        # Python refuses to convert integers of over 4,300 digits: far out of range anyway.
        raise json.JSONDecodeError(f"integer out of range (beyond ±{MAX_SAFE_INTEGER})", "", 0) from None
    if isinstance(parsed, (dict, list)) and _too_deep(parsed, MAX_JSON_DEPTH):
        raise json.JSONDecodeError(too_deep, "", 0)
    return parsed


class _StrictJsonRequest(Request):

    async def json(self) -> Any:
        if not hasattr(self, "_parsed_json"):
            body = await self.body()
            parsed = _parse(body)
            # Postgres text and jsonb cannot hold NUL: drop it from every string, once, here.
            self._parsed_json = _strip_nul(parsed) if b"\\u0000" in body else parsed
        return self._parsed_json


class StrictJsonRoute(APIRoute):
    """A route whose body parser refuses NaN, Infinity and unsafe integers (every router uses it), and whose
    dependencies run from a plan (kit/handler.py)."""

    planned = True  # False: FastAPI's own handler (tests compare the two)

    def get_route_handler(self) -> Callable:
        generic = super().get_route_handler()
        handler = (fast_handler(self, generic) if self.planned else None) or generic

        async def strict(request: Request):
            strict_request = _StrictJsonRequest(request.scope, request.receive)
            body = await strict_request.body()
            if _LONG_DIGITS.search(body):
                # Decided here, once, for every route: such an integer would be stored and later fail to
                # render (orjson stops at 64 bits) or be rounded by JavaScript clients.
                try:
                    parsed = await strict_request.json()
                except json.JSONDecodeError:
                    parsed = None  # FastAPI answers the broken body when the handler reads it again
                error = unsafe_integer_error(parsed)
                if error is not None:
                    raise error
            return await handler(strict_request)

        return strict
