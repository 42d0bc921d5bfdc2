"""Rendering console pages: Jinja2 (autoescape on) over console/templates, with the console's security headers."""

from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from collab.console.session import Console

TEMPLATES = Path(__file__).with_name("templates")
STATIC = Path(__file__).with_name("static")
env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True,
                                                                                   default_for_string=True),
                  trim_blocks=True, lstrip_blocks=True)
# The CSRF token of the page being rendered: macros read it however their template imported them.
_csrf: ContextVar[str] = ContextVar("console_csrf", default="")
env.globals["csrf_token"] = lambda: _csrf.get()
# (path, label): the navigation of every signed-in page, in this order.
NAV = [("/console", "Overview"), ("/console/keys", "API keys"), ("/console/settings", "Settings"),
       ("/console/webhooks", "Webhooks"), ("/console/explorer", "Data"), ("/console/playground", "AI")]
HEADERS = {
    # No inline script or style anywhere: scripts and styles are files under /console/static.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; "
    "base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store"
}

R = TypeVar("R", bound=Response)


def secure(response: R) -> R:
    """Add the console's security headers to a response."""
    response.headers.update(HEADERS)
    return response


def _current(path: str) -> str:
    # The nav item a page belongs to: the longest nav path that prefixes it.
    best = "/console"
    for nav_path, _ in NAV:
        if path == nav_path or path.startswith(nav_path + "/") or path.startswith(nav_path + "?"):
            if len(nav_path) > len(best):
                best = nav_path
    return best


def render(request: Request, console: Console | None, template: str, *, title: str, status: int = 200,
           **context: Any) -> HTMLResponse:
    """A page of the console: `template` (extending base.html) with the nav, flash messages and CSRF token."""
    reset = _csrf.set(console.csrf if console is not None else "")
    try:
        page = _page(request, console, template, title=title, **context)
    finally:
        _csrf.reset(reset)
    return secure(HTMLResponse(page, status_code=status))


def _page(request: Request, console: Console | None, template: str, *, title: str, **context: Any) -> str:
    return env.get_template(template).render(request=request, console=console, title=title,
                                             nav=NAV if console is not None else [], current=_current(request.url.path),
                                             csrf=console.csrf if console is not None else "",
                                             flash=console.flash if console is not None else [],
                                             errors=context.pop("errors", {}), **context)


def see_other(url: str) -> Response:
    """303 to another console page (post/redirect/get)."""
    return secure(RedirectResponse(url, status_code=303))
