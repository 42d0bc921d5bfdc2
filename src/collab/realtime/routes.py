"""The realtime WebSocket route and the live state endpoints."""

from urllib.parse import unquote

from fastapi import APIRouter, Depends, WebSocket

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services
from collab.realtime import access, livestate, protocol
from collab.realtime.schemas import BroadcastLiveState, GetLiveState, LiveState, LiveStateOutcome

router = APIRouter(tags=["realtime"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


def _room(ws: WebSocket) -> list[str] | None:
    """The organization, document and editor ids of the URL, each URL-decoded (an id may hold a '/')."""
    raw = ws.scope.get("raw_path") or ws.scope["path"].encode()
    tail = raw.split(b"?", 1)[0].split(b"/realtime/", 1)[-1]
    try:
        ids = [unquote(part.decode("ascii"), errors="strict") for part in tail.split(b"/")]
    except (UnicodeDecodeError, ValueError):
        return None
    return ids if len(ids) == 3 and all(access.valid_id(i) for i in ids) else None


@router.websocket("/realtime/{room:path}")
async def realtime(ws: WebSocket, room: str):
    """y-websocket rooms: /realtime/{organizationId}/{documentId}/{editorId}?token=USER_TOKEN (docs/realtime.md)."""
    ids = _room(ws)
    if ids is None:
        await ws.accept()
        await ws.close(
            protocol.UNKNOWN, "The URL is /realtime/{organizationId}/{documentId}/{editorId}, each id "
            "1-200 characters without control characters.")
        return
    await ws.app.state.realtime.serve(ws, organization_id=ids[0], document_id=ids[1], editor_id=ids[2],
                                      token=ws.query_params.get("token"), origin=ws.headers.get("origin"))


@router.post("/livestate/broadcast", summary="Push a live state value to a document's clients [API-key auth]",
             responses=answer(LiveStateOutcome))
async def broadcast(body: Envelope[BroadcastLiveState], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await livestate.broadcast(svc, tenant=tenant, data=body.data), "Event broadcasted successfully.")


@router.post("/livestate/get", summary="A document's last live state values [API-key auth]",
             responses=answer(list[LiveState]))
async def get(body: Envelope[GetLiveState], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await livestate.get(svc, tenant=tenant, data=body.data), "Live state retrieved successfully.")
