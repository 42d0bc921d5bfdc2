"""Which activities are judgments (review decisions), and the judgment each one becomes."""

import math
import re
from typing import Any

from collab.events import APPROVED_EVENTS, REJECTED_EVENTS

AGREE = {"agree", "+1", "👍"}
DISAGREE = {"disagree", "-1", "👎"}
_VAR = re.compile(r"\{\{\s*([\w.]+)\s*\}\}")
EMBED_CHARS = 100_000  # of a text, embedded at most (far past any model's max length in tokens)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def decision(action_type: str, changes: Any, entity_data: Any) -> str | None:
    """The decision an action type stands for, or None when the activity is not a judgment (events.JUDGED_EVENTS
    lists the types that may be one)."""
    if action_type in ("comment.add", "comment_annotation.add"):
        return "comment"
    if action_type == "comment_annotation.status_change":
        to = _obj(_obj(changes).get("status")).get("to")
        return {"resolved": "resolve", "in_progress": "in_progress"}.get(to if isinstance(to, str) else "")
    if action_type in APPROVED_EVENTS:
        return "approved"
    if action_type in REJECTED_EVENTS:
        return "rejected"
    if action_type == "comment.reaction_add":
        reaction = _obj(entity_data).get("reaction")
        reaction = reaction.strip().lower() if isinstance(reaction, str) else ""
        return "agree" if reaction in AGREE else "disagree" if reaction in DISAGREE else "endorse"
    if action_type == "document.approve":
        return "document_approved"
    if action_type == "document.reject":
        return "document_rejected"
    return None


def render(template: str | None, data: Any, action_user: dict[str, Any]) -> str:
    """The display message with its {{variables}} filled (dotted names look inside objects)."""
    if not template:
        return ""
    scope = {"actionUser": action_user, **_obj(data)}

    def value(match: re.Match) -> str:
        current: Any = scope
        for part in match.group(1).split("."):
            current = _obj(current).get(part)
        if isinstance(current, dict):
            current = current.get("name") or current.get("userId") or ""
        return "" if current is None else str(current)

    return _VAR.sub(value, template).strip()


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def derive(activity: dict[str, Any]) -> dict[str, Any] | None:
    """The judgment columns for an activity row, or None when it is not a review decision."""
    entity, target = _obj(activity.get("entity_data")), _obj(activity.get("entity_target_data"))
    choice = decision(activity["action_type"], activity.get("changes"), activity.get("entity_data"))
    if choice is None:
        return None
    user = _obj(activity.get("action_user"))
    reasoning = (_text(entity.get("reasoning")) or _text(entity.get("commentText")) or render(
        activity.get("display_message_template"), activity.get("display_message_template_data"), user) or choice)
    # An empty agent object is a human decision: `agent` stays null, as the spec has it for humans.
    agent = entity.get("agent") if isinstance(entity.get("agent"), dict) and entity.get("agent") else None
    confidence = _confidence(entity.get("confidence"))
    return {
        "organization_id": activity["organization_id"], "document_id": activity.get("document_id"),
        "annotation_id": activity.get("target_entity_id"), "decision": choice,
        "judge_type": "agent" if agent else "human", "reasoning": reasoning.replace("\x00", ""),
        "content": (_text(target.get("content")) or _text(target.get("text")) or "").replace("\x00", "") or None,
        "content_type": _text(target.get("contentType")), "reviewer_id": _text(user.get("userId")),
        "confidence": confidence, "action_user": user, "agent": agent, "created_at": activity["timestamp"]
    }


def _confidence(value: Any) -> float:
    """The decision's confidence; 1.0 when absent or not a finite number (10**400 is an int, not a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 1.0
    try:
        number = float(value)
    except OverflowError:
        return 1.0
    return number if math.isfinite(number) else 1.0


def texts(judgment: dict[str, Any]) -> dict[str, str]:
    """What is embedded per kind: `review` = decision and reasoning, `content` = the reviewed content."""
    # The model reads a few hundred tokens; cut far past that, so a megabytes-long reasoning is not tokenized whole.
    out = {"review": f"{judgment['decision']}: {judgment['reasoning']}"[:EMBED_CHARS]}
    if judgment.get("content"):
        out["content"] = judgment["content"][:EMBED_CHARS]
    return out
