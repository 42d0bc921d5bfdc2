"""SQL of agents, their versions and agent groups; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


# --- agents -----------------------------------------------------------------------------------------------------


async def lock_agents(conn: Conn, *, api_key_id: str) -> None:
    await execute(conn, q.lock_agents, {"api_key_id": api_key_id})


async def count_agents(conn: Conn, *, api_key_id: str) -> int:
    return int((await fetch_row(conn, q.count_agents, {"api_key_id": api_key_id}))["n"])


async def version_bytes(conn: Conn, *, api_key_id: str) -> int:
    return int((await fetch_row(conn, q.version_bytes, {"api_key_id": api_key_id}))["n"])


async def insert_agent(conn: Conn, *, api_key_id: str, id: str, name: str, description: str, enabled: bool,
                       metadata: dict[str, Any] | None, now: int) -> None:
    await execute(
        conn, q.insert_agent, {
            "api_key_id": api_key_id, "id": id, "name": name, "description": description, "enabled": enabled,
            "metadata": _json(metadata), "now": now
        })


async def insert_version(conn: Conn, *, api_key_id: str, agent_id: str, version: int, config: dict[str, Any],
                         config_bytes: int, now: int) -> None:
    await execute(
        conn, q.insert_version, {
            "api_key_id": api_key_id, "agent_id": agent_id, "version": version, "config": Jsonb(config),
            "config_bytes": config_bytes, "now": now
        })


async def get_agent(conn: Conn, *, api_key_id: str, id: str, for_update: bool = False) -> dict[str, Any] | None:
    """An agent with its current behaviour (`config`); locked for the transaction when asked. The agent is read
    after the lock, in a statement of its own: one that waited for the lock sees the version it waited for."""
    key = {"api_key_id": api_key_id, "id": id}
    if for_update and await fetch_one(conn, q.lock_agent, key) is None:
        return None
    return await fetch_one(conn, q.get_agent, key)


async def agent_exists(conn: Conn, *, api_key_id: str, id: str) -> bool:
    return await fetch_one(conn, q.agent_exists, {"api_key_id": api_key_id, "id": id}) is not None


async def existing_agents(conn: Conn, *, api_key_id: str, ids: list[str]) -> set[str]:
    return {r["id"] for r in await fetch_all(conn, q.existing_agents, {"api_key_id": api_key_id, "ids": ids})}


async def update_identity(conn: Conn, *, api_key_id: str, id: str, name: str | None, description: str | None,
                          enabled: bool | None, now: int) -> bool:
    params = {
        "api_key_id": api_key_id, "id": id, "name": name, "description": description, "enabled": enabled, "now": now
    }
    return await fetch_one(conn, q.update_identity, params) is not None


async def set_version(conn: Conn, *, api_key_id: str, id: str, version: int, set_metadata: bool,
                      metadata: dict[str, Any] | None, now: int) -> None:
    await execute(
        conn, q.set_version, {
            "api_key_id": api_key_id, "id": id, "version": version, "set_metadata": set_metadata,
            "metadata": _json(metadata), "now": now
        })


async def version_exists(conn: Conn, *, api_key_id: str, agent_id: str, version: int) -> bool:
    params = {"api_key_id": api_key_id, "agent_id": agent_id, "version": version}
    return await fetch_one(conn, q.version_exists, params) is not None


async def drop_versions(conn: Conn, *, api_key_id: str, agent_id: str, first: int, last: int) -> int:
    params = {"api_key_id": api_key_id, "agent_id": agent_id, "first": first, "last": last}
    return await execute(conn, q.drop_versions, params)


async def list_versions(conn: Conn, *, api_key_id: str, agent_id: str, before: int | None, limit: int,
                        budget: int) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "agent_id": agent_id, "before": before, "limit": limit, "budget": budget}
    return await fetch_all(conn, q.list_versions, params)


async def list_agents(conn: Conn, *, api_key_id: str, after_at: int | None, after_id: str | None,
                      limit: int) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "after_at": after_at, "after_id": after_id, "limit": limit}
    return await fetch_all(conn, q.list_agents, params)


async def list_group_agents(conn: Conn, *, api_key_id: str, group_id: str, after_position: int | None,
                            limit: int) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "group_id": group_id, "after_position": after_position, "limit": limit}
    return await fetch_all(conn, q.list_group_agents, params)


async def delete_agent(conn: Conn, *, api_key_id: str, id: str, now: int) -> bool:
    return await fetch_one(conn, q.delete_agent, {"api_key_id": api_key_id, "id": id, "now": now}) is not None


# --- groups -----------------------------------------------------------------------------------------------------


async def lock_groups(conn: Conn, *, api_key_id: str) -> None:
    await execute(conn, q.lock_groups, {"api_key_id": api_key_id})


async def count_groups(conn: Conn, *, api_key_id: str) -> int:
    return int((await fetch_row(conn, q.count_groups, {"api_key_id": api_key_id}))["n"])


async def insert_group(conn: Conn, *, api_key_id: str, id: str, name: str, description: str | None,
                       metadata: dict[str, Any], now: int) -> None:
    await execute(
        conn, q.insert_group, {
            "api_key_id": api_key_id, "id": id, "name": name, "description": description, "metadata": Jsonb(metadata),
            "now": now
        })


async def get_group(conn: Conn, *, api_key_id: str, id: str, for_update: bool = False) -> dict[str, Any] | None:
    """A group with its members' ids in order (`agent_ids`); locked for the transaction when asked. The members are
    read after the lock, in a statement of their own: one that waited for the lock sees the members it waited for."""
    key = {"api_key_id": api_key_id, "id": id}
    if for_update and await fetch_one(conn, q.lock_group, key) is None:
        return None
    return await fetch_one(conn, q.get_group, key)


async def group_exists(conn: Conn, *, api_key_id: str, id: str) -> bool:
    return await fetch_one(conn, q.group_exists, {"api_key_id": api_key_id, "id": id}) is not None


async def list_groups(conn: Conn, *, api_key_id: str, after_at: int | None, after_id: str | None,
                      limit: int) -> list[dict[str, Any]]:
    params = {"api_key_id": api_key_id, "after_at": after_at, "after_id": after_id, "limit": limit}
    return await fetch_all(conn, q.list_groups, params)


async def update_group(conn: Conn, *, api_key_id: str, id: str, name: str | None, set_description: bool,
                       description: str | None, now: int) -> bool:
    params = {
        "api_key_id": api_key_id, "id": id, "name": name, "set_description": set_description,
        "description": description, "now": now
    }
    return await fetch_one(conn, q.update_group, params) is not None


async def touch_group(conn: Conn, *, api_key_id: str, id: str, now: int) -> None:
    await execute(conn, q.touch_group, {"api_key_id": api_key_id, "id": id, "now": now})


async def delete_group(conn: Conn, *, api_key_id: str, id: str) -> bool:
    return await fetch_one(conn, q.delete_group, {"api_key_id": api_key_id, "id": id}) is not None


async def add_members(conn: Conn, *, api_key_id: str, group_id: str, agent_ids: list[str]) -> list[str]:
    params = {"api_key_id": api_key_id, "group_id": group_id, "agent_ids": agent_ids}
    return [r["agent_id"] for r in await fetch_all(conn, q.add_members, params)]


async def remove_members(conn: Conn, *, api_key_id: str, group_id: str, agent_ids: list[str]) -> list[str]:
    params = {"api_key_id": api_key_id, "group_id": group_id, "agent_ids": agent_ids}
    return [r["agent_id"] for r in await fetch_all(conn, q.remove_members, params)]
