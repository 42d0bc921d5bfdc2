"""HTTP routes of notification e-mail: the API key's e-mail service, delivery status (and Velt's public owner
verification), the owner's login link, one-click unsubscribe."""

import html
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse

from collab.kit.auth import Tenant, api_key_auth, api_key_auth_or_none
from collab.kit.envelope import Empty, Envelope, OrjsonResponse, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services
from collab.notifications import email, owner_mail
from collab.notifications.email import UNSUBSCRIBE
from collab.notifications.schemas import (
    EmailConfigView,
    EmailStatus,
    EmailStatusQuery,
    OwnerVerification,
    SendLoginLink,
    UpdateEmailConfig,
)

router = APIRouter(tags=["notifications"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
Token = Query(min_length=1, max_length=2000)
_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title></head>
<body><h1>{title}</h1>{content}</body></html>"""


@router.post("/workspace/emailconfig/get", summary="The API key's e-mail service [API-key auth]",
             responses=answer(EmailConfigView))
async def get_email_config(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await email.get_config(svc, tenant=tenant), "Email configuration retrieved successfully.")


@router.post("/workspace/emailconfig/update", summary="Change the API key's e-mail service [API-key auth]",
             responses=answer(EmailConfigView))
async def update_email_config(body: Envelope[UpdateEmailConfig], tenant: Tenant = Auth, svc: Services = Svc):
    result = await email.update_config(svc, tenant=tenant, data=body.data)
    return ok(result, "Email configuration updated successfully.")


@router.post("/workspace/email/status",
             summary="Whether an address owns a workspace [public]; with API-key auth, what happened to e-mails",
             responses=answer(EmailStatus | OwnerVerification))
async def email_status(body: Envelope[EmailStatusQuery], tenant: Tenant | None = Depends(api_key_auth_or_none),
                       svc: Services = Svc):
    """Told apart by the credential headers: with them, the API key's delivery report (`verified` beside it when
    ownerEmail is sent); without, Velt's public `{verified}` for an owner's address, rate limited per address."""
    data = body.data
    if tenant is not None:
        result, message = await email.status(svc, tenant=tenant, data=data)
        return ok(result, message)
    result, message = await owner_mail.public_status(svc, data=data)
    return ok(result, message)


@router.post("/workspace/email/send-login-link", summary="E-mail a workspace owner a sign-in link [public]",
             responses=answer(None))
async def send_login_link(body: Envelope[SendLoginLink], svc: Services = Svc):
    await owner_mail.request_login_link(svc, email=body.data.email, continue_url=body.data.continueUrl)
    # Velt's answer carries `data: null` (ok() leaves a None out).
    return OrjsonResponse({"result": {"status": "success", "message": "Login link sent successfully", "data": None}})


async def unsubscribe_page(token: str = Token):
    """A browser opening the link sees a button: a GET changes nothing (mail scanners follow links)."""
    action = html.escape("?token=" + quote(token, safe=""))
    form = (f'<form method="post" action="{action}"><p>Stop notification e-mails?</p>'
            '<button type="submit">Unsubscribe</button></form>')
    return HTMLResponse(_PAGE.format(title="Unsubscribe", content=form))


async def unsubscribe(token: str = Token, svc: Services = Svc):
    """RFC 8058 one-click unsubscribe (the mail client's POST) and the page's button: e-mail off for the user."""
    await email.unsubscribe(svc, token=token)
    return HTMLResponse(_PAGE.format(title="Unsubscribed", content="<p>You will get no more of these e-mails.</p>"))


# Not API operations: a browser or a mail client calls them with a signed link, so they live outside /v1 and /v2
# (the app adds them beside the console) and out of the API reference.
pages = APIRouter(include_in_schema=False)
pages.add_api_route(UNSUBSCRIBE, unsubscribe_page, methods=["GET"], response_class=HTMLResponse)
pages.add_api_route(UNSUBSCRIBE, unsubscribe, methods=["POST"], response_class=HTMLResponse)
