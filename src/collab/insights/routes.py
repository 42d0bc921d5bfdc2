"""HTTP routes of memory insights: stats, patterns, reviewer profiles, alerts and their settings."""

from fastapi import APIRouter, Depends

from collab.insights import service
from collab.insights.schemas import (
    AlertConfigAnswer,
    AlertRef,
    AlertsAnswer,
    DismissAlert,
    DoneAnswer,
    GetProfile,
    PatternsAnswer,
    ProfileAnswer,
    StatsAnswer,
    UpdateAlertConfig,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Empty, Envelope, StrictJsonRoute, raw
from collab.kit.openapi import plain
from collab.kit.services import Services, services

router = APIRouter(tags=["ai"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
DONE = {"result": {"success": True}}

# Velt's memory operations answer {result: ...} alone, without status or message.


@router.post("/memory/stats/get", summary="Count judgments, profiles, patterns and knowledge sources [API-key auth]",
             responses=plain(StatsAnswer))
async def stats(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.stats(svc, tenant=tenant)})


@router.post("/memory/patterns/get", summary="List detected decision patterns [API-key auth]",
             responses=plain(PatternsAnswer))
async def patterns(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.patterns(svc, tenant=tenant)})


@router.post("/memory/profiles/get", summary="Get a reviewer's profile [API-key auth]", responses=plain(ProfileAnswer))
async def profile(body: Envelope[GetProfile], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.profile(svc, tenant=tenant, data=body.data)})


@router.post("/memory/alerts/config/get", summary="Get the alert settings [API-key auth]",
             responses=plain(AlertConfigAnswer))
async def get_alert_config(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.alert_config(svc, tenant=tenant)})


@router.post("/memory/alerts/config/update", summary="Store alert settings [API-key auth]", responses=plain(DoneAnswer))
async def update_alert_config(body: Envelope[UpdateAlertConfig], tenant: Tenant = Auth, svc: Services = Svc):
    await service.update_alert_config(svc, tenant=tenant, data=body.data)
    return raw(DONE)


@router.post("/memory/alerts/list", summary="List active alerts [API-key auth]", responses=plain(AlertsAnswer))
async def list_alerts(body: Envelope[Empty], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.alerts(svc, tenant=tenant)})


@router.post("/memory/alerts/action", summary="Mark an alert actioned [API-key auth]", responses=plain(DoneAnswer))
async def action_alert(body: Envelope[AlertRef], tenant: Tenant = Auth, svc: Services = Svc):
    await service.action_alert(svc, tenant=tenant, alert_id=body.data.alertId)
    return raw(DONE)


@router.post("/memory/alerts/dismiss", summary="Dismiss an alert [API-key auth]", responses=plain(DoneAnswer))
async def dismiss_alert(body: Envelope[DismissAlert], tenant: Tenant = Auth, svc: Services = Svc):
    await service.dismiss_alert(svc, tenant=tenant, data=body.data)
    return raw(DONE)
