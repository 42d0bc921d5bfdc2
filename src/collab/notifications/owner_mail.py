"""The workspace owner's public e-mail operations, as Velt documents them: `workspace/email/status` without
credentials (is this address a workspace owner's, and verified) and `workspace/email/send-login-link`.

Both are public and name an e-mail address, so each is rate limited per address (hashed in the Redis key). collab has
no separate verification step: an owner's address counts as verified. The login link is an e-mail sent by a job
through the deployment's SMTP server (`COLLAB_SMTP_HOST`), to an owner's address only; the request answers the same
whether or not the address owns a workspace, so it cannot be used to probe. collab's console signs in with a
workspace's id and auth token: the e-mail names the address's workspaces and links to the console's sign-in page
and to `continueUrl`; it is not a credential itself.
"""

import hashlib
import html
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from collab.kit import ratelimit
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.notifications import mail
from collab.notifications import repository as repo
from collab.notifications.schemas import EmailStatusQuery

log = logging.getLogger("collab.notifications.owner_mail")
RATE_LIMITED = "Rate limit exceeded for this endpoint. Try again later."
MAX_WORKSPACES = 20  # named in one login e-mail
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
SIGN_IN = "/console/sign-in"


def _bucket(kind: str, address: str) -> str:
    return f"{kind}:" + hashlib.sha256(address.strip().lower().encode()).hexdigest()[:32]


async def public_status(svc: Services, *, data: EmailStatusQuery) -> tuple[dict[str, Any], str]:
    """Velt's public form: `{verified}` for a workspace owner's address, NOT_FOUND otherwise; rate limited."""
    if data.userId is not None or data.status is not None:
        raise ApiError(
            "UNAUTHENTICATED", "The e-mail delivery report needs x-service-api-key and "
            "x-service-auth-token; without them only ownerEmail is checked.")
    if data.ownerEmail is None:
        raise invalid("ownerEmail is required (the e-mail delivery report needs the API key's credentials).",
                      [issue(["ownerEmail"], "Required", code="invalid_type")])
    owner_email = data.ownerEmail
    await ratelimit.check(svc.redis, bucket=_bucket("owner-email-status", owner_email),
                          rate=svc.settings.rate_limit_owner_email_status, now=svc.clock(), message=RATE_LIMITED)
    address = mail.addr_spec(owner_email.strip())
    owned = []
    if address is not None:
        async with svc.pool.connection() as conn:
            owned = await repo.owned_workspaces(conn, email=address, limit=1)
    if not owned:
        raise not_found("user", "owner_email")
    return {"verified": True}, "Email verified"


def allowed_hosts(svc: Services) -> set[str]:
    """The hosts a login link may continue to: this service's public address and the local ones (Velt: its console
    and localhost)."""
    hosts = set(LOCAL_HOSTS)
    host = urlsplit(svc.settings.base_url()).hostname
    if host:
        hosts.add(host.lower())
    return hosts


def check_continue_url(svc: Services, url: str) -> None:
    """INVALID_ARGUMENT for a continueUrl that is not an http(s) URL, or whose host is not allowed."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise invalid("Invalid url for continueUrl", [issue(["continueUrl"], "Invalid url for continueUrl")])
    if host.lower() not in allowed_hosts(svc):
        raise invalid("The continueUrl domain is not allowed.",
                      [issue(["continueUrl"], "The continueUrl domain is not allowed.")])


async def request_login_link(svc: Services, *, email: str, continue_url: str) -> None:
    """Check the request, count it against the address's limit, and hand the e-mail to a job (which sends it only to
    an owner's address)."""
    check_continue_url(svc, continue_url)
    await ratelimit.check(svc.redis, bucket=_bucket("login-link", email), rate=svc.settings.rate_limit_login_link,
                          now=svc.clock(), message=RATE_LIMITED)
    async with transaction(svc.pool, svc.redis) as tx:
        await tx.enqueue("send_login_link", api_key_id=None, email=email, continue_url=continue_url)


@dataclass
class _LoginMail(mail.Outgoing):
    """A login e-mail: no List-Unsubscribe (it is sent only when asked for)."""

    @property
    def headers(self) -> dict[str, str]:
        return {}


def compose_login(*, to: str, from_email: str, base_url: str, continue_url: str,
                  workspaces: list[dict[str, Any]]) -> mail.Outgoing:
    """The login e-mail: the address's workspaces, the console's sign-in page and where to continue."""
    sign_in = base_url + SIGN_IN
    names = [f"{w['name'] or w['id']} (workspace id {w['id']})" for w in workspaces]
    text = ("Someone asked to sign in to collab with this address.\n\nYour workspaces:\n" +
            "".join(f"- {n}\n" for n in names) + f"\nSign in with the workspace id and its auth token: {sign_in}\n"
            f"Then continue at: {continue_url}\n\nIf you did not ask for this, ignore this e-mail.\n")
    page = ("<html><body><p>Someone asked to sign in to collab with this address.</p><p>Your workspaces:</p><ul>" +
            "".join(f"<li>{html.escape(n)}</li>" for n in names) +
            f'</ul><p><a href="{html.escape(sign_in)}">Sign in</a> with the workspace id and its auth token, then '
            f'<a href="{html.escape(continue_url)}">continue</a>.</p>'
            "<p>If you did not ask for this, ignore this e-mail.</p></body></html>")
    return _LoginMail(to=to, from_email=from_email, from_name="collab", subject="Sign in to collab", text=text,
                      html=page, unsubscribe_url="")


async def send_login_link(svc: Services, *, email: str, continue_url: str) -> dict[str, Any]:
    """Send the login e-mail when `email` owns a workspace; raises when the server did not take it (the job retries)."""
    settings = svc.settings
    address = mail.addr_spec(email)
    if address is None:
        return {"status": "skipped"}
    async with svc.pool.connection() as conn:
        owned = await repo.owned_workspaces(conn, email=address, limit=MAX_WORKSPACES)
    if not owned:
        return {"status": "skipped"}  # not an owner's address: nothing is sent, and the caller was told the same
    if not settings.smtp_host or mail.addr_spec(settings.smtp_from) is None:
        log.warning("login link not sent: no e-mail server (COLLAB_SMTP_HOST, COLLAB_SMTP_FROM) is configured")
        return {"status": "failed", "error": "No e-mail server is configured for this service."}
    out = compose_login(to=address, from_email=settings.smtp_from or "", base_url=settings.base_url(),
                        continue_url=continue_url, workspaces=owned)
    error = await mail.send_smtp(out, host=settings.smtp_host, port=settings.smtp_port, security=settings.smtp_security,
                                 username=settings.smtp_username, password=settings.smtp_password,
                                 timeout=settings.email_timeout_s, allow_private=True)
    if error is not None:
        raise RuntimeError(f"login link not sent: {error}")
    return {"status": "sent"}
