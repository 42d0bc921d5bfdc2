"""Velt's v1 location operations. A location is a free-form object on a document's threads (and its id on their
notifications); these move every thread at one location to another, or delete everything at a location."""

from typing import Any

from collab.comments import access
from collab.comments import repository as comments_repo
from collab.comments import service as comments
from collab.comments.schemas import DeleteAnnotations
from collab.kit.auth import Tenant
from collab.kit.errors import invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.locations import repository as repo
from collab.locations.schemas import DeleteLocationData, UpdateLocation


async def _organization(conn, *, tenant: Tenant, organization_id: str | None, document_id: str) -> str:
    if organization_id is not None:
        return organization_id
    found = await comments_repo.document_organizations(conn, api_key_id=tenant.api_key_id, document_id=document_id)
    if not found:
        raise not_found("document")
    if len(found) > 1:
        message = "Documents with this id are in several organizations: name its organizationId."
        raise invalid(message, [issue(["organizationId"], message, "missing")])
    return found[0]


async def update(svc: Services, *, tenant: Tenant, data: UpdateLocation) -> dict[str, Any]:
    """Move the document's threads at oldLocation (by its id) to newLocation, merged over it or in its place."""
    old, new = data.migrate.oldLocation, data.migrate.newLocation
    async with transaction(svc.pool, svc.redis) as tx:
        organization_id = await _organization(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                              document_id=data.documentId)
        await access.writable(tx.conn, tenant=tenant, organization_id=organization_id)
        moved = await repo.migrate_location(tx.conn, api_key_id=tenant.api_key_id, organization_id=organization_id,
                                            document_id=data.documentId, old_id=str(old["id"]), location=new,
                                            location_id=None if new.get("id") is None else str(new["id"]),
                                            merge=data.merge, now=int(svc.clock() * 1000))
    return {"annotationIds": moved}


async def delete_data(svc: Services, *, tenant: Tenant, data: DeleteLocationData) -> dict[str, Any]:
    """Delete the document's threads at the location (with everything in them) and its notifications there."""
    location_id = str(data.location["id"])
    async with svc.pool.connection() as conn:
        organization_id = await _organization(conn, tenant=tenant, organization_id=data.organizationId,
                                              document_id=data.documentId)
    threads = await comments.delete(
        svc, tenant=tenant, data=DeleteAnnotations(organizationId=organization_id, documentId=data.documentId,
                                                   locationIds=[location_id]))
    async with transaction(svc.pool, svc.redis) as tx:
        gone = await repo.delete_location_notifications(tx.conn, api_key_id=tenant.api_key_id,
                                                        organization_id=organization_id, document_id=data.documentId,
                                                        location_id=location_id)
    return {"annotationIds": sorted(i for i, o in threads.items() if o["success"]), "notificationIds": gone}
