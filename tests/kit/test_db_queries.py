"""Named SQL blocks (kit/db/queries.py): the loader's parsing, every block says what it does, and
the loader refuses one that does not."""

from pathlib import Path

import pytest

import collab
from collab.kit.db import Queries

SRC = Path(collab.__file__).parent


def test_queries_file_parsing(tmp_path):
    path = tmp_path / "queries.sql"
    path.write_text("-- name: one\n-- The first.\nselect 1;\n\n-- name: two\n-- The second.\nselect %(x)s\n")
    q = Queries(path)
    assert q.one == "select 1" and q.two == "select %(x)s"
    assert q.descriptions == {"one": "The first.", "two": "The second."}
    with pytest.raises(AttributeError):
        q.three
    path.write_text("-- name: one\n-- A.\nselect 1\n-- name: one\n-- B.\nselect 2\n")
    with pytest.raises(ValueError):
        Queries(path)


def _query_files() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.sql") if "migrations" not in p.parts)


def test_every_block_has_a_one_line_description():
    files = _query_files()
    assert files
    for path in files:
        q = Queries(path)
        assert q.descriptions, f"{path.name}: no named blocks"
        for name, description in q.descriptions.items():
            assert description and "\n" not in description, f"{path.name}: {name}"


@pytest.mark.parametrize(
    "text",
    [
        "-- name: one\nselect 1\n",  # no description
        "-- name: one\n--\nselect 1\n",  # an empty one
        "-- name: one\n-- Only words.\n"  # no statement
    ])
def test_a_block_without_description_or_statement_is_refused(tmp_path, text):
    path = tmp_path / "queries.sql"
    path.write_text(text)
    with pytest.raises(ValueError):
        Queries(path)


def test_description_is_not_part_of_the_statement(tmp_path):
    path = tmp_path / "queries.sql"
    path.write_text("-- name: one\n-- Count to one.\n-- A why-comment stays with the SQL.\nselect 1;\n")
    q = Queries(path)
    assert q.descriptions["one"] == "Count to one."
    assert q.one == "-- A why-comment stays with the SQL.\nselect 1"
