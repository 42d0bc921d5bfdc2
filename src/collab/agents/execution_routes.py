"""HTTP routes of agent executions and agent analytics (Velt's answers and messages; ADR 0055)."""

from fastapi import APIRouter, Depends

from collab.agents import executions
from collab.agents.execution_schemas import (
    AnalyticsAnswer,
    CountExecutions,
    ExecutionCount,
    ExecutionFetched,
    ExecutionList,
    ExecutionStarted,
    GetAnalytics,
    GetExecution,
    ListExecutions,
    RunExecution,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services

router = APIRouter(tags=["agents"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/agents/execution/run", summary="Start an agent execution on a document [API-key auth]",
             responses=answer(ExecutionStarted))
async def run(body: Envelope[RunExecution], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await executions.run(svc, tenant=tenant, data=body.data), "Agent execution created successfully")


@router.post("/agents/execution/get", summary="Get an execution, optionally with its results [API-key auth]",
             responses=answer(ExecutionFetched))
async def get(body: Envelope[GetExecution], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await executions.get(svc, tenant=tenant, data=body.data), "Execution fetched successfully")


@router.post("/agents/execution/list", summary="List executions, newest first [API-key auth]",
             responses=answer(ExecutionList))
async def list_(body: Envelope[ListExecutions], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await executions.list_(svc, tenant=tenant, data=body.data), "Executions listed successfully")


@router.post("/agents/execution/count", summary="Count executions, per agent or in all [API-key auth]",
             responses=answer(ExecutionCount))
async def count(body: Envelope[CountExecutions], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await executions.count(svc, tenant=tenant, data=body.data), "Execution count fetched successfully")


@router.post("/agents/analytics/get", summary="Token usage and execution counts of agents [API-key auth]",
             responses=answer(AnalyticsAnswer))
async def analytics(body: Envelope[GetAnalytics], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await executions.analytics(svc, tenant=tenant, data=body.data), "Analytics fetched successfully")
