"""Insights as context for `memory/ask`: a few short summaries of the key's profiles, patterns and alerts."""

from typing import Any

from collab.insights import repository as repo
from collab.kit.db.pool import Conn
from collab.kit.envelope import dumps

PROFILES, PATTERNS, ALERTS = 3, 5, 3
MAX_BYTES = 4096  # of the whole summary as JSON
TEXT_CHARS = 200  # of each text in it


def _cut(value: Any) -> Any:
    return value[:TEXT_CHARS] if isinstance(value, str) else value


def _profile(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "userId": _cut(p["userId"]), "name": _cut(p.get("name")), "totalJudgments": p["totalJudgments"],
        "approvalRate": p["approvalRate"], "topFlags": [_cut(f["issue"]) for f in p.get("topFlags", [])[:3]],
        "contentTypes": [_cut(c) for c in p.get("contentTypes", [])[:3]]
    }


def _pattern(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": _cut(p["description"]), "confidence": p["confidence"], "sourceCount": p["sourceCount"],
        "enforcementRate": p.get("enforcementRate"), "organizationId": _cut(p.get("organizationId")),
        "topSourceRecordIds": [_cut(i) for i in (p.get("topSourceRecordIds") or [])[:3]]
    }


def _alert(row: dict[str, Any]) -> dict[str, Any]:
    body = row["body"]
    return {
        "alertType": row["alert_type"], "severity": row["severity"], "title": _cut(body["title"]),
        "description": _cut(body["description"]), "createdAt": row["created_at"]
    }


async def for_ask(conn: Conn, *, api_key_id: str) -> dict[str, Any]:
    """The key's insights as last computed, summarised for a model's context: `{profiles, patterns, alerts}`, each
    a few short dicts (most active reviewers, strongest patterns, newest active alerts), at most MAX_BYTES of JSON
    in all (the last items are dropped until it fits). Empty lists before the first computation."""
    out = {
        "profiles": [_profile(p) for p in await repo.top_profiles(conn, api_key_id=api_key_id, limit=PROFILES)],
        "patterns": [
            _pattern(p) for p in await repo.list_patterns(conn, api_key_id=api_key_id, limit=PATTERNS, strongest=True)
        ], "alerts": [_alert(r) for r in await repo.active_alerts(conn, api_key_id=api_key_id, limit=ALERTS)]
    }
    while len(dumps(out)) > MAX_BYTES:
        longest = max(out, key=lambda k: len(dumps(out[k])))
        out[longest].pop()
    return out
