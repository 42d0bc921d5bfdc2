"""HTTP routes of CRDT editor content."""

from fastapi import APIRouter, Depends

from collab.crdt import service
from collab.crdt.schemas import AddCrdt, CrdtEditor, DeleteCrdt, GetCrdt, UpdateCrdt
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import ACKNOWLEDGED, BY_ID, page
from collab.kit.services import Services, services

router = APIRouter(tags=["crdt"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/crdt/add", summary="Create an editor's CRDT (Yjs) document [API-key auth]", responses=ACKNOWLEDGED)
async def add(body: Envelope[AddCrdt], tenant: Tenant = Auth, svc: Services = Svc):
    await service.add(svc, tenant=tenant, data=body.data)
    return ok(None, "CRDT data added successfully.")


@router.post("/crdt/get", summary="Get a document's CRDT editor data, paged by size [API-key auth]",
             responses=page(CrdtEditor))
async def get(body: Envelope[GetCrdt], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "CRDT data retrieved successfully.")


@router.post("/crdt/update", summary="Change an editor's CRDT data by diff or Yjs update [API-key auth]",
             responses=ACKNOWLEDGED)
async def update(body: Envelope[UpdateCrdt], tenant: Tenant = Auth, svc: Services = Svc):
    await service.update(svc, tenant=tenant, data=body.data)
    return ok(None, "CRDT data updated successfully.")


@router.post("/crdt/delete", summary="Delete editors' CRDT data [API-key auth]", responses=BY_ID)
async def delete(body: Envelope[DeleteCrdt], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "CRDT data processed.")
