"""HTTP routes of judgment memory."""

from fastapi import APIRouter, Depends

from collab.judgments import (
    reembed,  # noqa: F401  (registers the key's embedding model with apikeyconfig)
    service,
)
from collab.judgments.schemas import (
    Backfilled,
    BackfillJudgments,
    JudgmentPage,
    QueryJudgments,
    SearchAnswer,
    SearchJudgments,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok, raw
from collab.kit.openapi import answer, plain
from collab.kit.services import Services, services

router = APIRouter(tags=["ai"], route_class=StrictJsonRoute)


@router.post("/memory/search", summary="Search past judgments by meaning [API-key auth]", responses=plain(SearchAnswer))
async def search(body: Envelope[SearchJudgments], tenant: Tenant = Depends(api_key_auth),
                 svc: Services = Depends(services)):
    # The spec's one success body without status and message.
    return raw({"result": await service.search(svc, tenant=tenant, data=body.data)})


@router.post("/memory/judgments/query", summary="List judgments by filters [API-key auth]",
             responses={200: {"model": JudgmentPage}})
async def query(body: Envelope[QueryJudgments], tenant: Tenant = Depends(api_key_auth),
                svc: Services = Depends(services)):
    records, token = await service.query(svc, tenant=tenant, data=body.data)
    velt = {"results": records, "total": len(records)} if body.data.limit is not None else {}  # Velt's form, beside
    return listed(records, token, "Judgments retrieved successfully.", **velt)


@router.post("/memory/backfill/judgments", summary="Derive the key's judgments again, a batch a call [API-key auth]",
             responses=answer(Backfilled))
async def backfill(body: Envelope[BackfillJudgments], tenant: Tenant = Depends(api_key_auth),
                   svc: Services = Depends(services)):
    return ok(await service.backfill(svc, tenant=tenant, data=body.data), "Judgments backfilled.")
