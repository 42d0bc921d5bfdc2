"""The console's routes: sign-in and sign-out, the pages' routers, static files, and HTML error pages."""

import hmac
import logging
import secrets

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from collab.console import (
    explorer,
    keys,
    overview,
    playground,
    provider_keys,
    session,
    settings_page,
    webhook_pages,
)
from collab.console.forms import PAGE, FormErrors, text
from collab.console.render import STATIC, render, see_other
from collab.console.session import COOKIE, PATH, CsrfRefused, SignInRequired
from collab.kit.errors import ApiError
from collab.kit.services import Services, services

log = logging.getLogger("collab.console")
router = APIRouter(prefix="/console", include_in_schema=False)
router.add_api_route("", overview.overview_page, methods=["GET"])  # /console itself (a sub-router cannot)
for _pages in (keys, settings_page, provider_keys, webhook_pages, explorer, playground):
    router.include_router(_pages.router)

_BAD_SIGN_IN = "The workspace id and auth token do not match a workspace."


@router.get("/sign-in")
async def sign_in_page(request: Request, svc: Services = Depends(services)):
    if await session.load(request, svc) is not None:
        return see_other("/console")
    return _sign_in_page(request, svc, values={})


# The sign-in form's pre-session CSRF token (a session, and so its token, exists only after sign-in): in a cookie
# only this console can set and in the form's hidden field; a client that sends no Origin must post both alike.
SIGN_IN_COOKIE = "collab_console_sign_in"


def _sign_in_page(request: Request, svc: Services, *, values: dict, status: int = 200, errors: dict | None = None):
    token = request.cookies.get(SIGN_IN_COOKIE) or ""
    fresh = not 20 <= len(token) <= 100
    if fresh:
        token = secrets.token_urlsafe(32)
    response = render(request, None, "sign_in.html", title="Sign in", status=status, values=values, errors=errors or {},
                      sign_in_token=token)
    if fresh:
        response.set_cookie(SIGN_IN_COOKIE, token, path=PATH, httponly=True, samesite="strict",
                            secure=_secure_cookie(request, svc))
    return response


def _secure_cookie(request: Request, svc: Services) -> bool:
    # In production always: behind a TLS proxy that is not trusted (COLLAB_FORWARDED_ALLOW_IPS) the scheme reads http.
    return request.url.scheme == "https" or svc.settings.env == "production"


def _cross_site(request: Request, svc: Services, form) -> bool:
    """Whether a sign-in may come from another site: it needs this console's own Origin, or, from a client that
    sends none, the sign-in page's pre-session token."""
    origin = request.headers.get("origin")
    if origin:
        scheme, _, netloc = origin.rstrip("/").partition("://")
        same_scheme = scheme == request.url.scheme or (scheme == "https" and svc.settings.env == "production")
        return not (same_scheme and netloc == request.url.netloc)
    cookie, posted = request.cookies.get(SIGN_IN_COOKIE) or "", form.get("signInToken")
    return not (cookie and isinstance(posted, str) and hmac.compare_digest(cookie.encode(), posted.encode()))


def _credentials(form) -> tuple[dict, str, dict]:
    """The posted workspace id and token, and what is wrong with them (by field)."""
    values, token, errors = {"workspaceId": ""}, "", {}
    for name, limit in (("workspaceId", 200), ("authToken", 500)):
        try:
            value = text(form, name, max_length=limit)
        except FormErrors:
            what = "A workspace id" if name == "workspaceId" else "An auth token"
            errors[name] = f"Too long: {what.lower()} is at most {limit} characters."
            continue
        if not value:
            errors[name] = "Enter the workspace id." if name == "workspaceId" else "Enter the workspace auth token."
        if name == "workspaceId":
            values[name] = value
        else:
            token = value
    return values, token, errors


@router.post("/sign-in")
async def sign_in(request: Request, svc: Services = Depends(services)):
    form = await request.form()
    if _cross_site(request, svc, form):
        raise CsrfRefused()
    values, token, errors = _credentials(form)
    if not errors:
        try:
            session_id = await session.sign_in(request, svc, workspace_id=values["workspaceId"], token=token)
        except ApiError as exc:
            if exc.code == "RESOURCE_EXHAUSTED":
                errors[PAGE] = "Too many failed sign-in attempts; wait a minute and try again."
                response = _sign_in_page(request, svc, status=429, values=values, errors=errors)
                response.headers.update(exc.headers or {})
                return response
            if exc.code not in ("NOT_FOUND", "UNAUTHENTICATED", "INVALID_ARGUMENT"):
                raise
            errors["authToken"] = _BAD_SIGN_IN
        else:
            response = see_other("/console")
            response.set_cookie(COOKIE, session_id, path=PATH, httponly=True, samesite="strict",
                                secure=_secure_cookie(request, svc))
            response.delete_cookie(SIGN_IN_COOKIE, path=PATH, httponly=True, samesite="strict")
            return response
    return _sign_in_page(request, svc, status=400, values=values, errors=errors)


@router.post("/sign-out")
async def sign_out(request: Request, console: session.Console = session.Signed):
    await session.checked_form(request, console)
    await session.sign_out(console.svc, console.session_id)
    response = see_other("/console/sign-in")
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict")
    return response


def _console(request: Request) -> bool:
    return request.url.path == PATH or request.url.path.startswith(PATH + "/")


def _error_page(request: Request, status: int, message: str, headers: dict | None = None):
    titles = {
        400: "Bad request", 401: "Signed out", 403: "Refused", 404: "Not found", 429: "Too many requests",
        500: "Something went wrong", 503: "Unavailable"
    }
    console = getattr(request.state, "console", None)
    response = render(request, console, "error.html", title=titles.get(status, "Error"), status=status, message=message)
    response.headers.update(headers or {})
    return response


def mount(app: FastAPI) -> None:
    """Serve the console at /console: its routes, its static files, and HTML (not JSON) errors under it."""
    app.include_router(router)
    app.mount("/console/static", StaticFiles(directory=STATIC), name="console-static")

    async def signed_out(request: Request, exc: Exception):  # a SignInRequired
        if request.method in ("GET", "HEAD"):
            return see_other("/console/sign-in")
        return _error_page(request, 401, "Your session has ended. Sign in again; nothing was changed.")

    async def refused(request: Request, exc: Exception):  # a CsrfRefused
        return _error_page(
            request, 403, "This form was not sent from this console session (its security token "
            "is missing or stale), so nothing was changed. Reload the page and try again.")

    async def unfit(request: Request, exc: Exception):
        # A form value no page handled itself (e.g. an oversize hidden field): the messages, in words.
        assert isinstance(exc, FormErrors)
        return _error_page(request, 400, " ".join(f"{name}: {message}" for name, message in exc.errors.items()))

    app.add_exception_handler(SignInRequired, signed_out)
    app.add_exception_handler(FormErrors, unfit)
    app.add_exception_handler(CsrfRefused, refused)
    for kind in (ApiError, StarletteHTTPException, RequestValidationError, Exception):
        app.add_exception_handler(kind, _html_under_console(app.exception_handlers.get(kind)))


def _html_under_console(api_handler):
    """The API's handler everywhere but under /console, where the same failure is a page in words."""

    async def handle(request: Request, exc: Exception):
        if not _console(request):
            return await api_handler(request, exc)
        if isinstance(exc, ApiError):
            return _error_page(request, exc.http_status, exc.message, exc.headers)
        if isinstance(exc, StarletteHTTPException) and exc.status_code < 500:
            message = "There is no such page." if exc.status_code == 404 else str(exc.detail)
            return _error_page(request, exc.status_code, message)
        if isinstance(exc, RequestValidationError):
            return _error_page(request, 400, "The request was not understood.")
        log.exception("unhandled error on %s", request.url.path)
        return _error_page(request, 500, "The console failed to answer; the error was logged.")

    return handle
