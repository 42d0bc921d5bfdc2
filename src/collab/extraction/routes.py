"""HTTP route of Extract Agents."""

from fastapi import APIRouter, Depends

from collab.extraction import service
from collab.extraction.schemas import ExtractAgents, Extraction
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services

router = APIRouter(tags=["ai"], route_class=StrictJsonRoute)


@router.post("/agents/extract", summary="Extract draft agents from a checklist file [API-key auth]",
             responses=answer(Extraction))
async def extract_agents(body: Envelope[ExtractAgents], tenant: Tenant = Depends(api_key_auth),
                         svc: Services = Depends(services)):
    return ok(await service.extract(svc, tenant=tenant, data=body.data), "Agents extracted successfully.")
