"""Golden check of every decoder on the checklists in fixtures/extraction: the expected task count, exactly."""

import json
from pathlib import Path

import pytest

from collab.files import decode

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "extraction"


@pytest.mark.parametrize("expected_file", sorted(FIXTURES.glob("*.expected.json")), ids=lambda p: p.name.split(".")[0])
def test_fixture_decodes_to_expected_tasks(expected_file):
    expected = json.loads(expected_file.read_text())
    decoded = decode((FIXTURES / expected["file"]).read_bytes(), expected["mimeType"], file_name=expected["file"])
    assert len(decoded.tasks) == expected["totalTasks"]
    texts = {" ".join(t.text.split()) for t in decoded.tasks}
    for text in expected["mustCover"]:
        assert " ".join(text.split()) in texts
    assert "\x00" not in decoded.canonical_text
