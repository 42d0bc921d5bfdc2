"""HTTP routes of memory ask and suggest."""

from fastapi import APIRouter, Depends

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, raw
from collab.kit.openapi import plain
from collab.kit.services import Services, services
from collab.memory import service
from collab.memory.schemas import AskAnswer, AskMemory, SuggestAnswer, SuggestDecision

router = APIRouter(tags=["ai"], route_class=StrictJsonRoute)


@router.post("/memory/ask", summary="Answer a question from past judgments and knowledge [API-key auth]",
             responses=plain(AskAnswer))
async def ask(body: Envelope[AskMemory], tenant: Tenant = Depends(api_key_auth), svc: Services = Depends(services)):
    # Velt's body without status and message, like search.
    return raw({"result": await service.ask(svc, tenant=tenant, data=body.data)})


@router.post("/memory/suggest", summary="Suggest a decision from past judgments [API-key auth]",
             responses=plain(SuggestAnswer))
async def suggest(body: Envelope[SuggestDecision], tenant: Tenant = Depends(api_key_auth),
                  svc: Services = Depends(services)):
    return raw({"result": await service.suggest(svc, tenant=tenant, data=body.data)})
