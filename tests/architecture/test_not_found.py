"""One source of truth for not-found text (DESIGN §7.13): every "does not exist" / "not found" answer comes from
`kit.errors.NOT_FOUND_MESSAGES` through `not_found(kind)` or `not_found_message(kind)`; no domain writes its own
copy or borrows another domain's string, and the constraint registry answers a missing record in the same words.
"""

import ast
import re
from pathlib import Path

import pytest

import collab
from collab.kit.db import constraints
from collab.kit.errors import NOT_FOUND_MESSAGES, NOT_FOUND_VARIANTS, not_found, not_found_message

SRC = Path(collab.__file__).parent
WORDS = re.compile(r"does not exist|not found", re.IGNORECASE)
# Text that says "not found" without being an API answer about a missing record, by file and why.
ELSEWHERE = {
    "kit/errors.py": "the table itself", "console/explorer.py": "an HTML page title",
    "console/routes.py": "an HTML page title", "console/webhook_pages.py": "an HTML page title",
    "documents/repository.py": "a migration job's refusal reason, naming both ids",
    "extraction/tasks.py": "an INTERNAL failure of a job (the upload vanished), not a record the caller named"
}


def _strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in the file that is not a docstring."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_no_domain_writes_its_own_not_found_text():
    copies = [
        f"{path.relative_to(SRC)}:{line}: {text!r}" for path in sorted(SRC.rglob("*.py"))
        if str(path.relative_to(SRC)) not in ELSEWHERE for line, text in _strings(path) if WORDS.search(text)
    ]
    assert not copies, "use kit.errors.not_found(kind) / not_found_message(kind) instead:\n" + "\n".join(copies)


def test_the_contract_texts_stay_byte_for_byte():
    # The spec's samples: the organizations domain's text has no full stop, the users domain's has one.
    assert not_found_message("organization") == "Organization does not exist"
    assert not_found_message("user") == "User does not exist."
    assert not_found_message("workspace") == "Workspace not found."
    assert not_found_message("api_key") == "API key not found."
    # The permissions answers are full sentences, the organization's included.
    assert [not_found_message(k, "permissions") for k in ("organization", "folder", "document")
            ] == ["Organization does not exist.", "Folder does not exist.", "Document does not exist."]
    assert not_found_message("crdt") == "CRDT data does not exist."
    assert not_found_message("crdt", "editor") == "CRDT data does not exist for this editor ID."


def test_every_variant_is_of_a_kind_in_the_table():
    assert {kind for kind, _ in NOT_FOUND_VARIANTS} <= set(NOT_FOUND_MESSAGES)
    with pytest.raises(KeyError):
        not_found_message("no such kind")


def test_not_found_is_the_api_error_with_the_table_text():
    error = not_found("document")
    assert (error.code, error.http_status, error.message) == ("NOT_FOUND", 404, "Document does not exist.")
    assert error.body() == {"error": {"status": "NOT_FOUND", "message": "Document does not exist."}}


def test_the_constraint_registry_answers_in_the_table_words():
    assert constraints.DEFAULTS[constraints.ForeignKeyViolation] == ("NOT_FOUND", not_found_message("record"))
    import collab.users.service  # noqa: F401  (registers the grants' organization foreign key)

    assert constraints._MEANINGS["grants_api_key_id_organization_id_fkey"] == ("NOT_FOUND",
                                                                               not_found_message("organization"))
