"""Console page 4, Webhooks: one API key's endpoints (create, edit, disable, delete, reveal and rotate the secret),
each endpoint's message log with every attempt, retry a message, send a test event. Same services as the API."""

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request

from collab.console import outcomes
from collab.console.outcomes import Outcome
from collab.console.render import render, see_other
from collab.console.session import Console, Signed, checked_form, flash
from collab.webhooks import examples, messages, service
from collab.webhooks.schemas import (
    EVENT_TYPES,
    CreateEndpoint,
    EndpointRef,
    ListEndpoints,
    ListMessages,
    RetryMessage,
    UpdateEndpoint,
)

router = APIRouter()
LOG_PAGE = 20
NOTICES = {
    "created": "Endpoint created.", "updated": "Endpoint saved.", "enabled": "Endpoint enabled.",
    "disabled": "Endpoint disabled.", "deleted": "Endpoint deleted.", "tested": "Test event queued.",
    "retried": "Message queued for redelivery."
}


async def _back(console: Console, key: str, notice: str, endpoint: str | None = None):
    """Post/redirect/get: the notice is flashed on the page the redirect shows."""
    await flash(console, NOTICES[notice])
    return see_other("/console/webhooks?" + urlencode({"key": key, **({"endpoint": endpoint} if endpoint else {})}))


async def _show(request: Request, console: Console, *, key: str | None, endpoint: str | None = None,
                after: str | None = None, notice: str | None = None, outcome: Outcome | None = None,
                form: str | None = None, values: dict[str, Any] | None = None, secret: str | None = None):
    tenant, keys, key = await outcomes.selected_key(console, key)
    svc = console.svc
    outcome = outcome or Outcome()
    listing = await outcomes.run(service.list_endpoints(svc, tenant=tenant, data=ListEndpoints(limit=250)))
    endpoints = listing.value["data"] if listing.value else []
    selected = next((e for e in endpoints if e["id"] == endpoint), None) if endpoint else None
    if endpoint and listing.value and selected is None:
        return render(request, console, "webhooks_missing.html", title="Endpoint not found", status=404, keys=keys,
                      key=key)
    if notice:
        console.flash.append(notice)
    log = None
    if selected is not None:
        query = outcomes.given(endpointId=selected["id"], limit=LOG_PAGE, iterator=after)
        log = await outcomes.run(lambda: messages.list_messages(svc, tenant=tenant, data=ListMessages(**query)))
    return render(request, console, "webhooks.html", title="Webhooks", status=outcome.status, keys=keys, key=key,
                  errors=outcome.page_errors, off=listing.message, endpoints=endpoints, selected=selected, log=log,
                  after=after, outcome=outcome, form=form, values=values or {}, secret=secret, event_types=EVENT_TYPES)


@router.get("/webhooks")
async def webhooks(request: Request, key: str | None = None, endpoint: str | None = None, after: str | None = None,
                   console: Console = Signed):
    return await _show(request, console, key=key, endpoint=endpoint, after=after)


def _endpoint_values(form) -> dict[str, Any]:
    """The endpoint fields of a posted form, shaped as the API's request takes them."""
    return {
        "url": outcomes.text(form.get("url")) or "", "description": outcomes.text(form.get("description")) or "",
        "filterTypes": [t for t in form.getlist("filterTypes") if t] or None,
        "channels": outcomes.words(form.get("channels")), "rateLimit": outcomes.number(form.get("rateLimit")),
        "disabled": form.get("disabled") == "on"
    }


@router.post("/webhooks/create")
async def create(request: Request, console: Console = Signed):
    form = await checked_form(request, console)
    key, values = form.get("key"), _endpoint_values(form)
    tenant, _, key = await outcomes.selected_key(console, key)
    data, outcome = outcomes.parse(CreateEndpoint, values)
    if data is not None:
        outcome = await outcomes.run(service.create(console.svc, tenant=tenant, data=data))
    if not outcome.ok:
        return await _show(request, console, key=key, outcome=outcome, form="create", values=values)
    return await _back(console, key, "created", outcome.value["id"])


@router.post("/webhooks/update")
async def update(request: Request, console: Console = Signed):
    form = await checked_form(request, console)
    key, endpoint, values = form.get("key"), form.get("endpoint"), _endpoint_values(form)
    endpoint = endpoint if isinstance(endpoint, str) else None  # a field, never a file
    tenant, _, key = await outcomes.selected_key(console, key)
    data, outcome = outcomes.parse(UpdateEndpoint, {"endpointId": endpoint, **values})
    if data is not None:
        outcome = await outcomes.run(service.update(console.svc, tenant=tenant, data=data))
    if not outcome.ok:
        return await _show(request, console, key=key, endpoint=endpoint, outcome=outcome, form="edit", values=values)
    return await _back(console, key, "updated", endpoint)


async def _act(request: Request, console: Console, action):
    """Run a one-button action on an endpoint: the form's key and endpoint in, the page with the outcome out."""
    form = await checked_form(request, console)
    key, endpoint = form.get("key"), form.get("endpoint") or ""
    tenant, _, key = await outcomes.selected_key(console, key)
    outcome = await outcomes.run(lambda: action(tenant, endpoint, form))
    return key, endpoint, outcome


async def _done(request, console, key, endpoint, outcome, notice, *, form: str, after_delete: bool = False):
    if not outcome.ok:  # an endpoint that is not this key's shows the not-found page (404)
        return await _show(request, console, key=key, endpoint=endpoint, outcome=outcome, form=form)
    return await _back(console, key, notice, None if after_delete else endpoint)


@router.post("/webhooks/toggle")
async def toggle(request: Request, console: Console = Signed):

    def action(tenant, endpoint, form):
        data = UpdateEndpoint(endpointId=endpoint, disabled=form.get("disabled") == "true")
        return service.update(console.svc, tenant=tenant, data=data)

    key, endpoint, outcome = await _act(request, console, action)
    notice = "disabled" if outcome.value and outcome.value["disabled"] else "enabled"
    return await _done(request, console, key, endpoint, outcome, notice, form="toggle")


@router.post("/webhooks/delete")
async def delete(request: Request, console: Console = Signed):
    key, endpoint, outcome = await _act(
        request, console,
        lambda tenant, endpoint, form: service.delete(console.svc, tenant=tenant, data=EndpointRef(endpointId=endpoint))
    )
    return await _done(request, console, key, endpoint, outcome, "deleted", form="delete", after_delete=True)


@router.post("/webhooks/secret")
async def reveal(request: Request, console: Console = Signed):
    key, endpoint, outcome = await _act(
        request, console, lambda tenant, endpoint, form: service.get_secret(console.svc, tenant=tenant, data=
                                                                            EndpointRef(endpointId=endpoint)))
    if not outcome.ok:
        return await _done(request, console, key, endpoint, outcome, "", form="secret")
    # Shown in this answer only (never in a URL, never stored in the page's address or a redirect).
    return await _show(request, console, key=key, endpoint=endpoint, secret=outcome.value["key"])


@router.post("/webhooks/rotate")
async def rotate(request: Request, console: Console = Signed):
    key, endpoint, outcome = await _act(
        request, console, lambda tenant, endpoint, form: service.rotate_secret(console.svc, tenant=tenant, data=
                                                                               EndpointRef(endpointId=endpoint)))
    if not outcome.ok:
        return await _done(request, console, key, endpoint, outcome, "", form="secret")
    return await _show(request, console, key=key, endpoint=endpoint, secret=outcome.value["key"],
                       notice="Secret rotated: the previous one keeps signing beside it for 24 hours.")


@router.post("/webhooks/test")
async def send_test(request: Request, console: Console = Signed):
    key, endpoint, outcome = await _act(
        request, console, lambda tenant, endpoint, form: examples.send_test(
            console.svc, tenant=tenant, endpoint_id=endpoint, event_type=form.get("eventType") or ""))
    return await _done(request, console, key, endpoint, outcome, "tested", form="test")


@router.post("/webhooks/retry")
async def retry(request: Request, console: Console = Signed):

    def action(tenant, endpoint, form):
        data = RetryMessage(endpointId=endpoint, messageId=form.get("message") or "")
        return messages.retry(console.svc, tenant=tenant, data=data)

    key, endpoint, outcome = await _act(request, console, action)
    return await _done(request, console, key, endpoint, outcome, "retried", form="retry")
