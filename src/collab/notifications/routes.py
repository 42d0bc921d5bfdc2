"""HTTP routes of notifications."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import BY_ID, answer, page
from collab.kit.services import Services, services
from collab.notifications import preferences, service
from collab.notifications.schemas import (
    AddNotification,
    DeleteNotifications,
    GetNotifications,
    GetPreferences,
    Notification,
    NotificationAdded,
    PreferenceSet,
    SetPreferences,
    UpdateNotifications,
    UserPreference,
)

router = APIRouter(tags=["notifications"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/notifications/add", summary="Add an in-app notification [API-key auth]",
             responses=answer(NotificationAdded))
async def add(body: Envelope[AddNotification], tenant: Tenant = Auth, svc: Services = Svc):
    result = await service.add(svc, tenant=tenant, data=body.data)
    return ok(result, result["message"])


@router.post("/notifications/get", summary="List notifications (advanced queries) [API-key auth]",
             responses=page(Notification))
async def get(body: Envelope[GetNotifications], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Notifications retrieved successfully.")


@router.post("/notifications/update", summary="Update notifications or mark them read [API-key auth]", responses=BY_ID)
async def update(body: Envelope[UpdateNotifications], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Notifications processed.")


@router.post("/notifications/delete", summary="Delete notifications [API-key auth]", responses=BY_ID)
async def delete(body: Envelope[DeleteNotifications], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Notifications processed.")


@router.post("/notifications/config/get", summary="A user's notification channels [API-key auth]",
             responses=answer(list[UserPreference]))
async def get_config(body: Envelope[GetPreferences], tenant: Tenant = Auth, svc: Services = Svc):
    result = await preferences.get_config(svc, tenant=tenant, data=body.data)
    return ok(result, "User config fetched successfully.")


@router.post("/notifications/config/set", summary="Set users' notification channels [API-key auth]",
             responses=answer(dict[str, PreferenceSet]))
async def set_config(body: Envelope[SetPreferences], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await preferences.set_config(svc, tenant=tenant, data=body.data), preferences.SET)
