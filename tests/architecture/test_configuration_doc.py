"""docs/configuration.md (issue #35 item 3): generated from the descriptions of `Settings`, so an operator reads every
setting there, and a setting added, renamed or redescribed without regenerating the file fails here."""

from pathlib import Path

from collab.config import Settings
from collab.kit.settings_doc import COMMAND, render, section_of

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_is_described():
    undescribed = [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()]
    assert undescribed == [], f"give these settings a Field(description=...) in src/collab/config.py: {undescribed}"


def test_the_first_setting_opens_a_section():
    first = next(iter(Settings.model_fields.values()))
    assert section_of(first), 'the first setting needs json_schema_extra={"section": ...} (its table has no header)'


def test_the_doc_lists_every_setting():
    text = render()
    missing = [name for name in Settings.model_fields if f"| `COLLAB_{name.upper()}` |" not in text]
    assert missing == []


def test_the_doc_matches_the_settings():
    assert DOC.read_text() == render(), f"docs/configuration.md is stale: regenerate it with `{COMMAND}`"
