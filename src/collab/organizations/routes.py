"""HTTP routes of organizations."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import BY_ID
from collab.kit.services import Services, services
from collab.organizations import service
from collab.organizations.schemas import (
    AddOrganizations,
    DeleteOrganizations,
    GetOrganizations,
    Organization,
    UpdateDisableState,
    UpdateOrganizations,
    next_page,
)

router = APIRouter(tags=["organizations"], route_class=StrictJsonRoute)


@router.post("/organizations/add", summary="Add organizations [API-key auth]", responses=BY_ID)
async def add(body: Envelope[AddOrganizations], tenant: Tenant = Depends(api_key_auth),
              svc: Services = Depends(services)):
    return ok(await service.add(svc, tenant=tenant, data=body.data), "Organizations processed.")


@router.post("/organizations/get", summary="List organizations [API-key auth]", responses=next_page(Organization))
async def get(body: Envelope[GetOrganizations], tenant: Tenant = Depends(api_key_auth),
              svc: Services = Depends(services)):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Organizations retrieved successfully.", nextPageToken=token)


@router.post("/organizations/update", summary="Rename organizations [API-key auth]", responses=BY_ID)
async def update(body: Envelope[UpdateOrganizations], tenant: Tenant = Depends(api_key_auth),
                 svc: Services = Depends(services)):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Organizations processed.")


@router.post("/organizations/delete", summary="Delete organizations and everything in them [API-key auth]",
             responses=BY_ID)
async def delete(body: Envelope[DeleteOrganizations], tenant: Tenant = Depends(api_key_auth),
                 svc: Services = Depends(services)):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Organizations processed.")


@router.post("/organizations/access/disablestate/update",
             summary="Disable or restore access to organizations [API-key auth]", responses=BY_ID)
async def disable_state(body: Envelope[UpdateDisableState], tenant: Tenant = Depends(api_key_auth),
                        svc: Services = Depends(services)):
    return ok(await service.update_disable_state(svc, tenant=tenant, data=body.data), "Disable state processed.")
