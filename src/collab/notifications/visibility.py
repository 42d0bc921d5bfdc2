"""Who may see a notification: private comments reach only the users they are visible to."""

from typing import Any

_PRIVATE = ("private", "restricted")


def visible_to(source: Any, author: str | None = None) -> list[str] | None:
    """The users a private comment is limited to (its author included); None when it is not private.

    Recognised shapes, at the top level or under `commentAnnotation`/`annotation`:
    `{visibility: "private", visibleToUserIds: [...]}` and `{visibility: {type: "restricted", userIds: [...]}}`.
    """
    if not isinstance(source, dict):
        return None
    for candidate in (source, source.get("commentAnnotation"), source.get("annotation")):
        if not isinstance(candidate, dict):
            continue
        rule = candidate.get("visibility")
        if rule in _PRIVATE:
            users = candidate.get("visibleToUserIds")
        elif isinstance(rule, dict) and rule.get("type") in _PRIVATE:
            users = rule.get("userIds", rule.get("visibleToUserIds"))
        else:
            continue
        allowed = {u for u in (users if isinstance(users, list) else []) if isinstance(u, str)}
        owner = (candidate.get("from") or {}).get("userId") if isinstance(candidate.get("from"), dict) else None
        allowed |= {u for u in (author, owner) if isinstance(u, str)}
        return sorted(allowed)
    return None
