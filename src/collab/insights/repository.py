"""SQL of memory insights (state, profiles, patterns, alerts, alert settings); executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def due_keys(conn: Conn, *, requeue_before: int, computed_before: int, limit: int) -> list[str]:
    """Keys to compute now (locked for this transaction), least recently computed first."""
    params = {"requeue_before": requeue_before, "computed_before": computed_before, "limit": limit}
    return [r["api_key_id"] for r in await fetch_all(conn, q.due_keys, params)]


async def mark_queued(conn: Conn, *, keys: list[str], now: int) -> None:
    if keys:
        await execute(conn, q.mark_queued, {"keys": keys, "now": now})


async def lock(conn: Conn, *, api_key_id: str) -> None:
    """Wait for the key's computation lock, held until this transaction ends."""
    await execute(conn, q.lock, {"api_key_id": api_key_id})


async def changes(conn: Conn, *, api_key_id: str) -> int:
    row = await fetch_one(conn, q.state, {"api_key_id": api_key_id})
    return row["changes"] if row else 0


async def computed_seen(conn: Conn, *, api_key_id: str) -> int:
    """The change count the key's last stored computation saw (0 before any)."""
    row = await fetch_one(conn, q.computed_seen, {"api_key_id": api_key_id})
    return row["computed"] if row else 0


async def newest_judgments(conn: Conn, *, api_key_id: str, limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.newest_judgments, {"api_key_id": api_key_id, "limit": limit})


async def stored_patterns(conn: Conn, *, api_key_id: str) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in await fetch_all(conn, q.stored_patterns, {"api_key_id": api_key_id})}


async def replace_profiles(conn: Conn, *, api_key_id: str, rows: list[dict[str, Any]]) -> None:
    await execute(conn, q.delete_profiles, {"api_key_id": api_key_id})
    if rows:
        await execute(
            conn, q.insert_profiles, {
                "api_key_id": api_key_id, "user_ids": [r["user_id"] for r in rows],
                "counts": [r["judgments"] for r in rows], "profiles": [Jsonb(r["profile"]) for r in rows]
            })


async def replace_patterns(conn: Conn, *, api_key_id: str, rows: list[dict[str, Any]]) -> None:
    await execute(conn, q.delete_patterns, {"api_key_id": api_key_id})
    if rows:
        await execute(
            conn, q.insert_patterns, {
                "api_key_id": api_key_id, "keys": [r["key"] for r in rows], "members": [r["members"] for r in rows],
                "rates": [r["enforcement_rate"] for r in rows], "confidences": [r["confidence"] for r in rows],
                "updated": [r["updated_at"] for r in rows], "patterns": [Jsonb(r["pattern"]) for r in rows]
            })


async def recent_alerts(conn: Conn, *, api_key_id: str, since: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.recent_alerts, {"api_key_id": api_key_id, "since": since})


async def insert_alert(conn: Conn, *, api_key_id: str, id: str, alert: dict[str, Any], now: int) -> None:
    params = {
        "api_key_id": api_key_id, "id": id, "alert_type": alert["alert_type"], "severity": alert["severity"],
        "dedup_key": alert["dedup_key"], "created_at": now, "body": Jsonb(alert["body"])
    }
    await execute(conn, q.insert_alert, params)


async def computed(conn: Conn, *, api_key_id: str, seen: int, now: int) -> None:
    await execute(conn, q.computed, {"api_key_id": api_key_id, "seen": seen, "now": now})


async def count(conn: Conn, *, what: str, api_key_id: str, cap: int | None = None) -> int:
    """`what` (judgments, profiles, patterns: up to `cap`; knowledge_sources: exactly) of the key."""
    query = getattr(q, f"count_{what}")
    return (await fetch_row(conn, query, {"api_key_id": api_key_id, "cap": cap}))["n"]


async def profile(conn: Conn, *, api_key_id: str, user_id: str) -> dict[str, Any] | None:
    row = await fetch_one(conn, q.profile, {"api_key_id": api_key_id, "user_id": user_id})
    return row["profile"] if row else None


async def top_profiles(conn: Conn, *, api_key_id: str, limit: int) -> list[dict[str, Any]]:
    return [r["profile"] for r in await fetch_all(conn, q.top_profiles, {"api_key_id": api_key_id, "limit": limit})]


async def list_patterns(conn: Conn, *, api_key_id: str, limit: int, strongest: bool = False) -> list[dict[str, Any]]:
    """The key's patterns, most recently updated first (or by confidence: `strongest`)."""
    query = q.strongest_patterns if strongest else q.list_patterns
    return [r["pattern"] for r in await fetch_all(conn, query, {"api_key_id": api_key_id, "limit": limit})]


async def active_alerts(conn: Conn, *, api_key_id: str, limit: int) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.active_alerts, {"api_key_id": api_key_id, "limit": limit})


async def action_alert(conn: Conn, *, api_key_id: str, id: str) -> bool:
    return await fetch_one(conn, q.action_alert, {"api_key_id": api_key_id, "id": id}) is not None


async def dismiss_alert(conn: Conn, *, api_key_id: str, id: str, by: str, now: int) -> bool:
    params = {"api_key_id": api_key_id, "id": id, "by": by, "now": now}
    return await fetch_one(conn, q.dismiss_alert, params) is not None


async def alert_config(conn: Conn, *, api_key_id: str, for_update: bool = False) -> dict[str, Any] | None:
    """The stored settings; `for_update`: locked (a row made first when there was none) until the transaction ends."""
    if for_update:
        await execute(conn, q.make_alert_config, {"api_key_id": api_key_id})
    row = await fetch_one(conn, q.alert_config_for_update if for_update else q.alert_config, {"api_key_id": api_key_id})
    return row["config"] if row else None


async def save_alert_config(conn: Conn, *, api_key_id: str, config: dict[str, Any], now: int) -> None:
    await execute(conn, q.save_alert_config, {"api_key_id": api_key_id, "config": Jsonb(config), "now": now})
