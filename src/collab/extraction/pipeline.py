"""The pure steps of extraction: chunking, answer parsing, assembling, merging and capping agents."""

import re
from dataclasses import dataclass, field
from typing import Any

from collab.extraction.schemas import ChunkAnswer, ContextField, MergeAnswer
from collab.files import Task

MAX_AGENTS = 50
# Decoder skips that are the file's structure, not checks: not reported, not counted.
STRUCTURAL = {"blank", "header row", "title row", "section heading"}
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@dataclass
class Agent:
    """An agent being assembled: the spec's draft plus the task ids behind it."""

    name: str
    description: str
    prompt: str
    task_ids: list[int]
    fields: dict[str, ContextField] = field(default_factory=dict)


def chunk(tasks: list[Task], *, max_chars: int, max_tasks: int) -> list[list[tuple[int, Task]]]:
    """Split tasks (ids 1..n) into chunks that each fit one model call."""
    chunks: list[list[tuple[int, Task]]] = [[]]
    size = 0
    for task_id, task in enumerate(tasks, start=1):
        cost = len(task.text) + len(task.category or "") + 12
        if chunks[-1] and (size + cost > max_chars or len(chunks[-1]) >= max_tasks):
            chunks.append([])
            size = 0
        chunks[-1].append((task_id, task))
        size += cost
    return [c for c in chunks if c]


def task_lines(part: list[tuple[int, Task]]) -> str:
    """The tasks as the prompt lists them: `[id] (category) text`."""
    return "\n".join(f"[{task_id}] ({task.category or '-'}) {task.text}" for task_id, task in part)


def assemble(answers: list[tuple[list[tuple[int, Task]], ChunkAnswer]]) -> tuple[list[Agent], dict[int, str]]:
    """Agents and skipped task ids from per-chunk answers; each task id is used at most once."""
    agents: list[Agent] = []
    skipped: dict[int, str] = {}
    assigned: set[int] = set()
    for part, answer in answers:
        valid = {task_id for task_id, _ in part}
        for draft in answer.agents:
            ids = [i for i in dict.fromkeys(draft.taskIds) if i in valid and i not in assigned]
            if not ids:
                continue  # an agent with no real task behind it is not kept
            assigned.update(ids)
            agents.append(
                Agent(draft.name.strip(), draft.description.strip(), draft.prompt.strip(), ids,
                      {f.id: f
                       for f in draft.userContextFields}))
        for ref in answer.skipped:
            if ref.taskId in valid and ref.taskId not in assigned:
                skipped.setdefault(ref.taskId, ref.reason.strip())
        for task_id in valid - assigned - set(skipped):
            skipped[task_id] = "Not grouped into any agent by the model."
    return agents, skipped


def merge_lines(agents: list[Agent]) -> str:
    """The agents as the merge prompt lists them: `[index] name: description`."""
    return "\n".join(f"[{i}] {a.name}: {a.description}" for i, a in enumerate(agents))


def apply_merge(agents: list[Agent], answer: MergeAnswer) -> list[Agent]:
    """Merge agents as the model grouped them; indices it left out stay as they were."""
    merged: list[Agent] = []
    used: set[int] = set()
    for group in answer.groups:
        members = [i for i in dict.fromkeys(group.members) if 0 <= i < len(agents) and i not in used]
        if not members:
            continue
        used.update(members)
        if len(members) == 1:
            merged.append(agents[members[0]])
            continue
        combined = Agent(group.name.strip(), group.description.strip(), group.prompt.strip(), [])
        for i in members:
            combined.task_ids.extend(agents[i].task_ids)
            for key, value in agents[i].fields.items():
                combined.fields.setdefault(key, value)
        merged.append(combined)
    merged.extend(a for i, a in enumerate(agents) if i not in used)
    return merged


def merge_by_name(agents: list[Agent]) -> list[Agent]:
    """The fallback merge: agents whose names match once case and punctuation are ignored."""
    by_key: dict[str, Agent] = {}
    for agent in agents:
        key = re.sub(r"[^a-z0-9]+", " ", agent.name.lower()).strip()
        if key in by_key:
            by_key[key].task_ids.extend(agent.task_ids)
            for k, v in agent.fields.items():
                by_key[key].fields.setdefault(k, v)
        else:
            by_key[key] = Agent(agent.name, agent.description, agent.prompt, list(agent.task_ids), dict(agent.fields))
    return list(by_key.values())


def _title(identifier: str) -> str:
    return re.sub(r"[_\s]+", " ", identifier).strip().title()


def draft(agent: Agent, tasks: list[Task]) -> dict[str, Any]:
    """The spec's Extracted agent draft; every {{placeholder}} of the prompt is a declared context field."""
    fields = dict(agent.fields)
    for name in dict.fromkeys(_PLACEHOLDER.findall(agent.prompt)):
        fields.setdefault(name, ContextField(id=name, title=_title(name), type="string"))
    out: dict[str, Any] = {
        "name": agent.name, "description": agent.description, "prompt": agent.prompt,
        "sourceTasks": [tasks[i - 1].text for i in agent.task_ids]
    }
    if fields:
        out["userContextFields"] = [{k: v
                                     for k, v in f.model_dump().items() if not (k == "example" and v is None)}
                                    for f in fields.values()]
    return out


def result(*, agents: list[Agent], tasks: list[Task], skipped_ids: dict[int, str], decoder_skipped: list[dict[str,
                                                                                                              str]],
           model_summary: str, file_label: str, source_id: str) -> dict[str, Any]:
    """The spec's extractionResult: agents capped at 50, totalTasksParsed the full count."""
    ordered = sorted(agents, key=lambda a: min(a.task_ids))
    kept = ordered[:MAX_AGENTS]
    decoder_skipped = [s for s in decoder_skipped if s["reason"] not in STRUCTURAL and s["originalText"].strip()]
    skipped = decoder_skipped + [{"originalText": tasks[i - 1].text, "reason": reason}
                                 for i, reason in sorted(skipped_ids.items())]
    found = len(tasks) + len(decoder_skipped)
    counts = f"{len(kept)} agent{'s' if len(kept) != 1 else ''} from {found} checks in {file_label}"
    if len(ordered) > MAX_AGENTS:
        counts += f" ({len(ordered) - MAX_AGENTS} more agents were cut at the limit of {MAX_AGENTS})"
    summary = f"{model_summary.strip()} " if model_summary.strip() else ""
    summary += f"Extracted {counts}; {len(skipped)} skipped."
    return {
        "agents": [draft(a, tasks) for a in kept], "summary": summary, "skipped": skipped, "totalTasksParsed": found,
        "memory": {"sourceId": source_id}
    }
