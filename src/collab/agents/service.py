"""Review agents: create, get or list, identity update, versions (update, list, restore), delete (ADR 0054)."""

import base64
from typing import Any

from pydantic import ValidationError

from collab.agents import repository as repo
from collab.agents.behaviour import (
    BEHAVIOUR_FIELDS,
    MAX_BEHAVIOUR_BYTES,
    behaviour_of,
    dump,
    merged,
    size,
    with_secrets,
)
from collab.agents.schemas import (
    Agent,
    AgentRef,
    AgentSummary,
    AgentVersion,
    Behaviour,
    CreateAgent,
    GetAgents,
    ListAgentVersions,
    UpdateAgent,
    UpdateAgentVersion,
)
from collab.kit import paging
from collab.kit.auth import Tenant
from collab.kit.crypto import Keyring, new_id
from collab.kit.db import constraints
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.kit.validation import failure

constraints.register_missing("agent_versions_agent_fkey", "agent")
DEFAULT_PAGE = 1000  # Velt's lists are whole: a page holds them all unless they pass the byte budget


def _aad(api_key_id: str, agent_id: str) -> str:
    return f"agent-secrets:{api_key_id}:{agent_id}"


def sealed(keyring: Keyring, *, api_key_id: str, agent_id: str, behaviour: dict[str, Any]) -> dict[str, Any]:
    """A behaviour as stored: each auth secret encrypted, bound to the API key and the agent."""
    aad = _aad(api_key_id, agent_id)
    return with_secrets(behaviour, lambda value: base64.b64encode(keyring.encrypt(value, aad)).decode())


def unsealed(keyring: Keyring, *, api_key_id: str, agent_id: str, config: dict[str, Any]) -> dict[str, Any]:
    """A stored behaviour with its auth secrets in the clear (a version update merges onto it; executions use it)."""
    aad = _aad(api_key_id, agent_id)
    return with_secrets(config, lambda value: keyring.decrypt(base64.b64decode(value), aad))


def _bounded(behaviour: dict[str, Any]) -> dict[str, Any]:
    if size(behaviour) > MAX_BEHAVIOUR_BYTES:
        message = f"An agent's configuration is at most {MAX_BEHAVIOUR_BYTES // 1024} KiB of JSON."
        raise invalid(message, [issue([], message, "too_big")])
    return behaviour


async def _within_budget(svc: Services, conn: Conn, *, api_key_id: str) -> None:
    """RESOURCE_EXHAUSTED (rolling the write back) when the key's agents now keep more behaviour bytes than its
    budget; called after the write, under `lock_agents`, so that two writes never pass it together."""
    budget = svc.settings.agent_versions_max_bytes_per_api_key
    if await repo.version_bytes(conn, api_key_id=api_key_id) > budget:
        raise ApiError(
            "RESOURCE_EXHAUSTED", f"This would take the configuration this workspace's agents keep, across their "
            f"versions, past its budget of {budget} bytes; delete agents or restore versions to make room.")


def _created_behaviour(data: CreateAgent) -> dict[str, Any]:
    """The versioned fields of a creation, with an extraction draft's names moved to Velt's places."""
    behaviour = behaviour_of(data)
    if data.prompt is not None:
        behaviour["instructions"] = data.prompt
    if data.userContextFields is not None:
        behaviour["input"] = {**behaviour.get("input", {}), "userContextFields": dump(data)["userContextFields"]}
    return _bounded(behaviour)


async def create(svc: Services, *, tenant: Tenant, data: CreateAgent) -> dict[str, Any]:
    """Create a custom agent and its version 1."""
    behaviour = _created_behaviour(data)
    agent_id, now, cap = new_id("agt_"), svc.now_ms(), svc.settings.agents_max_per_api_key
    config = sealed(svc.keyring, api_key_id=tenant.api_key_id, agent_id=agent_id, behaviour=behaviour)
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.lock_agents(tx.conn, api_key_id=tenant.api_key_id)
        if await repo.count_agents(tx.conn, api_key_id=tenant.api_key_id) >= cap:
            raise ApiError("RESOURCE_EXHAUSTED", f"This workspace already has the maximum of {cap} custom agents.")
        await repo.insert_agent(tx.conn, api_key_id=tenant.api_key_id, id=agent_id, name=data.name,
                                description=data.description, enabled=data.enabled, metadata=data.metadata, now=now)
        await repo.insert_version(tx.conn, api_key_id=tenant.api_key_id, agent_id=agent_id, version=1, config=config,
                                  config_bytes=size(config), now=now)
        await _within_budget(svc, tx.conn, api_key_id=tenant.api_key_id)
    return {"agentId": agent_id}


async def get(svc: Services, *, tenant: Tenant, data: GetAgents) -> dict[str, Any]:
    """One agent with its current behaviour, or a page of the listing (optionally one group's members)."""
    if data.agentId is not None:
        async with svc.pool.connection() as conn:
            row = await repo.get_agent(conn, api_key_id=tenant.api_key_id, id=data.agentId)
        if row is None:
            raise not_found("agent")
        return {"agent": Agent.wire(row)}
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "agents",
                                   {"filter": data.filter, "groupId": data.groupId})
    after = pager.after(data.pageToken, 2)
    size_ = data.pageSize or DEFAULT_PAGE
    async with svc.pool.connection() as conn:
        if data.groupId is not None and not await repo.group_exists(conn, api_key_id=tenant.api_key_id,
                                                                    id=data.groupId):
            raise not_found("agent_group")
        if data.filter == "defaultOnly":
            return {"agents": []}  # collab has no built-in agents
        if data.groupId is not None:
            rows = await repo.list_group_agents(conn, api_key_id=tenant.api_key_id, group_id=data.groupId,
                                                after_position=after[0], limit=size_ + 1)
            keys = ("position", "id")
        else:
            rows = await repo.list_agents(conn, api_key_id=tenant.api_key_id, after_at=after[0], after_id=after[1],
                                          limit=size_ + 1)
            keys = ("created_at", "id")
    records, token = pager.cut(rows, size_, *keys, render=AgentSummary.wire, budget=svc.settings.max_response_bytes)
    return {"agents": records} | ({"nextPageToken": token} if token else {})


async def update(svc: Services, *, tenant: Tenant, data: UpdateAgent) -> dict[str, Any]:
    """Change an agent's identity (name, description, enabled); no new version. Nothing sent changes nothing."""
    key = {"api_key_id": tenant.api_key_id, "id": data.agentId}
    if data.name is None and data.description is None and data.enabled is None:
        async with svc.pool.connection() as conn:
            found = await repo.agent_exists(conn, **key)
    else:
        async with transaction(svc.pool, svc.redis) as tx:
            found = await repo.update_identity(tx.conn, **key, name=data.name, description=data.description,
                                               enabled=data.enabled, now=svc.now_ms())
    if not found:
        raise not_found("agent")
    return {"agentId": data.agentId}


async def update_version(svc: Services, *, tenant: Tenant, data: UpdateAgentVersion) -> dict[str, Any]:
    """Add version N+1: the sent blocks merged one level deep onto version N, checked whole, the oldest past the
    kept count dropped."""
    patch = {name: value for name, value in dump(data).items() if name in BEHAVIOUR_FIELDS}
    key = {"api_key_id": tenant.api_key_id, "agent_id": data.agentId}
    now, kept = svc.now_ms(), svc.settings.agent_versions_kept
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.lock_agents(tx.conn, api_key_id=tenant.api_key_id)  # the byte budget counts one write at a time
        row = await repo.get_agent(tx.conn, api_key_id=tenant.api_key_id, id=data.agentId, for_update=True)
        if row is None:
            raise not_found("agent")
        whole = merged(unsealed(svc.keyring, **key, config=row["config"]), patch)
        try:
            Behaviour.model_validate(whole)
        except ValidationError as exc:
            raise failure(exc.errors()) from None
        config = sealed(svc.keyring, **key, behaviour=_bounded(whole))
        version = row["version"] + 1
        await repo.insert_version(tx.conn, **key, version=version, config=config, config_bytes=size(config), now=now)
        await repo.set_version(tx.conn, api_key_id=tenant.api_key_id, id=data.agentId, version=version,
                               set_metadata="metadata" in data.model_fields_set, metadata=data.metadata, now=now)
        if version > kept:
            await repo.drop_versions(tx.conn, **key, first=1, last=version - kept)
        await _within_budget(svc, tx.conn, api_key_id=tenant.api_key_id)
    return {"version": version}


async def list_versions(svc: Services, *, tenant: Tenant, data: ListAgentVersions) -> dict[str, Any]:
    """A page of an agent's versions, newest first (an unknown agent has none, as Velt answers)."""
    pager = paging.Pager.for_query(svc.keyring, tenant.api_key_id, "agent_versions", {"agentId": data.agentId})
    (before, ) = pager.after(data.pageToken, 1)
    size_, budget = data.pageSize or DEFAULT_PAGE, svc.settings.max_response_bytes
    async with svc.pool.connection() as conn:
        rows = await repo.list_versions(conn, api_key_id=tenant.api_key_id, agent_id=data.agentId, before=before,
                                        limit=size_ + 1, budget=budget)
    records, token = pager.cut(rows, size_, "version", render=AgentVersion.wire, budget=budget)
    return {"versions": records} | ({"nextPageToken": token} if token else {})


async def restore(svc: Services, *, tenant: Tenant, data: AgentRef) -> dict[str, Any]:
    """Undo the latest version: drop version N and point the agent at N-1."""
    key = {"api_key_id": tenant.api_key_id, "agent_id": data.agentId}
    async with transaction(svc.pool, svc.redis) as tx:
        row = await repo.get_agent(tx.conn, api_key_id=tenant.api_key_id, id=data.agentId, for_update=True)
        if row is None:
            raise not_found("agent")
        current = row["version"]
        if current <= 1:
            raise ApiError("FAILED_PRECONDITION", "The agent is at version 1: there is no earlier version to restore.")
        if not await repo.version_exists(tx.conn, **key, version=current - 1):
            raise not_found("agent", "previous_version")
        await repo.drop_versions(tx.conn, **key, first=current, last=current)
        await repo.set_version(tx.conn, api_key_id=tenant.api_key_id, id=data.agentId, version=current - 1,
                               set_metadata=False, metadata=None, now=svc.now_ms())
    return {"version": current - 1}


async def delete(svc: Services, *, tenant: Tenant, data: AgentRef) -> dict[str, Any]:
    """Delete an agent with its versions, out of every group it was in; deleting it again answers the same."""
    async with transaction(svc.pool, svc.redis) as tx:
        await repo.delete_agent(tx.conn, api_key_id=tenant.api_key_id, id=data.agentId, now=svc.now_ms())
    return {"agentId": data.agentId}
