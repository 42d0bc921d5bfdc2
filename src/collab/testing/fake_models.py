"""A deterministic stand-in for a model answering the extraction prompts (tests, offline eval, benchmarks).

It groups tasks by their category hint and skips lines that are not checks, so the whole pipeline
(chunking, merging, capping, persistence) runs end to end without a real model. It measures the
pipeline, never prompt quality.
"""

import json
import re

from collab.testing.fakes import last_user_text

_TASK = re.compile(r"^\[(\d+)\] \((.*?)\) (.*)$")
_AGENT = re.compile(r"^\[(\d+)\] (.*?): (.*)$")


def _name(category: str) -> str:
    words = re.sub(r"[^A-Za-z0-9 ]+", " ", category).split()[:4] or ["General"]
    return " ".join(w.capitalize() for w in words) + " Review"


def _user_text(provider: str, body: dict) -> str:
    if provider == "gemini":
        return last_user_text(provider, body)
    user = [m for m in body["messages"] if m["role"] == "user"]
    content = user[0]["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def answer(provider: str, body: dict) -> str:
    """The JSON answer to an extract_agents or merge_agents request."""
    text = _user_text(provider, body)
    if "Agents (" in text:
        return _merge(text)
    return _extract(text)


def _extract(text: str) -> str:
    groups: dict[str, list[int]] = {}
    skipped = []
    for line in text.splitlines():
        match = _TASK.match(line.strip())
        if not match:
            continue
        task_id, category, task = int(match.group(1)), match.group(2), match.group(3)
        if len(task.split()) < 2:
            skipped.append({"taskId": task_id, "reason": "Not a check."})
            continue
        groups.setdefault(category if category != "-" else "General", []).append(task_id)
    agents = [
        {
            "name": _name(category),
            "description": f"Checks content against the {category.lower()} items of the checklist.",
            "prompt": f"Review the content for {category.lower()} issues for {{{{brand_name}}}} and report each failed check.",
            "taskIds": ids,
            "userContextFields": [{"id": "brand_name", "title": "Brand name", "type": "text", "example": "Acme"}],
        }
        for category, ids in groups.items()
    ]
    return json.dumps({"agents": agents, "skipped": skipped, "summary": "A review checklist."})


def _merge(text: str) -> str:
    by_name: dict[str, list[int]] = {}
    for line in text.splitlines():
        match = _AGENT.match(line.strip())
        if match:
            by_name.setdefault(match.group(2).lower(), []).append(int(match.group(1)))
    groups = [
        {"name": name.title(), "description": f"Checks {name}.", "prompt": f"Review the content for {name}.", "members": ids}
        for name, ids in by_name.items()
    ]
    return json.dumps({"groups": groups})
