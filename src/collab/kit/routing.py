"""Route lookup by path: a request for a path seen before goes straight to the route that took it.

FastAPI matches a request by trying every route in turn, and an included router's routes twice (once to match,
once to handle): ~1 µs a try, 66 µs for `organizations/get` and 306 µs for a route late in the table, out of
700-1,500 µs of CPU per request (docs/benchmarks.md). Every operation here is a static path, so the first
request for a (method, path) finds its top-level route the ordinary way and later ones try that route first.
What happens next is FastAPI's own code (`matches`, `handle`), as its loop would run it.
"""

import logging

from fastapi import FastAPI
from starlette.routing import BaseRoute, Match, get_route_path

log = logging.getLogger("collab.http")

try:  # FastAPI's own steps between a match and its handling (fastapi is pinned; tests/kit/test_routing.py)
    from fastapi.routing import _apply_router_form_limits, _update_scope
except ImportError:  # pragma: no cover - another FastAPI: keep its loop
    _apply_router_form_limits = _update_scope = None

# Paths left to the loop that are remembered as such; past it, that set starts again (static routes stay known).
MAX_PATHS = 4096


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
    passed: set[tuple[str, str]] = set()  # (method, path) the loop answers: no second match before it

    async def lookup(scope, receive, send) -> None:
        if scope["type"] != "http":
            await loop(scope, receive, send)
            return
        key = (scope["method"], get_route_path(scope))
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
                return
        # The route FastAPI's loop will pick: the first that matches fully (matching has no lasting effect).
        first = next((r for r in router.routes if r.matches(scope)[0] is Match.FULL), None)
        try:
            await loop(scope, receive, send)
        finally:  # a 404 or 405 leaves the loop as an exception
            if first is not None and "{" not in getattr(scope.get("route"), "path", "{"):
                known[key] = first
            else:  # routes with path parameters and paths no route takes go straight to the loop next time
                if len(passed) >= MAX_PATHS:
                    passed.clear()  # bounded: a flood of made-up paths only costs their own second match
                passed.add(key)

    router.middleware_stack = lookup
    app.state.known_routes, app.state.passed_routes = known, passed
