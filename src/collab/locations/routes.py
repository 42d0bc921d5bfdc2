"""HTTP routes of Velt's v1 location operations (/organizations/documents/locations/*)."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import ACKNOWLEDGED
from collab.kit.services import Services, services
from collab.locations import service
from collab.locations.schemas import DeleteLocationData, UpdateLocation

router = APIRouter(tags=["comments"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
L = "/organizations/documents/locations"


@router.post(f"{L}/update", summary="Move a document's threads at a location to a new one [API-key auth]",
             responses=ACKNOWLEDGED)
async def update(body: Envelope[UpdateLocation], tenant: Tenant = Auth, svc: Services = Svc):
    await service.update(svc, tenant=tenant, data=body.data)
    return ok(None, "Location updated.")


@router.post(f"{L}/data/delete", summary="Delete a document's data at a location [API-key auth]",
             responses=ACKNOWLEDGED)
async def delete_data(body: Envelope[DeleteLocationData], tenant: Tenant = Auth, svc: Services = Svc):
    await service.delete_data(svc, tenant=tenant, data=body.data)
    return ok(None, "Data deleted successfully.")
