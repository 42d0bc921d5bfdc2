"""Rows of cells (CSV, TSV, a spreadsheet sheet) to tasks: find the header, the task column and the category."""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice

from .common import Collector, clean, ends_sentence

MAX_COLUMNS = 200
# Cells are cut to this before any pattern sees them (a task keeps at most max_task_chars anyway).
MAX_CELL_CHARS = 10_000
HEADER_SCAN_ROWS = 10
SAMPLE_ROWS = 500

# Header words, most specific first: the earlier the word, the stronger the claim to be the task column.
TASK_WORDS = ("task", "check", "checklist", "requirement", "control", "rule", "item", "question", "criteria",
              "criterion", "test", "step", "action", "activity", "statement", "objective", "description", "text",
              "detail")
CATEGORY_WORDS = ("category", "section", "area", "group", "type", "domain", "topic", "theme", "module", "component",
                  "family", "heading", "phase", "stage", "chapter", "part")
# Columns that never hold the check text nor a grouping, even if they are short and repetitive.
OTHER_WORDS = frozenset({
    "id", "no", "nr", "num", "number", "ref", "reference", "code", "key", "owner", "assignee", "responsible",
    "reviewer", "status", "priority", "severity", "risk", "result", "answer", "response", "evidence", "note", "notes",
    "comment", "comments", "due", "date", "deadline", "frequency", "done", "complete", "completed", "compliant",
    "score", "weight", "link", "url", "version", "page", "#"
})
STATUS_VALUES = frozenset({
    "yes", "no", "y", "n", "x", "true", "false", "done", "open", "closed", "pass", "fail", "passed", "failed", "n/a",
    "na", "tbd", "high", "medium", "med", "low", "critical", "todo", "ok", "pending", "complete", "completed",
    "in progress", "not started", "compliant", "non-compliant", "partial"
})

_NUMERIC = re.compile(r"[-+(]?[$€£]?\d[\d,. ]*%?\)?"  # numbers, money, percentages, 1.2.3 style ids
                      r"|\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([ T]\d{1,2}:\d{2}(:\d{2})?)?"  # dates
                      r"|\d{1,2}:\d{2}(:\d{2})?")
_NOTE = re.compile(
    r"^(\*|†|‡|notes?\b|source\b|prepared by\b|reviewed by\b|approved by\b|last (updated|reviewed)\b|"
    r"version\b|total\b|end of\b|page \d|©|copyright\b)", re.IGNORECASE)
_WORDS = re.compile(r"[a-z]+|#", re.IGNORECASE)
_ID_LIKE = re.compile(r"[A-Za-z]{0,4}[-_.]?\d+([-_.]\d+)*[A-Za-z]?\.?")
_TASK = frozenset(TASK_WORDS)
_CATEGORY = frozenset(CATEGORY_WORDS)
_STRONG_WORDS = _TASK | _CATEGORY
_VOCABULARY = _STRONG_WORDS | OTHER_WORDS


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


def _tabular(rows: list[list[str]]) -> bool:
    """Whether rows fill several columns often enough that a lone filled cell means a title, section or note."""
    return bool(rows) and sum(_filled(r) >= 2 for r in rows) >= max(1, len(rows) / 4)


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


def _keyword_hits(cells: list[str], *, strong: bool = False) -> bool:
    """Whether some cell reads like a column label: a few words, half of them label vocabulary."""
    vocabulary = _STRONG_WORDS if strong else _VOCABULARY
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
    tabular = _tabular(rows)
    for i in range(min(HEADER_SCAN_ROWS, len(rows))):
        below = rows[i + 1:i + 1 + 50]
        if _looks_like_header(rows[i], below, width=width):
            labels = list(rows[i]) + [""] * (width - len(rows[i]))
            nxt = rows[i + 1] if i + 1 < len(rows) else []
            # A group row (labels spanning several columns) above the real labels: keep the lower row.
            if (_filled(nxt) > max(_filled(rows[i]), 1) and _label_like(nxt) and _keyword_hits(nxt, strong=True)
                    and _looks_like_header(nxt, rows[i + 2:i + 52], width=width)):
                group, lower = "", list(nxt) + [""] * (width - len(nxt))
                for col in range(width):
                    group = labels[col] or group
                    lower[col] = lower[col] or group
                return _Layout(header_start=i, header_index=i + 1, data_start=i + 2, labels=lower)
            return _Layout(header_start=i, header_index=i, data_start=i + 1, labels=labels)
        if not (_filled(rows[i]) <= 1 and tabular):
            break
    start = 0
    while start < len(rows) - 1 and start < HEADER_SCAN_ROWS and tabular and _filled(rows[start]) <= 1:
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
        if not tokens or tokens & OTHER_WORDS or tokens & _CATEGORY:
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
        penalty = 0.5 if tokens & (OTHER_WORDS | _CATEGORY) else 1.0
        scores.append((_average_length(text) * len(text) / max(len(values), 1) * penalty, -col))
    return -max(scores)[1]


def _category_column(data: list[list[str]], labels: list[str], *, width: int, task_col: int) -> int | None:
    for col in range(width):
        tokens = _tokens(labels[col])
        if col != task_col and tokens & _CATEGORY and not tokens & OTHER_WORDS:
            return col
    if len(data) < 4:
        return None
    for col in range(width):
        if col == task_col or _tokens(labels[col]) & (OTHER_WORDS | _TASK):
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


def _cleaned(rows: Iterable[tuple[int, list[str]]]) -> Iterator[tuple[int, list[str]]]:
    for number, cells in rows:
        if not "".join(cells).strip():
            continue
        cells = [clean(c[:MAX_CELL_CHARS]) for c in cells[:MAX_COLUMNS]]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield number, cells


class _Walker:
    """Applies a layout to data rows, one at a time, remembering the current section and category."""

    def __init__(self, *, collector: Collector, header: list[str] | None, task_col: int, category_col: int | None,
                 tabular: bool, source_prefix: str, default_category: str | None):
        self.collector = collector
        self.header_key = [c.casefold() for c in header] if header is not None else None
        self.task_col = task_col
        self.category_col = category_col
        self.single_cell_rows_are_special = tabular
        self.source_prefix = source_prefix
        self.default_category = default_category
        self.section: str | None = None
        self.category: str | None = None
        # Single-cell rows wait here until we know whether more table follows them (trailing notes).
        self.pending: list[tuple[int, list[str]]] = []

    def feed(self, number: int, cells: list[str]) -> None:
        """Take the next data row."""
        if self.single_cell_rows_are_special and _filled(cells) == 1:
            self.pending.append((number, cells))
            return
        self.flush(trailing=False)
        self._row(number, cells, trailing=False)

    def flush(self, *, trailing: bool) -> None:
        """Settle the waiting single-cell rows; trailing means no fuller row came after them."""
        pending, self.pending = self.pending, []
        for number, cells in pending:
            self._row(number, cells, trailing=trailing)

    def _row(self, number: int, cells: list[str], *, trailing: bool) -> None:
        collector = self.collector
        whole = " | ".join(c for c in cells if c)
        if self.header_key is not None and [c.casefold() for c in cells] == self.header_key:
            collector.skip(whole, "header row")
            return
        filled = [col for col, c in enumerate(cells) if c]
        if len(filled) == 1 and self.single_cell_rows_are_special:
            only = cells[filled[0]]
            if _NOTE.match(only) and (trailing or filled[0] != self.task_col):
                collector.skip(only, "note")
                return
            if filled[0] != self.task_col:
                if _ID_LIKE.fullmatch(only):
                    collector.skip(whole, "blank")
                elif not trailing and _label_like([only]):
                    self.section, self.category = only, None
                    collector.skip(only, "section heading")
                else:
                    collector.skip(only, "note")
                return
        task = cells[self.task_col] if self.task_col < len(cells) else ""
        col = self.category_col
        if col is not None and col < len(cells) and cells[col]:
            self.category = cells[col]
        if not task:
            collector.skip(whole, "blank")
            return
        category = self.category or self.section or self.default_category
        collector.add(task, category=category, source=f"{self.source_prefix}row {number}")


def table_tasks(rows: Iterable[tuple[int, list[str]]], *, collector: Collector, source_prefix: str = "",
                default_category: str | None = None) -> dict:
    """Add the tasks found in (row number, cells) rows to collector; returns meta about the table."""
    stream = _cleaned(rows)
    # The layout is decided on the first rows; the rest streams through so limits trip early.
    head = list(islice(stream, HEADER_SCAN_ROWS + SAMPLE_ROWS))
    if not head:
        return {"rows": 0}
    cells_only = [c for _, c in head]
    width = max(len(c) for c in cells_only)
    layout = _find_layout(cells_only, width=width)
    sample = cells_only[layout.data_start:]
    for index, (_, cells) in enumerate(head[:layout.data_start]):
        reason = "header row" if layout.header_start is not None and index >= layout.header_start else "title row"
        collector.skip(" | ".join(c for c in cells if c), reason)
    task_col = _task_column(sample, layout.labels, width=width)
    category_col = _category_column(sample, layout.labels, width=width, task_col=task_col)
    tabular = _tabular(sample)
    header = cells_only[layout.header_index] if layout.header_index is not None else None
    walker = _Walker(collector=collector, header=header, task_col=task_col, category_col=category_col, tabular=tabular,
                     source_prefix=source_prefix, default_category=default_category)
    count = 0
    for number, cells in chain(head[layout.data_start:], stream):
        count += 1
        walker.feed(number, cells)
    walker.flush(trailing=True)

    def label(col: int | None) -> str | None:
        if col is None:
            return None
        return layout.labels[col] or f"column {col + 1}"

    return {
        "rows": count, "headerRow": head[layout.header_index][0] if layout.header_index is not None else None,
        "taskColumn": label(task_col), "categoryColumn": label(category_col)
    }
