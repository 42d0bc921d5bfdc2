"""The FastAPI application: lifespan wiring, middleware, handlers, docs served offline."""

import asyncio
import logging
from contextlib import asynccontextmanager
from pathlib import Path

import fastapi_offline
import orjson
from fastapi import FastAPI, Request, Response
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.staticfiles import StaticFiles

from collab import __version__, api, health
from collab.config import Settings, get_settings
from collab.console import routes as console
from collab.kit import drain, heap, jobs
from collab.kit.credentials import CHANGED_CHANNEL
from collab.kit.envelope import OrjsonResponse
from collab.kit.http import RequestContext, install_handlers
from collab.kit.listener import Listener
from collab.kit.routing import dispatch_by_table
from collab.kit.services import Services, build_services, close_services
from collab.knowledge import routes as knowledge_routes
from collab.knowledge import schemas as knowledge_schemas
from collab.knowledge import urls as knowledge_urls
from collab.notifications import email_routes
from collab.realtime.service import Realtime

log = logging.getLogger("collab.app")
_DOCS_STATIC = Path(fastapi_offline.__file__).with_name("static")


def create_app(settings: Settings | None = None, svc: Services | None = None) -> FastAPI:
    """The ASGI app; pass `svc` to share already-built services (tests), else they are built at start."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        own = svc is None
        app.state.services = svc or await build_services(settings)
        # WebSocket rooms of this process (realtime/): their Redis subscription and upkeep loop.
        app.state.realtime = Realtime(app.state.services)
        await app.state.realtime.start()
        credentials = _credentials_listener(app.state.services)
        await credentials.start()
        # At the end of a drain (SIGTERM), sockets close with 1001 before uvicorn's stop would close them (1012).
        forget = drain.at_end(app.state.realtime.going_away)
        if own:
            heap.settle(app.state.services.loop_lag
                        )  # a process of its own (tests share theirs): start-up objects out of later collections
        try:
            yield
        finally:
            forget()
            await credentials.stop()
            await app.state.realtime.stop()
            if own:
                await close_services(app.state.services)

    app = FastAPI(title="collab", version=__version__,
                  description="Collaboration Backend REST API: every operation is POST {data} under /v1 or /v2.",
                  lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None,
                  default_response_class=OrjsonResponse)
    if svc is not None:
        app.state.services = svc
    install_handlers(app)
    jobs.load()  # the declared jobs' lanes, for the enqueues of this process (light: no model client is imported)
    api.mount(app)
    api.add_routes(app, health.router)
    console.mount(app)  # /console: HTML pages, kept out of the OpenAPI document
    app.include_router(email_routes.pages)  # /email/unsubscribe: the link in notification e-mails
    app.include_router(knowledge_routes.public)  # /knowledge/uploads, /knowledge/files: signed URLs
    _offline_docs(app)
    _documented_errors_only(app)
    dispatch_by_table(app)  # after every route is added
    # Outermost: every response, error or not, carries a request id and respects the body limit.
    app.add_middleware(RequestContext, max_body_bytes=settings.max_body_bytes,
                       larger={knowledge_urls.UPLOAD_PATH: knowledge_schemas.MAX_REF_BYTES})
    return app


def _credentials_listener(svc: Services) -> Listener:
    """This process's API-key credential cache, trusted while subscribed to their changes (kit/credentials.py)."""
    cache = svc.credentials
    return Listener(svc.redis, CHANGED_CHANNEL, on_message=cache.changed, on_live=cache.set_live)


def _documented_errors_only(app: FastAPI) -> None:
    """Leave FastAPI's default 422 out of the document: validation fails with 400 and the error envelope."""
    generate = app.openapi

    def openapi():
        if app.openapi_schema is None:
            schema = generate()
            for item in schema["paths"].values():
                for operation in item.values():
                    operation["responses"].pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI documents replacing it as the way to customise


def _offline_docs(app: FastAPI) -> None:
    app.mount("/static-docs", StaticFiles(directory=_DOCS_STATIC), name="static-docs")
    encoded: list[bytes] = []

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_json():
        # Built and encoded once, in a thread: the document is megabytes, a second of CPU to build, and a quarter
        # of one to encode, which on the loop would hold every request of this process (kit/looplag.py).
        if not encoded:
            encoded.append(await asyncio.to_thread(lambda: orjson.dumps(app.openapi())))
        return Response(encoded[0], media_type="application/json")

    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request):
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}/openapi.json", title="collab API",
                                   swagger_js_url=f"{root}/static-docs/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}/static-docs/swagger-ui.css",
                                   swagger_favicon_url=f"{root}/static-docs/favicon.png")

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request):
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}/openapi.json", title="collab API",
                              redoc_js_url=f"{root}/static-docs/redoc.standalone.js",
                              redoc_favicon_url=f"{root}/static-docs/favicon.png", with_google_fonts=False)
