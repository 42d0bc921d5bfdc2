"""SQL of agent executions (executions.sql); executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__, "executions.sql")


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


async def lock_executions(conn: Conn, *, workspace_id: str) -> None:
    await execute(conn, q.lock_executions, {"workspace_id": workspace_id})


async def count_running(conn: Conn, *, workspace_id: str) -> int:
    return int((await fetch_row(conn, q.count_running, {"workspace_id": workspace_id}))["n"])


async def prune_executions(conn: Conn, *, api_key_id: str, keep: int, batch: int) -> None:
    await execute(conn, q.prune_executions, {"api_key_id": api_key_id, "keep": keep, "batch": batch})


async def running_on(conn: Conn, *, api_key_id: str, agent_id: str, organization_id: str,
                     document_id: str) -> str | None:
    params = {
        "api_key_id": api_key_id, "agent_id": agent_id, "organization_id": organization_id, "document_id": document_id
    }
    row = await fetch_one(conn, q.running_on, params)
    return row["id"] if row else None


async def latest_on(conn: Conn, *, api_key_id: str, agent_id: str, organization_id: str,
                    document_id: str) -> str | None:
    params = {
        "api_key_id": api_key_id, "agent_id": agent_id, "organization_id": organization_id, "document_id": document_id
    }
    row = await fetch_one(conn, q.latest_on, params)
    return row["id"] if row else None


async def insert_execution(conn: Conn, *, api_key_id: str, id: str, agent_id: str, agent_name: str, agent_version: int,
                           behaviour: dict[str, Any], organization_id: str, document_id: str, request: dict[str, Any],
                           trigger: str, workflow_execution_id: str | None, previous_execution_id: str | None,
                           ran_by: dict[str, Any] | None, status: str, now: int, completed_at: int | None,
                           results_summary: dict[str, Any]) -> bool:
    """Insert an execution; False when the agent already runs on the document."""
    params = {
        "api_key_id": api_key_id, "id": id, "agent_id": agent_id, "agent_name": agent_name,
        "agent_version": agent_version, "behaviour": Jsonb(behaviour), "organization_id": organization_id,
        "document_id": document_id, "request": Jsonb(request), "trigger": trigger,
        "workflow_execution_id": workflow_execution_id, "previous_execution_id": previous_execution_id,
        "ran_by": _json(ran_by), "status": status, "now": now, "completed_at": completed_at,
        "results_summary": Jsonb(results_summary)
    }
    return await fetch_one(conn, q.insert_execution, params) is not None


async def count_run(conn: Conn, *, api_key_id: str, agent_id: str, now: int) -> None:
    await execute(conn, q.count_run, {"api_key_id": api_key_id, "agent_id": agent_id, "now": now})


async def get_execution(conn: Conn, *, api_key_id: str, id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_execution, {"api_key_id": api_key_id, "id": id})


async def record_usage(conn: Conn, *, api_key_id: str, id: str, llm_model: str, prompt_tokens: int,
                       completion_tokens: int) -> None:
    params = {
        "api_key_id": api_key_id, "id": id, "llm_model": llm_model, "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens
    }
    await execute(conn, q.record_usage, params)


async def finish_execution(conn: Conn, *, api_key_id: str, id: str, status: str, now: int,
                           results_summary: dict[str, Any], results: list[dict[str, Any]] | None,
                           error: dict[str, Any] | None, crawler_results: dict[str, Any] | None = None) -> bool:
    """End a running execution; False when it had ended already (the sweep got there first)."""
    params = {
        "api_key_id": api_key_id, "id": id, "status": status, "now": now, "results_summary": Jsonb(results_summary),
        "results": _json(results), "error": _json(error), "crawler_results": _json(crawler_results)
    }
    return await fetch_one(conn, q.finish_execution, params) is not None


async def sweep_overdue(conn: Conn, *, before: int, now: int, error: dict[str, Any],
                        message: str) -> list[dict[str, Any]]:
    params = {"before": before, "now": now, "error": Jsonb(error), "message": message}
    return await fetch_all(conn, q.sweep_overdue, params)


async def list_executions(conn: Conn, *, api_key_id: str, agent_id: str | None, organization_id: str | None,
                          document_id: str | None, after_at: int | None, after_id: str | None,
                          limit: int) -> list[dict[str, Any]]:
    params = {
        "api_key_id": api_key_id, "agent_id": agent_id, "organization_id": organization_id, "document_id": document_id,
        "after_at": after_at, "after_id": after_id, "limit": limit
    }
    return await fetch_all(conn, q.list_executions, params)


async def count_executions(conn: Conn, *, api_key_id: str, status: str | None) -> int:
    return int((await fetch_row(conn, q.count_executions, {"api_key_id": api_key_id, "status": status}))["n"])


async def count_by_agent(conn: Conn, *, api_key_id: str, agent_ids: list[str], status: str | None) -> dict[str, int]:
    params = {"api_key_id": api_key_id, "agent_ids": agent_ids, "status": status}
    return {r["agent_id"]: int(r["n"]) for r in await fetch_all(conn, q.count_by_agent, params)}


async def usage_by_month(conn: Conn, *, api_key_id: str, agent_id: str | None) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.usage_by_month, {"api_key_id": api_key_id, "agent_id": agent_id})


async def execution_counts(conn: Conn, *, api_key_id: str, agent_id: str | None) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.execution_counts, {"api_key_id": api_key_id, "agent_id": agent_id})
