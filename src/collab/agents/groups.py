"""Agent groups: named, ordered sets of agents (Velt's `agents/groups/*`); membership is idempotent (ADR 0054)."""

from typing import Any

from collab.agents import repository as repo
from collab.agents.schemas import (
    AgentGroup,
    AgentGroupSummary,
    CreateGroup,
    GroupMembers,
    GroupRef,
    ListGroups,
    UpdateGroup,
)
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.db import constraints
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, invalid, issue, not_found, not_found_message
from collab.kit.jobs import transaction
from collab.kit.services import Services

# An agent deleted while it is being added to a group: the same answer as one that never existed.
constraints.register_missing("agent_group_members_agent_fkey", "agent")
constraints.register_missing("agent_group_members_group_fkey", "agent_group")
DEFAULT_PAGE = 1000


async def _known(conn: Conn, *, api_key_id: str, ids: list[str]) -> None:
    """NOT_FOUND, naming each missing agent in `details`, unless every id is one of the API key's agents."""
    found = await repo.existing_agents(conn, api_key_id=api_key_id, ids=ids)
    missing = [i for i in ids if i not in found]
    if missing:
        message = not_found_message("agent")
        raise not_found("agent", details={i: {"success": False, "id": i, "message": message} for i in missing})


async def create(svc: Services, *, tenant: Tenant, data: CreateGroup) -> dict[str, Any]:
    """Create a group, with its first members in the order sent (duplicates dropped)."""
    cap, groups_cap = svc.settings.agent_group_max_agents, svc.settings.agent_groups_max_per_api_key
    sent = data.agentIds or []
    if len(sent) > cap:  # as sent, before duplicates are dropped (Velt's rule)
        message = f"A group holds at most {cap} agents."
        raise invalid(message, [issue(["agentIds"], message, "too_big")])
    ids = list(dict.fromkeys(sent))
    group_id, now = new_id("grp_"), svc.now_ms()
    api_key_id = tenant.api_key_id
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.lock_groups(tx.conn, api_key_id=api_key_id)
        if await repo.count_groups(tx.conn, api_key_id=api_key_id) >= groups_cap:
            raise ApiError("RESOURCE_EXHAUSTED",
                           f"This workspace already has the maximum of {groups_cap} agent groups.")
        if ids:
            await _known(tx.conn, api_key_id=api_key_id, ids=ids)
        # The API key is merged in last: `metadata.apiKey` is always the workspace's own (Velt's rule).
        metadata = {**(data.metadata or {}), "apiKey": tenant.api_key_id}
        await repo.insert_group(tx.conn, api_key_id=api_key_id, id=group_id, name=data.name,
                                description=data.description or None, metadata=metadata, now=now)
        if ids:
            await repo.add_members(tx.conn, api_key_id=api_key_id, group_id=group_id, agent_ids=ids)
        row = await repo.get_group(tx.conn, api_key_id=api_key_id, id=group_id)
    assert row is not None
    return {"group": AgentGroup.wire(row)}


async def get(svc: Services, *, tenant: Tenant, data: GroupRef) -> dict[str, Any]:
    """One group with its members in order."""
    async with svc.pool.connection() as conn:
        row = await repo.get_group(conn, api_key_id=tenant.api_key_id, id=data.groupId)
    if row is None:
        raise not_found("agent_group")
    return {"group": AgentGroup.wire(row)}


async def list_(svc: Services, *, tenant: Tenant, data: ListGroups) -> dict[str, Any]:
    """A page of the groups, oldest first, each with its member count."""
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "agent_groups", {})
    after_at, after_id = pager.after(data.pageToken, 2)
    size = data.pageSize or DEFAULT_PAGE
    async with svc.pool.connection() as conn:
        rows = await repo.list_groups(conn, api_key_id=tenant.api_key_id, after_at=after_at, after_id=after_id,
                                      limit=size + 1)
    records, token = pager.cut(rows, size, "created_at", "id", render=AgentGroupSummary.wire,
                               budget=svc.settings.max_response_bytes)
    return {"groups": records} | ({"nextPageToken": token} if token else {})


async def update(svc: Services, *, tenant: Tenant, data: UpdateGroup) -> dict[str, Any]:
    """Rename a group or change its description (an empty one clears it); members and metadata stay."""
    key = {"api_key_id": tenant.api_key_id, "id": data.groupId}
    async with transaction(svc.pool, svc.redis) as tx:
        if not await repo.update_group(tx.conn, **key, name=data.name, set_description=data.description is not None,
                                       description=data.description or None, now=svc.now_ms()):
            raise not_found("agent_group")
        row = await repo.get_group(tx.conn, api_key_id=tenant.api_key_id, id=data.groupId)
    assert row is not None
    return {"group": AgentGroup.wire(row)}


async def delete(svc: Services, *, tenant: Tenant, data: GroupRef) -> dict[str, Any]:
    """Delete a group; its agents stay, in any other group too."""
    async with transaction(svc.pool, svc.redis) as tx:
        if not await repo.delete_group(tx.conn, api_key_id=tenant.api_key_id, id=data.groupId):
            raise not_found("agent_group")
    return {"groupId": data.groupId}


async def add_agents(svc: Services, *, tenant: Tenant, data: GroupMembers) -> dict[str, Any]:
    """Append agents after the group's last member; members already in it stay where they are."""
    api_key_id = tenant.api_key_id
    cap = svc.settings.agent_group_max_agents
    ids = list(dict.fromkeys(data.agentIds))
    async with transaction(svc.pool, svc.redis) as tx:
        group = await repo.get_group(tx.conn, api_key_id=api_key_id, id=data.groupId, for_update=True)
        if group is None:
            raise not_found("agent_group")
        await _known(tx.conn, api_key_id=api_key_id, ids=ids)
        members = set(group["agent_ids"])
        new = [i for i in ids if i not in members]
        if len(members) + len(new) > cap:
            raise ApiError("RESOURCE_EXHAUSTED", f"A group holds at most {cap} agents; it has {len(members)}.")
        if new:
            await repo.add_members(tx.conn, api_key_id=api_key_id, group_id=data.groupId, agent_ids=new)
            await repo.touch_group(tx.conn, api_key_id=api_key_id, id=data.groupId, now=svc.now_ms())
            group = await repo.get_group(tx.conn, api_key_id=api_key_id, id=data.groupId)
    assert group is not None
    return {"group": AgentGroup.wire(group)}


async def remove_agents(svc: Services, *, tenant: Tenant, data: GroupMembers) -> dict[str, Any]:
    """Take agents out of a group; ids that are not members are passed over."""
    api_key_id = tenant.api_key_id
    async with transaction(svc.pool, svc.redis) as tx:
        group = await repo.get_group(tx.conn, api_key_id=api_key_id, id=data.groupId, for_update=True)
        if group is None:
            raise not_found("agent_group")
        if await repo.remove_members(tx.conn, api_key_id=api_key_id, group_id=data.groupId,
                                     agent_ids=list(set(data.agentIds))):
            await repo.touch_group(tx.conn, api_key_id=api_key_id, id=data.groupId, now=svc.now_ms())
            group = await repo.get_group(tx.conn, api_key_id=api_key_id, id=data.groupId)
    assert group is not None
    return {"group": AgentGroup.wire(group)}
