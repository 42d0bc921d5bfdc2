"""HTTP routes of review agents, their versions and agent groups (Velt's answers and messages)."""

from fastapi import APIRouter, Depends

from collab.agents import groups, service
from collab.agents.schemas import (
    AgentCreated,
    AgentFetched,
    AgentRef,
    AgentRefAnswer,
    AgentVersions,
    CreateAgent,
    CreateGroup,
    GetAgents,
    GroupAnswer,
    GroupDeleted,
    GroupList,
    GroupMembers,
    GroupRef,
    ListAgentVersions,
    ListGroups,
    UpdateAgent,
    UpdateAgentVersion,
    UpdateGroup,
    VersionAnswer,
)
from collab.kit.auth import Tenant, api_key_auth
from collab.kit.envelope import Envelope, StrictJsonRoute, ok
from collab.kit.openapi import answer
from collab.kit.services import Services, services

router = APIRouter(tags=["agents"], route_class=StrictJsonRoute)
Auth = Depends(api_key_auth)
Svc = Depends(services)


@router.post("/agents/create", summary="Create a custom agent (version 1) [API-key auth]",
             responses=answer(AgentCreated))
async def create(body: Envelope[CreateAgent], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.create(svc, tenant=tenant, data=body.data), "Agent created successfully")


@router.post("/agents/get", summary="Get an agent, or list agents [API-key auth]", responses=answer(AgentFetched))
async def get(body: Envelope[GetAgents], tenant: Tenant = Auth, svc: Services = Svc):
    data = await service.get(svc, tenant=tenant, data=body.data)
    return ok(data, "Agent fetched successfully" if "agent" in data else "Agents fetched successfully")


@router.post("/agents/update", summary="Update an agent's name, description or enabled flag [API-key auth]",
             responses=answer(AgentRefAnswer))
async def update(body: Envelope[UpdateAgent], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update(svc, tenant=tenant, data=body.data), "Agent updated successfully")


@router.post("/agents/version/update", summary="Change an agent's behaviour: a new version [API-key auth]",
             responses=answer(VersionAnswer))
async def update_version(body: Envelope[UpdateAgentVersion], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.update_version(svc, tenant=tenant, data=body.data), "Agent version created successfully")


@router.post("/agents/versions/list", summary="List an agent's versions, newest first [API-key auth]",
             responses=answer(AgentVersions))
async def list_versions(body: Envelope[ListAgentVersions], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.list_versions(svc, tenant=tenant, data=body.data), "Versions listed successfully")


@router.post("/agents/versions/restore", summary="Undo an agent's latest version [API-key auth]",
             responses=answer(VersionAnswer))
async def restore_version(body: Envelope[AgentRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.restore(svc, tenant=tenant, data=body.data), "Version restored successfully")


@router.post("/agents/delete", summary="Delete an agent and its versions [API-key auth]",
             responses=answer(AgentRefAnswer))
async def delete(body: Envelope[AgentRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await service.delete(svc, tenant=tenant, data=body.data), "Agent deleted successfully")


@router.post("/agents/groups/create", summary="Create an agent group [API-key auth]", responses=answer(GroupAnswer))
async def create_group(body: Envelope[CreateGroup], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.create(svc, tenant=tenant, data=body.data), "Agent group created successfully")


@router.post("/agents/groups/get", summary="Get an agent group with its members [API-key auth]",
             responses=answer(GroupAnswer))
async def get_group(body: Envelope[GroupRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.get(svc, tenant=tenant, data=body.data), "Agent group fetched successfully")


@router.post("/agents/groups/list", summary="List agent groups [API-key auth]", responses=answer(GroupList))
async def list_groups(body: Envelope[ListGroups], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.list_(svc, tenant=tenant, data=body.data), "Agent groups listed successfully")


@router.post("/agents/groups/update", summary="Rename an agent group [API-key auth]", responses=answer(GroupAnswer))
async def update_group(body: Envelope[UpdateGroup], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.update(svc, tenant=tenant, data=body.data), "Agent group updated successfully")


@router.post("/agents/groups/delete", summary="Delete an agent group (its agents stay) [API-key auth]",
             responses=answer(GroupDeleted))
async def delete_group(body: Envelope[GroupRef], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.delete(svc, tenant=tenant, data=body.data), "Agent group deleted successfully")


@router.post("/agents/groups/add-agents", summary="Add agents to a group (idempotent) [API-key auth]",
             responses=answer(GroupAnswer))
async def add_agents(body: Envelope[GroupMembers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.add_agents(svc, tenant=tenant, data=body.data), "Agents added to group successfully")


@router.post("/agents/groups/remove-agents", summary="Remove agents from a group (idempotent) [API-key auth]",
             responses=answer(GroupAnswer))
async def remove_agents(body: Envelope[GroupMembers], tenant: Tenant = Auth, svc: Services = Svc):
    return ok(await groups.remove_agents(svc, tenant=tenant, data=body.data), "Agents removed from group successfully")
