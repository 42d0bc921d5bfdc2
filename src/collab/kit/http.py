"""ASGI middleware and exception handlers: request ids, body size limit, API call counts, the error envelope."""

import itertools
import logging
import os
import re
import time
import uuid

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from collab.kit import usage
from collab.kit.db import constraints
from collab.kit.envelope import OrjsonResponse
from collab.kit.errors import ApiError, invalid, not_found
from collab.kit.validation import failure, summary
from collab.logging import request_id

log = logging.getLogger("collab.http")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
access = logging.getLogger("collab.access")


class _RequestIds:
    """32-hex request ids: a random prefix per process and a counter (uuid4 costs a getrandom call per request)."""

    def __init__(self) -> None:
        self.pid = 0
        self.prefix = ""
        self.count = itertools.count()

    def next(self) -> str:
        if self.pid != os.getpid():  # a forked child draws its own prefix
            self.pid, self.prefix, self.count = os.getpid(), uuid.uuid4().hex[:16], itertools.count()
        return f"{self.prefix}{next(self.count):016x}"


_ids = _RequestIds()


class BodyTooLarge(ApiError):
    """A request body over the limit: HTTP 413, the one exception to the status table."""

    def __init__(self, limit: int):
        super().__init__("INVALID_ARGUMENT", f"Request body exceeds the maximum size of {limit} bytes.",
                         details={"issues": [{"code": "too_big", "path": [],
                                              "message": f"Body over {limit} bytes"}]}, http_status=413)


class RequestContext:
    """Pure ASGI middleware: request id, access log, and the body size limit (checked while reading)."""

    def __init__(self, app, max_body_bytes: int, *, larger: dict[str, int] | None = None):
        self.app = app
        self.max_body = max_body_bytes
        # Path prefixes allowed a larger body (a signed upload URL's PUT), each with its own limit.
        self.larger = dict(larger or {})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        scope.setdefault("state", {})  # shared by any copy below: auth leaves the caller's workspace there
        headers = dict(scope.get("headers") or [])
        if (scope.get("method") == "POST" and b"json" not in headers.get(b"content-type", b"")
                and not scope.get("path", "").startswith("/console")):
            # Every operation takes JSON; read the body as JSON whatever the client labelled it (the console's
            # HTML forms post urlencoded or multipart bodies and keep their label).
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in scope.get("headers", []) if k != b"content-type"]
            scope["headers"].append((b"content-type", b"application/json"))
        sent = headers.get(b"x-request-id", b"").decode("latin-1")
        # A client's id is kept only when it is plainly an id: it goes into headers and logs.
        rid = sent if _REQUEST_ID.match(sent) else _ids.next()
        token = request_id.set(rid)
        started = time.perf_counter()
        status_holder = {"status": 500}

        path = scope.get("path", "")
        limit = next((n for prefix, n in self.larger.items() if path.startswith(prefix)), self.max_body)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _send_error(scope, send, BodyTooLarge(limit), rid)
            status_holder["status"] = 413
            self._log(scope, status_holder, started)
            request_id.reset(token)
            return

        received = 0
        too_large = False
        replaced = False

        async def limited_receive():
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    too_large = True
                    raise BodyTooLarge(limit)
            return message

        async def tagged_send(message):
            nonlocal replaced
            if too_large:
                # Whatever the app made of the aborted read, the client gets the 413.
                if not replaced:
                    replaced = True
                    status_holder["status"] = 413
                    await _send_error(scope, send, BodyTooLarge(limit), rid)
                return
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                extra = [(b"x-request-id", rid.encode())]
                if scope.get("scheme") == "https":  # as the client reached us (uvicorn honours trusted proxies)
                    extra.append(HSTS)
                message["headers"] = list(message.get("headers", [])) + extra
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # Logged before the last byte leaves, so the line exists once the client has its answer.
                self._log(scope, status_holder, started)
            await send(message)

        try:
            await self.app(scope, limited_receive, tagged_send)
        except BodyTooLarge:
            if not replaced:
                await tagged_send({"type": "http.response.start", "status": 413})
        finally:
            if not status_holder.get("logged"):
                self._log(scope, status_holder, started)
            request_id.reset(token)

    @staticmethod
    def _log(scope, status_holder, started):
        status_holder["logged"] = True
        _count_call(scope, status_holder["status"])
        access.info(
            "%s %s %s", scope.get("method"), scope.get("path"), status_holder["status"], extra={
                "method": scope.get("method"), "path": scope.get("path"), "status": status_holder["status"],
                "duration_ms": round((time.perf_counter() - started) * 1000, 2)
            })


# Served over https: browsers keep to https for a year (the console's session cookie never travels in clear).
HSTS = (b"strict-transport-security", b"max-age=31536000")


def _count_call(scope, status: int) -> None:
    """Count an authenticated call for its workspace, by route template and status (a dict update, no I/O)."""
    state, route = scope.get("state") or {}, scope.get("route")
    tenant = state.get("tenant")
    workspace_id = getattr(tenant, "workspace_id", None) or state.get("workspace_id")
    own = getattr(route, "path", None)
    if workspace_id is None or own is None:
        return  # unauthenticated calls and unknown paths belong to no workspace
    svc = getattr(scope["app"].state, "services", None) if "app" in scope else None
    template = _template(scope, own)
    if svc is not None and not template.startswith("/console"):  # console pages are not API calls
        usage.count(svc, "api_calls", workspace_id=workspace_id, label=f"{template} {status}")


def _template(scope, own: str) -> str:
    """The route's path template with its router's prefix (/v1, /v2): never a raw path with ids in it."""
    # FastAPI gives the included route itself, whose path lacks the prefix it was included under.
    path, root = scope.get("path", ""), scope.get("root_path", "")
    path = path[len(root):] if root and path.startswith(root) else path
    if path.endswith(own):
        return path  # a static path: what comes before the route's own path is the prefix
    head = "/" + path.split("/")[1] if path.count("/") > 1 else ""
    return own if own.startswith(head + "/") else head + own


async def _send_error(scope, send, error: ApiError, rid: str) -> None:
    response = OrjsonResponse(error.body(), status_code=error.http_status)
    response.headers["x-request-id"] = rid
    await response(scope, None, send)  # type: ignore[arg-type]  # a plain response never reads the request


DATABASE_UNAVAILABLE = ApiError("UNAVAILABLE", "The database is unavailable; retry later.",
                                headers={"Retry-After": "1"})


def error_response(error: ApiError) -> OrjsonResponse:
    return OrjsonResponse(error.body(), status_code=error.http_status, headers=error.headers)


def install_handlers(app: FastAPI) -> None:
    """Every failure leaves in the spec's envelope; unknown exceptions are the only 500s."""

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError):
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError):
        broken = [e for e in exc.errors() if e["type"] == "json_invalid"]
        if broken:
            reason = broken[0].get("ctx", {}).get("error")
            message = f"Body is not valid JSON: {reason}" if reason else "Body is not valid JSON"
            issues = [{"code": "invalid_json", "path": [], "message": message}]
            return error_response(invalid(summary(issues), issues))
        return error_response(failure(exc.errors(), strip=("body", "data")))

    @app.exception_handler(ValidationError)
    async def on_model_validation(request: Request, exc: ValidationError):
        return error_response(failure(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException):
        if exc.status_code == 404:
            return error_response(not_found("route"))
        if exc.status_code == 405:
            return error_response(ApiError("INVALID_ARGUMENT", "Method not allowed: use POST.", http_status=405))
        if exc.status_code < 500:
            # Starlette's own 400s (an undecodable body) still list an issue like every validation failure.
            issues = [{"code": "invalid_json", "path": [], "message": str(exc.detail)}]
            return error_response(invalid(str(exc.detail), issues))
        return error_response(ApiError("INTERNAL", "Internal error."))

    @app.exception_handler(psycopg.OperationalError)
    async def on_database_unavailable(request: Request, exc: psycopg.OperationalError):
        # The server is down or restarting, the connection broke, or no pooled connection came in time
        # (PoolTimeout): all retryable. A write that fails this way was not acknowledged, so nothing the
        # client was told succeeded is lost; it may or may not have committed, like any timed-out request.
        log.warning("database unavailable on %s: %s: %s", request.url.path, type(exc).__name__, exc)
        return error_response(DATABASE_UNAVAILABLE)

    @app.exception_handler(psycopg.IntegrityError)
    async def on_integrity(request: Request, exc: psycopg.IntegrityError):
        # A write that relied on a constraint no service mapped (a parent deleted by a concurrent request)
        # still answers by the constraint's meaning; its transaction has already rolled back.
        error = constraints.to_api_error(exc)
        if error is None:
            return await on_unknown(request, exc)
        return error_response(error)

    @app.exception_handler(Exception)
    async def on_unknown(request: Request, exc: Exception):
        log.exception("unhandled error on %s", request.url.path)
        return OrjsonResponse({"error": {"status": "INTERNAL", "message": "Internal error."}}, status_code=500)
