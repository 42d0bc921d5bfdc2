"""Every domain router's operations, added to the app under both /v1 and /v2."""

from fastapi import FastAPI
from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute, APIRouter, APIWebSocketRoute

from collab.activities.routes import router as activities
from collab.agents.execution_routes import router as agent_executions
from collab.agents.prompt_routes import router as agent_prompts
from collab.agents.routes import router as agents
from collab.ask_ai.routes import router as ask_ai
from collab.comments.routes import router as comments
from collab.crdt.routes import router as crdt
from collab.documents.routes import router as documents
from collab.extraction.routes import router as extraction
from collab.insights.routes import router as insights
from collab.judgments.routes import router as judgments
from collab.kit.openapi import ERRORS
from collab.knowledge.routes import router as knowledge
from collab.locations.routes import router as locations
from collab.memory.routes import router as memory
from collab.notifications.email_routes import router as notification_email
from collab.notifications.routes import router as notifications
from collab.organizations.routes import router as organizations
from collab.permissions.routes import router as permissions
from collab.presence.routes import router as presence
from collab.realtime.routes import router as realtime
from collab.recordings.routes import router as recordings
from collab.users.routes import router as users
from collab.webhooks.routes import router as webhooks
from collab.workspaces.routes import router as workspaces

ROUTERS = [
    workspaces, organizations, documents, users, permissions, notifications, notification_email, activities, presence,
    recordings, crdt, extraction, agents, agent_executions, agent_prompts, judgments, memory, ask_ai, webhooks,
    comments, locations, realtime, knowledge, insights
]


def mount(app: FastAPI) -> None:
    """Add each domain's operations under /v2 (documented) and /v1 (same handlers; real clients call either)."""
    for router in ROUTERS:
        add_routes(app, router, prefix="/v2", responses=ERRORS)
        add_routes(app, router, prefix="/v1", include_in_schema=False)


def add_routes(app: FastAPI, router: APIRouter, *, prefix: str = "", responses: dict | None = None,
               include_in_schema: bool = True, dependencies: list | None = None) -> None:
    """What include_router does, as routes of the app itself: each is found by one lookup (kit/routing.py).

    The copy takes every public setting of the route (the router's tags, dependencies and route class are already
    in it), after `dependencies`; a route without its own response class gets the app's."""
    for route in router.routes:
        if isinstance(route, APIWebSocketRoute):
            app.router.add_api_websocket_route(prefix + route.path, route.endpoint, name=route.name,
                                               dependencies=[*(dependencies or []), *route.dependencies])
            continue
        if not isinstance(route, APIRoute):
            raise TypeError(f"{route!r}: only API and WebSocket routes are added")
        own_class = not isinstance(route.response_class, DefaultPlaceholder)
        app.router.add_api_route(
            prefix + route.path, route.endpoint, response_model=route.response_model, status_code=route.status_code,
            tags=route.tags, dependencies=[*(dependencies or []),
                                           *route.dependencies], summary=route.summary, description=route.description,
            response_description=route.response_description, responses={**(responses or {}),
                                                                        **route.responses}, deprecated=route.deprecated,
            methods=route.methods, operation_id=route.operation_id, response_model_include=route.response_model_include,
            response_model_exclude=route.response_model_exclude, response_model_by_alias=route.response_model_by_alias,
            response_model_exclude_unset=route.response_model_exclude_unset,
            response_model_exclude_defaults=route.response_model_exclude_defaults,
            response_model_exclude_none=route.response_model_exclude_none, include_in_schema=route.include_in_schema
            and include_in_schema,
            response_class=route.response_class if own_class else app.router.default_response_class, name=route.name,
            route_class_override=type(route), callbacks=route.callbacks, openapi_extra=route.openapi_extra,
            generate_unique_id_function=route.generate_unique_id_function,
            strict_content_type=route.strict_content_type)
