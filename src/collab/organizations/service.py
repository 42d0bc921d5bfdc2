"""Organizations: add, get, rename, delete (with everything in them) and the access disabled state."""

from typing import Any

from collab.features import delete_feature_data
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.db.pool import Conn
from collab.kit.errors import not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations import repository as repo
from collab.organizations.schemas import (
    AddOrganizations,
    DeleteOrganizations,
    GetOrganizations,
    Organization,
    UpdateDisableState,
    UpdateOrganizations,
)


async def ensure(conn: Conn, *, tenant: Tenant, organization_id: str, create: bool, now: int) -> bool:
    """Whether the organization exists, creating it first when asked to."""
    if create:
        await repo.insert(conn, api_key_id=tenant.api_key_id, id=organization_id, name=None, now=now)
    return await repo.get(conn, api_key_id=tenant.api_key_id, id=organization_id) is not None


async def add(svc: Services, *, tenant: Tenant, data: AddOrganizations) -> dict[str, Any]:
    """Create organizations; results keyed by organizationId."""
    now = svc.now_ms()
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        for org in data.organizations:
            added = await repo.insert(tx.conn, api_key_id=tenant.api_key_id, id=org.organizationId,
                                      name=org.organizationName, now=now)
            message = "Organization added." if added else "Organization already exists."
            results[org.organizationId] = {"success": added, "id": org.organizationId, "message": message}
    return results


async def get(svc: Services, *, tenant: Tenant, data: GetOrganizations) -> tuple[list[dict[str, Any]], str | None]:
    """A page of organizations in id order."""
    pager = paging.Pager(svc.keyring, f"{tenant.api_key_id}:organizations")
    (after_id, ) = pager.after(data.pageToken, 1)
    async with svc.pool.connection() as conn:
        rows = await repo.list_page(conn, api_key_id=tenant.api_key_id, ids=data.organizationIds, after_id=after_id,
                                    limit=data.pageSize + 1)
    rows, token = pager.page(rows, data.pageSize, "id")
    return [Organization.wire(r) for r in rows], token


async def update(svc: Services, *, tenant: Tenant, data: UpdateOrganizations) -> dict[str, Any]:
    """Rename organizations; results keyed by organizationId."""
    now = svc.now_ms()
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        for org in data.organizations:
            found = await repo.rename(tx.conn, api_key_id=tenant.api_key_id, id=org.organizationId,
                                      name=org.organizationName, now=now)
            message = "Organization updated." if found else not_found_message("organization")
            results[org.organizationId] = {"success": found, "id": org.organizationId, "message": message}
    return results


async def delete(svc: Services, *, tenant: Tenant, data: DeleteOrganizations) -> dict[str, Any]:
    """Delete organizations with their folders, documents, groups, access and feature data."""
    async with transaction(svc.pool, svc.redis) as tx:
        deleted = await repo.delete(tx.conn, api_key_id=tenant.api_key_id, ids=data.organizationIds)
        for organization_id in deleted:
            await delete_feature_data(tx.conn, api_key_id=tenant.api_key_id, organization_id=organization_id,
                                      document_ids=None)
    return {
        org: {
            "success": org in deleted, "id": org,
            "message": "Organization deleted." if org in deleted else not_found_message("organization")
        }
        for org in data.organizationIds
    }


async def update_disable_state(svc: Services, *, tenant: Tenant, data: UpdateDisableState) -> dict[str, Any]:
    """Disable or restore read and write access to every document of each organization."""
    async with transaction(svc.pool, svc.redis) as tx:
        found = await repo.set_disabled(tx.conn, api_key_id=tenant.api_key_id, ids=data.organizationIds,
                                        disabled=data.disabled, now=svc.now_ms())
    done = "Updated disable state for organization Successfully"  # the spec's sample message
    return {
        org: {
            "success": org in found, "id": org, "message": done if org in found else not_found_message("organization")
        }
        for org in data.organizationIds
    }
