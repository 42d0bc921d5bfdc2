"""Operation dispatch: a request for one of the API's operations goes to its route by one dict lookup.

FastAPI's router tries each route in turn (~1 µs a try; ~300 µs for a route late in the table, out of 700-1,500 µs
of CPU per request, docs/benchmarks.md). Every operation is a POST to a static path, and api.mount adds each as a
route of the app itself (no included routers), so a table built once at start-up maps (method, path) to its route.
A request found there is handled as Starlette's router handles a match, through the route's public `matches`
(which fills the scope: the route, its endpoint, no path parameters) and `handle`; anything else (another method,
a made-up path, a path with parameters, the docs, the console's mounts) goes to FastAPI's router as before.
"""

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Match, get_route_path


def operation_table(app: FastAPI) -> dict[tuple[str, str], APIRoute]:
    """(method, path) → the app's own API route with that static path (the first, as FastAPI's loop picks)."""
    table: dict[tuple[str, str], APIRoute] = {}
    for route in app.router.routes:
        if isinstance(route, APIRoute) and "{" not in route.path:
            assert route.methods is not None  # APIRoute fills in GET where none are given
            for method in route.methods:
                table.setdefault((method, route.path), route)
    return table


def dispatch_by_table(app: FastAPI) -> None:
    """Put the operation table in front of the app router's loop (call once every route is added)."""
    router = app.router
    loop = router.middleware_stack
    table = operation_table(app)

    async def lookup(scope, receive, send) -> None:
        route = table.get((scope["method"], get_route_path(scope))) if scope["type"] == "http" else None
        if route is not None:
            match, child_scope = route.matches(scope)
            if match is Match.FULL:
                scope.setdefault("router", router)
                scope.update(child_scope)
                await route.handle(scope, receive, send)
                return
        await loop(scope, receive, send)

    router.middleware_stack = lookup
    app.state.operations = table
