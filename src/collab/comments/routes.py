"""HTTP routes of comment threads (Velt's /commentannotations/*)."""

from fastapi import APIRouter, Depends

from collab.comments import replies, service
from collab.comments.schemas import (
    AddAnnotations,
    AddComments,
    Added,
    AnnotationsPage,
    Comment,
    Count,
    CountAnnotations,
    DeleteAnnotations,
    DeleteComments,
    GetAnnotations,
    GetComments,
    Outcome,
    Reaction,
    ReadUpdate,
    UpdateAnnotations,
    UpdateComments,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import answer, page, plain
from collab.kit.services import Services, services

router = APIRouter(tags=["comments"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
BASE = "/commentannotations"
KEYED = answer(dict[str, Outcome])


@router.post(f"{BASE}/add", summary="Add comment threads [API-key auth]", responses=answer(dict[str, Added]))
async def add(body: Envelope[AddAnnotations], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.add(svc, tenant=tenant, data=body.data), "Comment annotations processed.")


@router.post(f"{BASE}/get", summary="List comment threads with their comments [API-key auth]",
             responses=plain(AnnotationsPage))
async def get(body: Envelope[GetAnnotations], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Comment annotations retrieved successfully.", nextPageToken=token)


@router.post(f"{BASE}/update", summary="Update comment threads or rewrite user identities [API-key auth]",
             responses=KEYED)
async def update(body: Envelope[UpdateAnnotations], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Comment annotations processed.")


@router.post(f"{BASE}/delete", summary="Delete comment threads [API-key auth]", responses=KEYED)
async def delete(body: Envelope[DeleteAnnotations], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Comment annotations processed.")


@router.post(f"{BASE}/count/get", summary="Thread and unread counts per document for a user [API-key auth]",
             responses=answer(dict[str, Count]))
async def count(body: Envelope[CountAnnotations], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.count(svc, tenant=tenant, data=body.data), "Comment annotation counts retrieved.")


@router.post(f"{BASE}/read/update", summary="Mark comment threads read for a user [API-key auth]", responses=KEYED)
async def read(body: Envelope[ReadUpdate], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.read(svc, tenant=tenant, data=body.data), "Read state updated.")


@router.post(f"{BASE}/comments/add", summary="Add comments to a thread [API-key auth]", responses=KEYED)
async def add_comments(body: Envelope[AddComments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await replies.add(svc, tenant=tenant, data=body.data), "Comments processed.")


@router.post(f"{BASE}/comments/get", summary="Get the comments of a thread, in pages [API-key auth]",
             responses=page(Comment))
async def get_comments(body: Envelope[GetComments], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await replies.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Comments retrieved successfully.")


@router.post(f"{BASE}/comments/update", summary="Edit comments of a thread [API-key auth]", responses=KEYED)
async def update_comments(body: Envelope[UpdateComments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await replies.update(svc, tenant=tenant, data=body.data), "Comments processed.")


@router.post(f"{BASE}/comments/delete", summary="Delete comments of a thread [API-key auth]", responses=KEYED)
async def delete_comments(body: Envelope[DeleteComments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await replies.delete(svc, tenant=tenant, data=body.data), "Comments processed.")


@router.post(f"{BASE}/comments/reactions/add", summary="React to a comment [API-key auth]", responses=answer(Outcome))
async def add_reaction(body: Envelope[Reaction], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await replies.react(svc, tenant=tenant, data=body.data, add=True), "Reaction processed.")


@router.post(f"{BASE}/comments/reactions/delete", summary="Take back a reaction [API-key auth]",
             responses=answer(Outcome))
async def delete_reaction(body: Envelope[Reaction], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await replies.react(svc, tenant=tenant, data=body.data, add=False), "Reaction processed.")
