"""HTTP routes of presence."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services
from collab.presence import service
from collab.presence.schemas import DeletePresence, GetPresence, Presence, PresenceOutcome, UpdatePresence

router = APIRouter(tags=["presence"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
DONE = answer(PresenceOutcome)


@router.post("/presence/update", summary="Update users' presence on a document [API-key auth]", responses=DONE)
async def update(body: Envelope[UpdatePresence], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.upsert(svc, tenant=tenant, data=body.data), "Presence updated.")


@router.post("/presence/add", summary="Add users' presence on a document [API-key auth]", responses=DONE)
async def add(body: Envelope[UpdatePresence], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.upsert(svc, tenant=tenant, data=body.data), "Presence added.")


@router.post("/presence/delete", summary="Remove users' presence from a document [API-key auth]", responses=DONE)
async def delete(body: Envelope[DeletePresence], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Presence deleted.")


@router.post("/presence/get", summary="Users present on a document, with their status [API-key auth]",
             responses=answer(list[Presence]))
async def get(body: Envelope[GetPresence], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.get(svc, tenant=tenant, data=body.data), "Presence retrieved successfully.")
