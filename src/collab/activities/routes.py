"""HTTP routes of the activity log."""

from fastapi import APIRouter, Depends

from collab.activities import service
from collab.activities.schemas import (
    ActivitiesAdded,
    ActivitiesDeleted,
    Activity,
    ActivityOutcome,
    AddActivities,
    DeleteActivities,
    GetActivities,
    UpdateActivities,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import answer, page
from collab.kit.services import Services, services

router = APIRouter(tags=["activities"], route_class=StrictJsonRoute)


@router.post("/activities/add", summary="Add activity log records [API-key auth]", responses=answer(ActivitiesAdded))
async def add(body: Envelope[AddActivities], tenant: Tenant = Depends(api_key_auth), svc: Services = Depends(services)):
    result = await service.add(svc, tenant=tenant, data=body.data)
    return ok(result, result["message"])


@router.post("/activities/update", summary="Update activity log records [API-key auth]",
             responses=answer(dict[str, ActivityOutcome]))
async def update(body: Envelope[UpdateActivities], tenant: Tenant = Depends(api_key_auth),
                 svc: Services = Depends(services)):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Activities processed.")


@router.post("/activities/get", summary="List activity log records [API-key auth]", responses=page(Activity))
async def get(body: Envelope[GetActivities], tenant: Tenant = Depends(api_key_auth), svc: Services = Depends(services)):
    records, token = await service.list_activities(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Activities retrieved successfully.")


@router.post("/activities/delete", summary="Delete activity log records [API-key auth]",
             responses=answer(ActivitiesDeleted))
async def delete(body: Envelope[DeleteActivities], tenant: Tenant = Depends(api_key_auth),
                 svc: Services = Depends(services)):
    result = await service.delete(svc, tenant=tenant, data=body.data)
    return ok(result, result["message"])
