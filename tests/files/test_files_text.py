"""Plain-text and Markdown checklists: list items, headings as categories, code fences ignored."""

import pytest

from collab.files import DecodeError, decode
from support.factories import triples

MARKDOWN = """\
# Launch review

Use this list before every release. It is owned by the platform team.

## Security
- [ ] Secrets are stored in the vault, never in the repository
- [x] Dependencies have no **critical** advisories
  (checked with the scanner, see [runbook](https://example.com/runbook))
* Admin endpoints require SSO

```
- this bullet is inside a code fence
```

Operations
----------
1. Dashboards exist for the new service
2) On-call rotation is updated
   3. Nested numbered items count too
- Secrets are stored in the vault, never in the repository
- ok
"""


def test_markdown_checklist_with_headings():
    decoded = decode(MARKDOWN.encode(), "text/markdown; charset=UTF-8")
    assert triples(decoded) == [("Secrets are stored in the vault, never in the repository", "Security", "line 6"),
                                ("Dependencies have no critical advisories (checked with the scanner, see runbook)",
                                 "Security", "line 7"), ("Admin endpoints require SSO", "Security", "line 9"),
                                ("Dashboards exist for the new service", "Operations", "line 17"),
                                ("On-call rotation is updated", "Operations", "line 18"),
                                ("Nested numbered items count too", "Operations", "line 19")]
    assert [(s.originalText, s.reason) for s in decoded.skipped
            ] == [("Use this list before every release. It is owned by the platform team.", "not a list item"),
                  ("Secrets are stored in the vault, never in the repository", "duplicate"),
                  ("ok", "too short to be a check")]
    assert decoded.meta["format"] == "markdown"
    assert decoded.canonical_text == MARKDOWN


def test_plain_text_lines_without_markers_are_tasks():
    text = ("ACCESS\n"
            "Check that MFA is enforced\n"
            "Verify leavers are removed\n"
            "\n"
            "Backups:\n"
            "Restore a backup every quarter and record how long the restore took, including\n"
            "the time needed to rebuild the database indexes.\n")
    decoded = decode(text.encode(), "text/plain")
    assert triples(decoded) == [
        ("Check that MFA is enforced", "ACCESS", "line 2"), ("Verify leavers are removed", "ACCESS", "line 3"),
        ("Restore a backup every quarter and record how long the restore took, including the time needed "
         "to rebuild the database indexes.", "Backups", "line 6")
    ]
    assert decoded.meta["format"] == "text"


def test_plain_text_bullets_with_section_lines():
    text = ("Section 1: Identity\n• Accounts are named\n• Shared logins are banned\n"
            "Section 2 - Data\n• Data is classified\n")
    decoded = decode(text.encode(), "text/plain")
    assert triples(decoded) == [("Accounts are named", "Section 1: Identity", "line 2"),
                                ("Shared logins are banned", "Section 1: Identity", "line 3"),
                                ("Data is classified", "Section 2 - Data", "line 5")]


def test_only_headings_and_code_is_unreadable():
    with pytest.raises(DecodeError) as info:
        decode(b"# Title\n\n```\nprint('x')\n```\n", "text/markdown")
    assert info.value.kind == "unreadable"
