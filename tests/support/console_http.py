"""The console over plain HTTP (no browser): a signed-in httpx client and the CSRF token of a page, for tests of
what forms refuse (bad input, missing CSRF, another workspace's ids) that a browser would not even send."""

import re
from contextlib import contextmanager
from typing import Iterator

import httpx

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@contextmanager
def signed_in(live, tenant) -> Iterator[httpx.Client]:
    """An httpx client holding a console session of the tenant's workspace (redirects not followed)."""
    with httpx.Client(base_url=live.url, timeout=60, follow_redirects=False, headers={"origin": live.url}) as client:
        response = client.post("/console/sign-in",
                               data={"workspaceId": tenant.workspace["id"], "authToken": tenant.workspace["authToken"]})
        assert response.status_code == 303, response.text
        yield client


def csrf(client: httpx.Client, path: str = "/console") -> str:
    """The session's CSRF token, as a page's forms carry it."""
    page = client.get(path)
    assert page.status_code == 200, page.text
    return _CSRF.search(page.text).group(1)


def field_error(html: str, name: str) -> str | None:
    """The error shown next to a form field (the `error-<name>` paragraph), or None."""
    found = re.search(rf'<p class="error" id="error-{re.escape(name)}">(.*?)</p>', html, re.S)
    return found.group(1).strip() if found else None
