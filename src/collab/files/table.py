"""Turn rows of cells (from CSV, TSV or a spreadsheet sheet) into tasks: find the header, the task and category columns."""

import re
from collections import Counter
from dataclasses import dataclass

from .common import Collector, clean, ends_sentence

MAX_COLUMNS = 200
HEADER_SCAN_ROWS = 10
SAMPLE_ROWS = 500

# Header words, most specific first: the earlier the word, the stronger the claim to be the task column.
TASK_WORDS = (
    "task", "check", "checklist", "requirement", "control", "rule", "item", "question", "criteria",
    "criterion", "test", "step", "action", "activity", "statement", "objective", "description", "text",
)
CATEGORY_WORDS = (
    "category", "section", "area", "group", "type", "domain", "topic", "theme", "module", "component",
    "family", "heading", "phase", "stage", "chapter", "part",
)
# Columns that never hold the check text nor a grouping, even if they are short and repetitive.
OTHER_WORDS = frozenset({
    "id", "no", "nr", "num", "number", "ref", "reference", "code", "key", "owner", "assignee", "responsible",
    "reviewer", "status", "priority", "severity", "risk", "result", "answer", "response", "evidence", "note",
    "notes", "comment", "comments", "due", "date", "deadline", "frequency", "done", "complete", "completed",
    "compliant", "score", "weight", "yes", "link", "url", "version", "page", "#",
})
STATUS_VALUES = frozenset({
    "yes", "no", "y", "n", "x", "true", "false", "done", "open", "closed", "pass", "fail", "passed",
    "failed", "n/a", "na", "tbd", "high", "medium", "med", "low", "critical", "todo", "ok", "pending",
    "complete", "completed", "in progress", "not started", "compliant", "non-compliant", "partial",
})

_NUMERIC = re.compile(
    r"[-+(]?[$€£]?\d[\d,. ]*%?\)?"  # numbers, money, percentages, 1.2.3 style ids
    r"|\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([ T]\d{1,2}:\d{2}(:\d{2})?)?"  # dates
    r"|\d{1,2}:\d{2}(:\d{2})?"
)
_NOTE = re.compile(
    r"^(\*|†|‡|notes?\b|source\b|prepared by\b|reviewed by\b|approved by\b|last (updated|reviewed)\b|"
    r"version\b|total\b|end of\b|page \d|©|copyright\b)",
    re.IGNORECASE,
)
_WORDS = re.compile(r"[a-z]+|#", re.IGNORECASE)


def _tokens(label: str) -> set[str]:
    out = set()
    for word in _WORDS.findall(label.casefold()):
        out.add(word)
        if len(word) > 3 and word.endswith("s"):
            out.add(word[:-1])
    return out


def _is_numeric(value: str) -> bool:
    return bool(_NUMERIC.fullmatch(value))


def _filled(cells: list[str]) -> int:
    return sum(1 for c in cells if c)


def _label_like(cells: list[str]) -> bool:
    """Short, non-numeric, sentence-free, distinct values: what column labels look like."""
    values = [c for c in cells if c]
    if not values:
        return False
    for value in values:
        words = value.split()
        if len(value) > 60 or len(words) > 8 or _is_numeric(value):
            return False
        if re.search(r"[.!?;]\s+\S", value) or (ends_sentence(value) and len(words) >= 3 and not value.endswith("?")):
            return False
    return len({v.casefold() for v in values}) == len(values)


def _keyword_hits(cells: list[str]) -> bool:
    """Whether some cell reads like a column label: a few words, half of them label vocabulary."""
    vocabulary = set(TASK_WORDS) | set(CATEGORY_WORDS) | OTHER_WORDS
    for cell in cells:
        words = _WORDS.findall(cell.casefold())
        if not words or len(words) > 4:
            continue
        hits = sum(1 for w in words if w in vocabulary or (len(w) > 3 and w.endswith("s") and w[:-1] in vocabulary))
        if hits * 2 >= len(words):
            return True
    return False


def _looks_like_header(cells: list[str], below: list[list[str]], *, width: int) -> bool:
    if not _label_like(cells) or _filled(cells) < min(2, width):
        return False
    if _keyword_hits(cells):
        return True
    # Without a telling label, compare with the rows below: data is longer, numeric or sentence-like.
    for col, label in enumerate(cells):
        if not label:
            continue
        values = [row[col] for row in below if col < len(row) and row[col]]
        if not values:
            continue
        numeric = sum(_is_numeric(v) for v in values) / len(values)
        if numeric >= 0.6:
            return True
        if sum(len(v) for v in values) / len(values) >= 2 * len(label) + 8:
            return True
    return bool(below) and sum(not _label_like(row) for row in below) >= len(below) / 2


@dataclass
class _Layout:
    header_start: int | None  # index into rows of the first header row (the group row of a two-row header)
    header_index: int | None  # index into rows of the row holding the column labels
    data_start: int
    labels: list[str]


def _find_layout(rows: list[list[str]], *, width: int) -> _Layout:
    typical = Counter(_filled(r) for r in rows[:SAMPLE_ROWS]).most_common(1)[0][0]
    for i in range(min(HEADER_SCAN_ROWS, len(rows))):
        below = rows[i + 1 : i + 1 + 50]
        if _looks_like_header(rows[i], below, width=width):
            labels = list(rows[i]) + [""] * (width - len(rows[i]))
            nxt = rows[i + 1] if i + 1 < len(rows) else []
            # A group row (labels spanning several columns) above the real labels: keep the lower row.
            if nxt and _filled(nxt) > _filled(rows[i]) and _filled(nxt) >= 2 and _label_like(nxt) and (
                _keyword_hits(nxt) or not _keyword_hits(rows[i])
            ) and _looks_like_header(nxt, rows[i + 2 : i + 52], width=width):
                group, lower = "", list(nxt) + [""] * (width - len(nxt))
                for col in range(width):
                    group = labels[col] or group
                    lower[col] = lower[col] or group
                return _Layout(header_start=i, header_index=i + 1, data_start=i + 2, labels=lower)
            return _Layout(header_start=i, header_index=i, data_start=i + 1, labels=labels)
        if not (_filled(rows[i]) <= 1 and typical >= 2):
            break
    start = 0
    while start < len(rows) - 1 and start < HEADER_SCAN_ROWS and typical >= 2 and _filled(rows[start]) <= 1:
        start += 1
    return _Layout(header_start=None, header_index=None, data_start=start, labels=[""] * width)


def _column_values(rows: list[list[str]], col: int) -> list[str]:
    return [r[col] for r in rows[:SAMPLE_ROWS] if col < len(r) and r[col]]


def _average_length(values: list[str]) -> float:
    return sum(len(v) for v in values) / len(values) if values else 0.0


def _task_column(data: list[list[str]], labels: list[str], *, width: int) -> int:
    best: tuple | None = None
    for col in range(width):
        tokens = _tokens(labels[col])
        if not tokens or tokens & OTHER_WORDS or tokens & set(CATEGORY_WORDS):
            continue
        ranks = [len(TASK_WORDS) - i for i, w in enumerate(TASK_WORDS) if w in tokens]
        if ranks:
            average = _average_length(_column_values(data, col))
            # An "ID"-style column named "Control" loses to a column that actually holds sentences.
            key = (average >= 12, max(ranks), average)
            if best is None or key > best[0]:
                best = (key, col)
    if best is not None:
        return best[1]
    scores = []
    for col in range(width):
        values = _column_values(data, col)
        text = [v for v in values if not _is_numeric(v)]
        tokens = _tokens(labels[col])
        penalty = 0.5 if tokens & (OTHER_WORDS | set(CATEGORY_WORDS)) else 1.0
        scores.append((_average_length(text) * len(text) / max(len(values), 1) * penalty, -col))
    return -max(scores)[1]


def _category_column(data: list[list[str]], labels: list[str], *, width: int, task_col: int) -> int | None:
    for col in range(width):
        tokens = _tokens(labels[col])
        if col != task_col and tokens & set(CATEGORY_WORDS) and not tokens & OTHER_WORDS:
            return col
    if len(data) < 4:
        return None
    for col in range(width):
        if col == task_col or _tokens(labels[col]) & (OTHER_WORDS | set(TASK_WORDS)):
            continue
        values = _column_values(data, col)
        if len(values) < 2 or _average_length(values) > 40:
            continue
        if sum(_is_numeric(v) for v in values) > len(values) / 5:
            continue
        if sum(v.casefold() in STATUS_VALUES for v in values) > len(values) / 5:
            continue
        if any(ends_sentence(v) for v in values):
            continue
        distinct = {v.casefold() for v in values}
        if len(distinct) <= max(2, len(values) // 2) and len(distinct) < len(values):
            return col
    return None


def table_tasks(
    rows: list[tuple[int, list[str]]],
    *,
    collector: Collector,
    source_prefix: str = "",
    default_category: str | None = None,
) -> dict:
    """Add the tasks found in (row number, cells) rows to collector; returns meta about the table."""
    numbered: list[tuple[int, list[str]]] = []
    for number, cells in rows:
        cells = [clean(c) for c in cells[:MAX_COLUMNS]]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            numbered.append((number, cells))
    if not numbered:
        return {"rows": 0}
    cells_only = [c for _, c in numbered]
    width = max(len(c) for c in cells_only)
    layout = _find_layout(cells_only, width=width)
    data = cells_only[layout.data_start :]
    for index, (_, cells) in enumerate(numbered[: layout.data_start]):
        reason = "header row" if layout.header_start is not None and index >= layout.header_start else "title row"
        collector.skip(" | ".join(c for c in cells if c), reason)
    task_col = _task_column(data, layout.labels, width=width)
    category_col = _category_column(data, layout.labels, width=width, task_col=task_col)
    typical = Counter(_filled(r) for r in data[:SAMPLE_ROWS]).most_common(1)[0][0] if data else 1
    last_full = max((i for i, r in enumerate(data) if _filled(r) >= 2), default=len(data))
    header_key = [c.casefold() for c in cells_only[layout.header_index]] if layout.header_index is not None else None

    section: str | None = None
    category: str | None = None
    for i, (number, cells) in enumerate(numbered[layout.data_start :]):
        source = f"{source_prefix}row {number}"
        whole = " | ".join(c for c in cells if c)
        if header_key is not None and [c.casefold() for c in cells] == header_key:
            collector.skip(whole, "header row")
            continue
        filled = [col for col, c in enumerate(cells) if c]
        if len(filled) == 1 and typical >= 2 and width >= 2:
            only = cells[filled[0]]
            trailing = i > last_full
            if _NOTE.match(only) and (trailing or filled[0] != task_col):
                collector.skip(only, "note")
                continue
            if filled[0] != task_col:
                if not trailing and _label_like([only]):
                    section, category = only, None
                    collector.skip(only, "section heading")
                else:
                    collector.skip(only, "note")
                continue
        task = cells[task_col] if task_col < len(cells) else ""
        if category_col is not None and category_col < len(cells) and cells[category_col]:
            category = cells[category_col]
        if not task:
            collector.skip(whole, "blank")
            continue
        collector.add(task, category=category or section or default_category, source=source)

    def label(col: int | None) -> str | None:
        if col is None:
            return None
        return layout.labels[col] or f"column {col + 1}"

    return {
        "rows": len(data),
        "headerRow": numbered[layout.header_index][0] if layout.header_index is not None else None,
        "taskColumn": label(task_col),
        "categoryColumn": label(category_col),
    }
