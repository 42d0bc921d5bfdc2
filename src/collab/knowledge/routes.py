"""HTTP routes of knowledge sources (memory/knowledge/*), and the signed upload and download URLs they mint."""

from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, raw
from collab.kit.errors import ApiError
from collab.kit.openapi import plain
from collab.kit.services import Services, services
from collab.knowledge import pipeline, service, signed, urls
from collab.knowledge.schemas import (
    DeleteAnswer,
    DownloadAnswer,
    IngestAnswer,
    IngestKnowledge,
    ListAnswer,
    ListKnowledge,
    RulesAnswer,
    SearchAnswer,
    SearchKnowledge,
    SourceRef,
    StatusAnswer,
    UpdateAnswer,
    UpdateKnowledge,
    UploadUrl,
    UploadUrlAnswer,
)

router = APIRouter(tags=["ai"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)
K = "/memory/knowledge"


def base(svc: Services, request: Request) -> str:
    """The base of the signed URLs in an answer: COLLAB_PUBLIC_URL, else the address this request reached."""
    return svc.settings.base_url(str(request.base_url))


# Velt's knowledge answers are `{result: ...}` without status and message.
@router.post(f"{K}/ingest", summary="Ingest a knowledge source [API-key auth]", responses=plain(IngestAnswer))
async def ingest(body: Envelope[IngestKnowledge], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.ingest(svc, tenant=tenant, data=body.data)})


@router.post(f"{K}/ingest-status", summary="Poll a knowledge ingestion [API-key auth]", responses=plain(StatusAnswer))
async def ingest_status(body: Envelope[SourceRef], request: Request, tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.status(svc, tenant=tenant, data=body.data, base=base(svc, request))})


@router.post(f"{K}/list", summary="List knowledge sources [API-key auth]", responses=plain(ListAnswer))
async def list_sources(body: Envelope[ListKnowledge], request: Request, tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.list_sources(svc, tenant=tenant, base=base(svc, request))})


@router.post(f"{K}/search", summary="Search the knowledge base by meaning [API-key auth]",
             responses=plain(SearchAnswer))
async def search(body: Envelope[SearchKnowledge], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.search(svc, tenant=tenant, data=body.data)})


@router.post(f"{K}/rules", summary="List a knowledge source's extracted rules [API-key auth]",
             responses=plain(RulesAnswer))
async def rules(body: Envelope[SourceRef], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.rules(svc, tenant=tenant, data=body.data)})


@router.post(f"{K}/update", summary="Replace a rule-based knowledge source's content [API-key auth]",
             responses=plain(UpdateAnswer))
async def update(body: Envelope[UpdateKnowledge], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.update(svc, tenant=tenant, data=body.data)})


@router.post(f"{K}/delete", summary="Delete a knowledge source [API-key auth]", responses=plain(DeleteAnswer))
async def delete(body: Envelope[SourceRef], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.delete(svc, tenant=tenant, data=body.data)})


@router.post(f"{K}/download", summary="A knowledge source's canonical markdown [API-key auth]",
             responses=plain(DownloadAnswer))
async def download(body: Envelope[SourceRef], tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.download(svc, tenant=tenant, data=body.data)})


@router.post(f"{K}/upload-url", summary="A signed URL to upload a knowledge file [API-key auth]",
             responses=plain(UploadUrlAnswer))
async def upload_url(body: Envelope[UploadUrl], request: Request, tenant: Tenant = Auth, svc: Services = Svc):
    return raw({"result": await service.upload_url(svc, tenant=tenant, data=body.data, base=base(svc, request))})


async def put_upload(token: str, request: Request, svc: Services = Svc):
    """The signed upload URL: the raw bytes, streamed and bounded; the signature is the only credential."""
    await signed.put_upload(svc, token=token, content_type=request.headers.get("content-type"),
                            content_length=request.headers.get("content-length"), body=request.stream())
    return Response(status_code=200)


# Files are served from the service's own origin (the console's cookie's): never rendered there, whatever they hold.
CONFINED = {
    "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox", "Cache-Control": "private, no-store"
}
DEFAULT_NAMES = {
    pipeline.PDF: "knowledge-source.pdf", pipeline.CSV: "knowledge-source.csv", pipeline.XLSX: "knowledge-source.xlsx",
    pipeline.TEXT: "knowledge-source.txt"
}


async def get_file(token: str, svc: Services = Svc):
    """A signed download URL: a source's original file or its canonical markdown, always as an attachment."""
    try:
        content, mime, name = await signed.open_file(svc, token=token)
    except ApiError as exc:  # refusals too: confined, and a download (never a page of this origin)
        exc.headers = {**(exc.headers or {}), **CONFINED, "Content-Disposition": "attachment"}
        raise
    name = name or DEFAULT_NAMES.get(mime, "knowledge-source.md")
    disposition = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
    return Response(content, media_type=mime, headers={**CONFINED, "Content-Disposition": disposition})


# Not API operations: a client PUTs or GETs them with a signed link, so they live outside /v1 and /v2 (the app adds
# them beside the console) and out of the API reference.
public = APIRouter(include_in_schema=False)
public.add_api_route(urls.UPLOAD_PATH + "{token}", put_upload, methods=["PUT"])
public.add_api_route(urls.DOWNLOAD_PATH + "{token}", get_file, methods=["GET"])
