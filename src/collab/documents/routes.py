"""HTTP routes of documents, folders and document migration."""

from fastapi import APIRouter, Depends

from collab.documents import folders, migration, service
from collab.documents.schemas import (
    AddDocuments,
    AddFolders,
    CountDocuments,
    DeleteDocuments,
    DeleteFolder,
    Document,
    DocumentCount,
    Folder,
    GetDocuments,
    GetFolders,
    MigrateDocument,
    Migration,
    MigrationStarted,
    MigrationStatus,
    MoveDocuments,
    UpdateDocuments,
    UpdateFolders,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, listed, ok
from collab.kit.openapi import ACKNOWLEDGED, BY_ID, answer, page
from collab.kit.services import Services, services
from collab.organizations.schemas import next_page

router = APIRouter(tags=["documents"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/organizations/documents/add", summary="Add documents to an organization [API-key auth]", responses=BY_ID)
async def add(body: Envelope[AddDocuments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.add(svc, tenant=tenant, data=body.data), "Documents added successfully.")


@router.post("/organizations/documents/get", summary="List an organization's documents [API-key auth]",
             responses=next_page(Document))
async def get(body: Envelope[GetDocuments], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await service.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Documents retrieved successfully.", nextPageToken=token)


@router.post("/organizations/documents/update", summary="Rename documents or move them to a folder [API-key auth]",
             responses=BY_ID)
async def update(body: Envelope[UpdateDocuments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Documents processed.")


@router.post("/organizations/documents/delete", summary="Delete documents and their data [API-key auth]",
             responses=BY_ID)
async def delete(body: Envelope[DeleteDocuments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Documents processed.")


@router.post("/organizations/documents/migrate", summary="Move a document to a new document ID [API-key auth]",
             responses=answer(MigrationStarted))
async def migrate(body: Envelope[MigrateDocument], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await migration.start(svc, tenant=tenant, data=body.data), "Migration started.")


@router.post("/organizations/documents/migrate/status", summary="Status of a document migration [API-key auth]",
             responses=answer(Migration))
async def migrate_status(body: Envelope[MigrationStatus], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await migration.status(svc, tenant=tenant, data=body.data), "Migration status retrieved.")


@router.post("/organizations/folders/add", summary="Add (nested) folders to an organization [API-key auth]",
             responses=BY_ID)
async def add_folders(body: Envelope[AddFolders], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await folders.add(svc, tenant=tenant, data=body.data), "Folders processed.")


@router.post("/organizations/folders/get", summary="List folders with their ancestors [API-key auth]",
             responses=page(Folder))
async def get_folders(body: Envelope[GetFolders], tenant: Tenant = Auth, svc: Services = Svc):
    records, token = await folders.get(svc, tenant=tenant, data=body.data)
    return listed(records, token, "Folders retrieved successfully.")


@router.post("/organizations/folders/update", summary="Rename folders or move them to another parent [API-key auth]",
             responses=BY_ID)
async def update_folders(body: Envelope[UpdateFolders], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await folders.update(svc, tenant=tenant, data=body.data), "Folders processed.")


@router.post("/organizations/folders/delete",
             summary="Delete a folder with its subfolders and documents [API-key auth]", responses=ACKNOWLEDGED)
async def delete_folder(body: Envelope[DeleteFolder], tenant: Tenant = Auth, svc: Services = Svc):
    await folders.delete(svc, tenant=tenant, data=body.data)
    return ok(None, "Folder deleted successfully.")


@router.post("/organizations/documents/move", summary="Move documents into a folder [API-key auth]", responses=BY_ID)
async def move(body: Envelope[MoveDocuments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.move(svc, tenant=tenant, data=body.data), "Documents moved successfully.")


@router.post("/organizations/documents/count/get", summary="Count an organization's documents [API-key auth]",
             responses=answer(DocumentCount))
async def count(body: Envelope[CountDocuments], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.count(svc, tenant=tenant, data=body.data), "Documents counted successfully.")
