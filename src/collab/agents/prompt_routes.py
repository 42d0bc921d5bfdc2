"""HTTP routes of the agent prompt tools (Velt's answers and messages)."""

from fastapi import APIRouter, Depends

from collab.agents import prompt_tools
from collab.agents.prompt_schemas import (
    Enhanced,
    EnhancePrompt,
    Refined,
    RefinePrompt,
    ResolveConfig,
    Resolved,
    Validated,
    ValidatePrompt,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services

router = APIRouter(tags=["agents"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/agents/prompt/enhance", summary="Check that a prompt says enough to run [API-key auth]",
             responses=answer(Enhanced))
async def enhance(body: Envelope[EnhancePrompt], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await prompt_tools.enhance(svc, tenant=tenant, data=body.data), "Prompt enhanced successfully")


@router.post("/agents/prompt/validate", summary="Expand an instruction into a QA task definition [API-key auth]",
             responses=answer(Validated))
async def validate(body: Envelope[ValidatePrompt], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await prompt_tools.validate(svc, tenant=tenant, data=body.data), "Prompt validated successfully")


@router.post("/agents/prompt/refine", summary="Refine an analysis prompt from demo feedback [API-key auth]",
             responses=answer(Refined))
async def refine(body: Envelope[RefinePrompt], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await prompt_tools.refine(svc, tenant=tenant, data=body.data), "Prompt refined successfully")


@router.post("/agents/config/resolve", summary="Recommend an agent's strategies from its instructions [API-key auth]",
             responses=answer(Resolved))
async def resolve(body: Envelope[ResolveConfig], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await prompt_tools.resolve_config(svc, tenant=tenant, data=body.data), "Config resolved successfully")
