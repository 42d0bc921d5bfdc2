"""Route handlers that run a route's dependencies as a list made once, not through FastAPI's per-request solver.

FastAPI solves a route's dependencies on every request by walking their tree: for each node it allocates a
cache, a sub-response, and reads path, query, header and cookie parameters that our dependencies do not have;
it parses the content type with the email package. A route whose dependencies are plain coroutines that take
the request and each other's results (our auth and services) gets a plan here: the same calls in the same order
(depth first, each call once per request, as FastAPI's cache does), then the body validated by FastAPI's own
function, so every answer and every error is the one FastAPI gives. Anything else (another content type, a body
that is not JSON, dependency overrides) goes to FastAPI's handler, and so does any route the plan cannot express.
The plan is the route's own: its routes are added to the app as they are (api.add_routes), never through an
include_router that would add dependencies of its own.
"""

import inspect
import json
from dataclasses import dataclass
from typing import Any, Callable

from fastapi import params
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, serialize_response
from starlette.requests import Request
from starlette.responses import Response

REQUEST = -1  # a step argument that is the request itself


@dataclass(frozen=True)
class _Step:
    call: Callable[..., Any]
    args: tuple[tuple[str, int], ...]  # (parameter name, REQUEST or the index of an earlier step's result)


def _plain(node: Dependant) -> bool:
    """A node that takes nothing but the request and its sub-dependencies."""
    return not (node.path_params or node.query_params or node.header_params or node.cookie_params
                or node.websocket_param_name or node.response_param_name or node.background_tasks_param_name
                or node.security_scopes_param_name)


def _async(call: Any) -> bool:
    """An `async def` function, or an object whose `__call__` is one (FastAPI's security schemes); anything else
    (a plain or generator function, a class) takes FastAPI's own path."""
    if inspect.isclass(call):
        return False
    return inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(getattr(call, "__call__", None))


def plan(route: Any) -> tuple[list[_Step], tuple[tuple[str, int], ...]] | None:
    """The steps of a route's dependencies and the endpoint's arguments; None when the route needs FastAPI's."""
    top = route.dependant
    if not _plain(top) or len(top.body_params) != 1 or route.body_field is None:
        return None
    if isinstance(top.body_params[0].field_info, params.Form):
        return None  # form fields are read from a form, never from JSON
    if not _async(top.call):
        return None
    steps: list[_Step] = []
    seen: dict[Any, int] = {}

    def add(node: Dependant) -> tuple[tuple[str, int], ...] | None:
        args: list[tuple[str, int]] = []
        for name in (node.request_param_name, node.http_connection_param_name):
            if name:
                args.append((name, REQUEST))
        for sub in node.dependencies:
            call = sub.call
            if (call is None or not _plain(sub) or sub.body_params or sub.concurrency is not None or not sub.use_cache
                    or not _async(call)):
                return None
            if call not in seen:
                sub_args = add(sub)
                if sub_args is None:
                    return None
                seen[call] = len(steps)
                steps.append(_Step(call, sub_args))
            if sub.name is not None:
                args.append((sub.name, seen[call]))
        return tuple(args)

    endpoint_args = add(top)
    return None if endpoint_args is None else (steps, endpoint_args)


def fast_handler(route: APIRoute, fallback: Callable[[Request], Any]) -> Callable[[Request], Any] | None:
    """A handler that runs the route's plan for JSON bodies (`fallback` for the rest); None without a plan."""
    found = plan(route)
    if found is None:
        return None
    steps, endpoint_args = found
    endpoint, field = route.dependant.call, route.body_field
    if endpoint is None or field is None:
        return None  # plan() saw both; this says so to the type checker
    fields = [field]
    # One body parameter is the whole body unless it asks to be embedded under its name (Body(embed=True)).
    embed = bool(getattr(route.dependant.body_params[0].field_info, "embed", False))
    overrides = route.dependency_overrides_provider
    response_class = route.response_class
    if isinstance(response_class, DefaultPlaceholder):
        response_class = response_class.value

    async def handle(request: Request) -> Response:
        if (overrides is not None and getattr(overrides, "dependency_overrides",
                                              None)) or request.headers.get("content-type") != "application/json":
            return await fallback(request)
        if not await request.body():
            return await fallback(request)
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return await fallback(request)  # nothing ran yet: FastAPI answers the broken body its own way
        results: list[Any] = []
        for step in steps:
            kwargs = {name: request if at == REQUEST else results[at] for name, at in step.args}
            results.append(await step.call(**kwargs))
        values, errors = await request_body_to_args(fields, body, embed)
        if errors:
            raise RequestValidationError(errors, body=body)
        for name, at in endpoint_args:
            values[name] = request if at == REQUEST else results[at]
        answer = await endpoint(**values)
        if isinstance(answer, Response):
            return answer  # ours answer with the envelope's responses
        content = await serialize_response(field=route.response_field, response_content=answer)
        return response_class(content, status_code=route.status_code or 200)

    return handle
