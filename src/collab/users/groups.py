"""Organization user groups and their members; a group's grants apply to every member."""

from typing import Any

from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.errors import not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.organizations.service import ensure as ensure_organization
from collab.permissions import profiles
from collab.permissions import repository as permissions_repo
from collab.users import repository as repo
from collab.users.schemas import AddGroups, DeleteGroupUsers, GetGroups, Group, GroupUsers

REMOVED = "User removed from group."


async def add(svc: Services, *, tenant: Tenant, data: AddGroups) -> dict[str, Any]:
    """Groups added to an organization (made first when asked to); keyed by groupId."""
    now = svc.now_ms()
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        exists = await ensure_organization(tx.conn, tenant=tenant, organization_id=data.organizationId,
                                           create=data.createOrganization, now=now)
        for group in data.organizationUserGroups:
            if not exists:
                results[group.groupId] = {
                    "success": False, "id": group.groupId, "message": not_found_message("organization")
                }
                continue
            added = await repo.insert_group(tx.conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                            id=group.groupId, name=group.groupName, now=now)
            message = "Group added." if added else "Group already exists."
            results[group.groupId] = {"success": added, "id": group.groupId, "message": message}
    return results


async def add_users(svc: Services, *, tenant: Tenant, data: GroupUsers) -> dict[str, Any]:
    """Put users into a group; keyed by userId with the group's id."""
    return await _members(svc, tenant=tenant, data=data, adding=True)


async def delete_users(svc: Services, *, tenant: Tenant, data: DeleteGroupUsers) -> dict[str, Any]:
    """Take users (or, with deleteAll, every member) out of a group; keyed by userId with the group's id."""
    if not data.deleteAll:
        return await _members(svc, tenant=tenant, data=data, adding=False)
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    group_id = data.organizationUserGroupId
    async with transaction(svc.pool, svc.redis) as tx:
        if not await permissions_repo.group_exists(tx.conn, **key, id=group_id):
            raise not_found("group")  # no user to key the answer by
        removed = await repo.delete_all_members(tx.conn, **key, group_id=group_id)
    return {u: {"success": True, "organizationUserGroupId": group_id, "message": REMOVED} for u in removed}


async def get(svc: Services, *, tenant: Tenant, data: GetGroups) -> tuple[list[dict[str, Any]], str | None]:
    """A page of an organization's user groups in id order, each with how many members it has."""
    pager = paging.Pager.for_query(
        svc.keyring, tenant.api_key_id, "usergroups",
        {"organizationId": data.organizationId, "organizationUserGroupIds": data.organizationUserGroupIds})
    (after_id, ) = pager.after(data.pageToken, 1)
    async with svc.pool.connection() as conn:
        rows = await repo.list_groups(conn, api_key_id=tenant.api_key_id, organization_id=data.organizationId,
                                      ids=data.organizationUserGroupIds, after_id=after_id, limit=data.pageSize + 1)
    rows, token = pager.page(rows, data.pageSize, "id")
    return [Group.wire(r) for r in rows], token


async def _members(svc: Services, *, tenant: Tenant, data: GroupUsers | DeleteGroupUsers,
                   adding: bool) -> dict[str, Any]:
    now = svc.now_ms()
    key = {"api_key_id": tenant.api_key_id, "organization_id": data.organizationId}
    group_id = data.organizationUserGroupId
    results: dict[str, Any] = {}
    async with transaction(svc.pool, svc.redis) as tx:
        exists = await permissions_repo.group_exists(tx.conn, **key, id=group_id)
        for user_id in data.userIds or []:
            if not exists:
                success, message = False, not_found_message("group")
            elif adding:
                await profiles.record_user(tx.conn, api_key_id=tenant.api_key_id, id=user_id, now=now)
                new = await repo.insert_member(tx.conn, **key, group_id=group_id, user_id=user_id)
                success, message = True, "User added to group." if new else "User is already in the group."
            else:
                success = await repo.delete_member(tx.conn, **key, group_id=group_id, user_id=user_id)
                message = REMOVED if success else "User is not in the group."
            results[user_id] = {"success": success, "organizationUserGroupId": group_id, "message": message}
    return results
