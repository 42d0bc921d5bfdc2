"""HTTP route of Ask AI."""

from fastapi import APIRouter, Depends

from collab.ask_ai import service
from collab.ask_ai.schemas import AskAi, AskAiAnswer
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, raw
from collab.kit.openapi import plain
from collab.kit.services import Services, services

router = APIRouter(tags=["ai"], route_class=StrictJsonRoute)


@router.post("/rewriter/ask-ai", summary="Rewrite text with a model [API-key auth]", responses=plain(AskAiAnswer))
async def ask_ai(body: Envelope[AskAi], tenant: Tenant = Depends(api_key_auth), svc: Services = Depends(services)):
    # The spec shapes this body itself: {result: {success, text}} or {result: {success: false, error}}.
    return raw({"result": await service.ask_ai(svc, tenant=tenant, data=body.data)})
