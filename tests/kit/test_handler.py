"""Planned route handlers (kit/handler.py): the API's routes run their dependencies from a plan made once, and
answer exactly as FastAPI's own handler does, errors included."""

from typing import Any

import pytest
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader
from starlette.testclient import TestClient

from collab.api import add_routes
from collab.kit import envelope
from collab.kit.envelope import Envelope, Model, StrictJsonRoute, ok
from collab.kit.errors import ApiError
from collab.kit.handler import plan
from collab.kit.http import install_handlers

_key = APIKeyHeader(name="x-key", auto_error=False)


class Item(Model):
    name: str
    count: int = 0
    tags: list[str] = []


class Calls:
    """How often each dependency ran in the current app."""

    def __init__(self):
        self.n: dict[str, int] = {}

    def hit(self, name: str) -> None:
        self.n[name] = self.n.get(name, 0) + 1


class GenericRoute(StrictJsonRoute):
    planned = False


def build(*, planned: bool) -> tuple[FastAPI, Calls]:
    """The same small app, with the plan (as the API runs) or with FastAPI's handler alone."""
    calls = Calls()

    async def services(request: Request) -> Calls:
        calls.hit("services")
        return calls

    async def auth(request: Request, key: str | None = Depends(_key), svc: Calls = Depends(services)) -> str:
        svc.hit("auth")
        if key is None:
            raise ApiError("UNAUTHENTICATED", "Missing x-key header.")
        return key

    router = APIRouter(route_class=StrictJsonRoute if planned else GenericRoute)

    @router.post("/items/add")
    async def add(body: Envelope[Item], caller: str = Depends(auth), svc: Calls = Depends(services)):
        return ok({"caller": caller, "item": body.data.model_dump(), "seen": dict(svc.n)})

    @router.post("/items/plain")
    async def plain(body: Envelope[Item], request: Request) -> dict[str, Any]:
        return {"path": request.url.path, "name": body.data.name}  # not a Response: FastAPI's serialization

    @router.post("/items/query")
    async def query(body: Envelope[Item], limit: int = 3):
        return ok({"limit": limit})

    async def included(svc: Calls = Depends(services)) -> None:
        svc.hit("included")  # a dependency of the inclusion, not of the route

    app = FastAPI(default_response_class=envelope.OrjsonResponse)
    install_handlers(app)
    add_routes(app, router, prefix="/v2", dependencies=[Depends(included)])  # as the API adds its routes
    app.state.auth = auth
    return app, calls


BODIES = [(b'{"data": {"name": "a", "count": 2, "tags": ["x"]}}', "application/json"),
          (b'{"data": {"name": "a"}, "extra": 1}', "application/json"), (b'{"data": {"name": 5}}', "application/json"),
          (b'{"data": {"name": "a", "count": "2"}}', "application/json"),
          (b'{"data": {"count": 1}}', "application/json"), (b'{"nodata": {}}', "application/json"),
          (b"[]", "application/json"), (b'"text"', "application/json"),
          (b'{"data": {"name": "a", "count": 9007199254740993}}', "application/json"),
          (b'{"data": {"name": "a", "count": NaN}}', "application/json"),
          (b'{"data": {"name": "a"', "application/json"), (b"", "application/json"),
          (b'{"data": {"name": "a"}}', "application/json; charset=utf-8"), (b'{"data": {"name": "a"}}', "text/plain"),
          (b'{"data": {"name": "a"}}', None), (b'{"data": {"name": "a\\u0000b"}}', "application/json")]


@pytest.mark.parametrize("path", ["/v2/items/add", "/v2/items/plain", "/v2/items/query?limit=7"])
@pytest.mark.parametrize("key", ["k-1", None])
def test_the_planned_handler_answers_as_fastapi_does(path, key):
    planned_app, planned_calls = build(planned=True)
    generic_app, generic_calls = build(planned=False)
    with TestClient(planned_app) as planned, TestClient(generic_app) as generic:
        for body, content_type in BODIES:
            headers = {"x-key": key} if key else {}
            if content_type:
                headers["content-type"] = content_type
            a = planned.post(path, content=body, headers=headers)
            b = generic.post(path, content=body, headers=headers)
            assert (a.status_code, a.json()) == (b.status_code, b.json()), (path, body, content_type)
    assert planned_calls.n == generic_calls.n  # the same dependencies ran, as often


def test_each_dependency_runs_once_per_request_in_order():
    app, calls = build(planned=True)
    with TestClient(app) as client:
        answer = client.post("/v2/items/add", json={"data": {"name": "a"}}, headers={"x-key": "k"})
    # services, shared by the inclusion, auth and the route, ran once.
    assert answer.json()["result"]["data"]["seen"] == {"services": 1, "included": 1, "auth": 1}


def test_dependency_overrides_are_honoured():
    app, _ = build(planned=True)

    async def fake_auth() -> str:
        return "overridden"

    app.dependency_overrides[app.state.auth] = fake_auth
    with TestClient(app) as client:
        answer = client.post("/v2/items/add", json={"data": {"name": "a"}})
    assert answer.json()["result"]["data"]["caller"] == "overridden"


def _planned(app: FastAPI) -> dict[str, bool]:
    """Each API route's path (under /v1 and /v2), and whether it has a plan."""
    return {
        route.path: plan(route) is not None
        for route in app.routes if isinstance(route, APIRoute) and route.path.startswith(("/v1/", "/v2/"))
    }


def test_what_the_plan_covers():
    app, _ = build(planned=True)
    # A query parameter is FastAPI's to read.
    assert _planned(app) == {"/v2/items/add": True, "/v2/items/plain": True, "/v2/items/query": False}


def test_every_api_operation_has_a_plan(live):
    """The API's own routes all take the planned path (a new kind of dependency would silently lose it)."""
    found = _planned(live.app)
    assert len(found) > 100 and [path for path, planned in found.items() if not planned] == []
