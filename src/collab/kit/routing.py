"""Route lookup by path: a request for a path seen before goes straight to the route that took it.

FastAPI matches a request by trying every route in turn, and an included router's routes twice (once to match,
once to handle): ~1 µs a try, 66 µs for `organizations/get` and 306 µs for a route late in the table, out of
700-1,500 µs of CPU per request (docs/benchmarks.md). Every operation here is a static path, so the first
request for a (method, path) finds its route the ordinary way, and later ones go to what took it: the handler
FastAPI built for that route where it is one of ours (an API route in an included router: the scope entries
FastAPI's matching set for it, then its handler, as `APIRoute.handle` calls it; ~20-30 µs less CPU a request
than matching again), else the top-level route, through FastAPI's own `matches` and `handle`. The route table is
fixed once the app serves (as FastAPI's own caches assume).
"""

import logging
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match, get_route_path

log = logging.getLogger("collab.http")

try:  # FastAPI's own steps between a match and its handling (fastapi is pinned; tests/kit/test_routing.py)
    from fastapi.routing import (
        _FASTAPI_EFFECTIVE_ROUTE_CONTEXT_KEY as _CONTEXT,
        _FASTAPI_FORM_LIMITS_KEY as _FORM_LIMITS,
        _FASTAPI_INCLUDED_ROUTER_KEY as _INCLUDED,
        _FASTAPI_SCOPE_KEY as _FASTAPI,
        _apply_router_form_limits,
        _update_scope,
    )
except ImportError:  # pragma: no cover - another FastAPI: keep its loop
    _apply_router_form_limits = _update_scope = None

# Paths left to the loop that are remembered as such; past it, that set starts again (static routes stay known).
MAX_PATHS = 4096
# Set in the scope when FastAPI's telemetry is configured: its route is then named by FastAPI's own path.
_TELEMETRY = "fastapi.telemetry"


@dataclass(frozen=True)
class Leaf:
    """An API route as FastAPI's matching left it in the scope, and the handler it then called."""

    route: APIRoute
    endpoint: Any
    fastapi: dict[str, Any]  # FastAPI's own scope entries (the inclusion, the route's context, form limits)
    app: Any

    @classmethod
    def taken(cls, scope: dict) -> "Leaf | None":
        """What handled a request that FastAPI's matching sent to one of our static API routes; None otherwise."""
        route, own = scope.get("route"), scope.get(_FASTAPI) or {}
        context = own.get(_CONTEXT)
        if (not isinstance(route, APIRoute) or "{" in route.path or scope.get("path_params") or context is None
                or getattr(context, "original_route", None) is not route or getattr(context, "app", None) is None):
            return None
        return cls(route, scope.get("endpoint"), {k: own[k] for k in (_INCLUDED, _CONTEXT, _FORM_LIMITS) if k in own},
                   context.app)

    async def handle(self, scope, receive, send) -> None:
        scope.update(route=self.route, endpoint=self.endpoint, path_params={})
        scope.setdefault(_FASTAPI, {}).update(self.fastapi)
        await self.app(scope, receive, send)


def remember_routes(app: FastAPI) -> None:
    """Put the lookup in front of the app router's loop (FastAPI's loop answers everything else as before)."""
    if _update_scope is None:
        log.warning("route lookup off: this FastAPI version lacks the steps it replays")
        return
    router = app.router
    loop = router.middleware_stack
    # (method, path) -> the static top-level route that took it: at most one path per route, so anyone's requests
    # for made-up paths (404s) cannot crowd the real ones out; those and paths with parameters go to `passed`.
    known: dict[tuple[str, str], BaseRoute] = {}
    leaves: dict[tuple[str, str], Leaf] = {}  # the same, for paths that one of our API routes took
    passed: set[tuple[str, str]] = set()  # (method, path) the loop answers: no second match before it

    async def lookup(scope, receive, send) -> None:
        if scope["type"] != "http":
            await loop(scope, receive, send)
            return
        key = (scope["method"], get_route_path(scope))
        leaf = leaves.get(key)
        if leaf is not None and _TELEMETRY not in scope:
            scope.setdefault("router", router)
            _apply_router_form_limits(scope, router.form_limits)
            await leaf.handle(scope, receive, send)
            return
        if key in passed:
            await loop(scope, receive, send)
            return
        route = known.get(key)
        if route is not None:
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                _apply_router_form_limits(scope, router.form_limits)
                scope.setdefault("router", router)
                _update_scope(scope, child_scope)
                await route.handle(scope, receive, send)
                if (taken := Leaf.taken(scope)) is not None:
                    leaves[key] = taken
                return
        # The route FastAPI's loop will pick: the first that matches fully (matching has no lasting effect).
        first = next((r for r in router.routes if r.matches(scope)[0] is Match.FULL), None)
        try:
            await loop(scope, receive, send)
            if first is not None and (taken := Leaf.taken(scope)) is not None:
                leaves[key] = taken
        finally:  # a 404 or 405 leaves the loop as an exception
            if first is not None and "{" not in getattr(scope.get("route"), "path", "{"):
                known[key] = first
            else:  # routes with path parameters and paths no route takes go straight to the loop next time
                if len(passed) >= MAX_PATHS:
                    passed.clear()  # bounded: a flood of made-up paths only costs their own second match
                passed.add(key)

    router.middleware_stack = lookup
    app.state.known_routes, app.state.passed_routes, app.state.route_leaves = known, passed, leaves
