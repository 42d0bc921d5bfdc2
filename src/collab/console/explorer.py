"""Console page 5, Data explorer: organizations -> folders -> documents; who can see a document and why (direct,
folder, organization, group); a document's activities; a user's notifications. Paged, through the API's services."""

from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request

from collab.activities import service as activities
from collab.activities.schemas import GetActivities
from collab.console import outcomes
from collab.console.forms import PAGE
from collab.console.render import render
from collab.console.session import Console, Signed
from collab.documents import folders as folders_service
from collab.documents import service as documents
from collab.documents.schemas import GetDocuments, GetFolders
from collab.notifications import service as notifications
from collab.notifications.schemas import GetNotifications
from collab.organizations import service as organizations
from collab.organizations.schemas import GetOrganizations
from collab.permissions import explain

router = APIRouter()
PAGE_SIZE = 25


def when(ms: Any) -> str:
    """Epoch milliseconds as a UTC time a person reads."""
    if not isinstance(ms, (int, float)):
        return ""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _page(request: Request, console: Console, template: str, *, title: str, outcome=None, **context):
    outcome = outcome or outcomes.Outcome()
    errors = {}
    if not outcome.ok:  # these pages' only field is the user id; anything else is said at the top of the page
        errors = {PAGE: outcome.message or next(iter(outcome.errors.values()))}
        if "userId" in outcome.errors:
            errors["user"] = outcome.errors["userId"]
    return render(request, console, template, title=title, status=outcome.status, errors=errors, when=when, **context)


def _missing(request: Request, console: Console, *, key: str, keys, what: str):
    return render(request, console, "explorer_missing.html", title=f"{what} not found", status=404, key=key, keys=keys,
                  what=what)


async def _organization(console: Console, tenant, org: str | None) -> dict[str, Any] | None:
    if not org or len(org) > 200:
        return None
    found, _ = await organizations.get(console.svc, tenant=tenant, data=GetOrganizations(organizationIds=[org]))
    return found[0] if found else None


@router.get("/explorer")
async def explorer(request: Request, key: str | None = None, page: str | None = None, console: Console = Signed):
    tenant, keys, key = await outcomes.selected_key(console, key)
    listed = await outcomes.run(lambda: organizations.get(
        console.svc, tenant=tenant, data=GetOrganizations(**outcomes.given(pageSize=PAGE_SIZE, pageToken=page))))
    rows, token = listed.value or ([], None)
    return _page(request, console, "explorer.html", title="Data explorer", outcome=listed, keys=keys, key=key,
                 organizations=rows, next_page=token, paged=page is not None)


@router.get("/explorer/organization")
async def organization(request: Request, org: str = "", key: str | None = None, folder: str | None = None,
                       page: str | None = None, console: Console = Signed):
    tenant, keys, key = await outcomes.selected_key(console, key)
    found = await _organization(console, tenant, org)
    if found is None:
        return _missing(request, console, key=key, keys=keys, what="Organization")
    svc = console.svc
    tree, _ = await folders_service.get(svc, tenant=tenant, data=GetFolders(organizationId=org))  # the first page
    query = outcomes.given(organizationId=org, folderId=folder or None, pageSize=PAGE_SIZE, pageToken=page)
    listed = await outcomes.run(lambda: documents.get(svc, tenant=tenant, data=GetDocuments(**query)))
    rows, token = listed.value or ([], None)
    paged = page is not None
    return _page(request, console, "explorer_organization.html", title=f"Organization {org}", outcome=listed, keys=keys,
                 key=key, organization=found, folders=tree, folder=folder, documents=rows, next_page=token, paged=paged)


@router.get("/explorer/document")
async def document(request: Request, org: str = "", doc: str = "", key: str | None = None, page: str | None = None,
                   console: Console = Signed):
    tenant, keys, key = await outcomes.selected_key(console, key)
    svc = console.svc
    access = await outcomes.run(
        lambda: explain.explain_document(svc, tenant=tenant, organization_id=org, document_id=doc))
    if access.status == 404 or not org or not doc:
        return _missing(request, console, key=key, keys=keys, what="Document")
    query = outcomes.given(organizationId=org, documentId=doc, pageSize=PAGE_SIZE, pageToken=page)
    listed = await outcomes.run(lambda: activities.list_activities(svc, tenant=tenant, data=GetActivities(**query)))
    rows, token = listed.value or ([], None)
    rows = outcomes.plain(rows)
    paged = page is not None
    return _page(request, console, "explorer_document.html", title=f"Document {doc}", outcome=listed, keys=keys,
                 key=key, org=org, doc=doc, access=access.value, activities=rows, next_page=token, paged=paged)


@router.get("/explorer/user")
async def user(request: Request, org: str = "", user: str = "", key: str | None = None, page: str | None = None,
               console: Console = Signed):
    tenant, keys, key = await outcomes.selected_key(console, key)
    if await _organization(console, tenant, org) is None:
        return _missing(request, console, key=key, keys=keys, what="Organization")
    listed = outcomes.Outcome()
    if user:
        query = outcomes.given(organizationId=org, userId=user, pageSize=PAGE_SIZE, pageToken=page)
        listed = await outcomes.run(
            lambda: notifications.get(console.svc, tenant=tenant, data=GetNotifications(**query)))
    rows, token = listed.value or ([], None)
    rows = outcomes.plain(rows)
    return _page(request, console, "explorer_user.html", title=f"Notifications of {user or 'a user'}", outcome=listed,
                 keys=keys, key=key, org=org, user=user, notifications=rows, next_page=token, paged=page is not None)
