"""HTTP routes of recordings."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import BY_ID, page
from collab.kit.services import Services, services
from collab.recordings import service
from collab.recordings.schemas import AddRecordings, DeleteRecordings, GetRecordings, Recording

router = APIRouter(tags=["recordings"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/recordings/get", summary="List recording annotations [API-key auth]", responses=page(Recording))
async def get(body: Envelope[GetRecordings], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Recordings retrieved successfully.")


@router.post("/recordings/add", summary="Import recordings; an existing annotationId gets a new version [API-key auth]",
             responses=BY_ID)
async def add(body: Envelope[AddRecordings], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.add(svc, tenant=tenant, data=body.data), "Recordings processed.")


@router.post("/recordings/delete", summary="Delete recordings with all their versions [API-key auth]", responses=BY_ID)
async def delete(body: Envelope[DeleteRecordings], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Recordings processed.")
