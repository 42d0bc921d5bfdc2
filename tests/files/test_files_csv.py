"""CSV and TSV checklists decode into the expected tasks, categories and sources."""

import pytest

from collab.files import DecodeError, Limits, Task, decode
from support.factories import triples


def test_csv_with_header_and_category_column():
    data = ("ID,Category,Check,Owner\n"
            "1,Access,Enable MFA for all administrator accounts,alice\n"
            "2,Access,Remove accounts unused for 90 days,bob\n"
            "3,Logging,Retain audit logs for one year,carol\n"
            '4,Logging,"Alert on repeated failed logins, including API keys",carol\n').encode()
    decoded = decode(data, "text/csv")
    assert triples(decoded) == [("Enable MFA for all administrator accounts", "Access", "row 2"),
                                ("Remove accounts unused for 90 days", "Access", "row 3"),
                                ("Retain audit logs for one year", "Logging", "row 4"),
                                ("Alert on repeated failed logins, including API keys", "Logging", "row 5")]
    assert decoded.meta["format"] == "csv"
    assert decoded.meta["taskColumn"] == "Check"
    assert decoded.meta["categoryColumn"] == "Category"
    assert decoded.meta["headerRow"] == 1
    assert decoded.meta["rows"] == 4
    assert decoded.skipped[0].reason == "header row"


def test_csv_without_header_picks_longest_text_and_low_cardinality_category():
    data = ("Network;Firewall rules are reviewed every quarter\n"
            "Network;Unused ports are closed on all hosts\n"
            "Identity;Passwords are at least 12 characters long\n"
            "Identity;Service accounts have no interactive login\n"
            "Identity;Every administrator uses a hardware key\n").encode()
    decoded = decode(data, "text/csv")
    assert decoded.meta["delimiter"] == ";"
    assert decoded.meta["headerRow"] is None
    assert triples(decoded) == [("Firewall rules are reviewed every quarter", "Network", "row 1"),
                                ("Unused ports are closed on all hosts", "Network", "row 2"),
                                ("Passwords are at least 12 characters long", "Identity", "row 3"),
                                ("Service accounts have no interactive login", "Identity", "row 4"),
                                ("Every administrator uses a hardware key", "Identity", "row 5")]


def test_messy_csv_title_rows_blank_rows_two_row_header_duplicates_and_notes():
    data = ("ACME Corp - Vendor Security Review,,,\n"
            "Version 3 (internal),,,\n"
            ",,,\n"
            "Review item,,Ownership,\n"
            "Area,Requirement,Owner,Due\n"
            "Access,Vendor enforces MFA for staff,Security,2024-03-01\n"
            ",,,\n"
            ",Vendor offboards staff within 24 hours,HR,2024-03-01\n"
            "Data,  Customer data is   encrypted at rest  ,Security,2024-04-01\n"
            "Data,Vendor enforces MFA for staff,Security,2024-04-01\n"
            "Data,,Security,2024-04-01\n"
            "Data,ok,Security,2024-04-01\n"
            ",,,\n"
            "Notes: answers are due before the contract renewal,,,\n"
            "Source: procurement template v2,,,\n").encode()
    decoded = decode(data, "text/csv")
    assert triples(decoded) == [("Vendor enforces MFA for staff", "Access", "row 6"),
                                ("Vendor offboards staff within 24 hours", "Access", "row 8"),
                                ("Customer data is encrypted at rest", "Data", "row 9")]
    reasons = [(s.originalText, s.reason) for s in decoded.skipped]
    assert reasons == [("ACME Corp - Vendor Security Review", "title row"), ("Version 3 (internal)", "title row"),
                       ("Review item | Ownership", "header row"), ("Area | Requirement | Owner | Due", "header row"),
                       ("Vendor enforces MFA for staff", "duplicate"), ("Data | Security | 2024-04-01", "blank"),
                       ("ok", "too short to be a check"),
                       ("Notes: answers are due before the contract renewal", "note"),
                       ("Source: procurement template v2", "note")]
    assert decoded.meta["headerRow"] == 5
    assert decoded.meta["taskColumn"] == "Requirement"
    assert decoded.meta["categoryColumn"] == "Area"


def test_section_rows_inside_a_table_become_categories():
    data = ("Ref,Control,Status\n"
            "Access management,,\n"
            "A1,Accounts are reviewed monthly,Open\n"
            "A2,Shared accounts are forbidden,Done\n"
            "A3,,\n"
            "Backups,,\n"
            "B1,Backups are restored in a test every quarter,Open\n").encode()
    decoded = decode(data, "text/csv")
    assert triples(decoded) == [("Accounts are reviewed monthly", "Access management", "row 3"),
                                ("Shared accounts are forbidden", "Access management", "row 4"),
                                ("Backups are restored in a test every quarter", "Backups", "row 7")]
    assert decoded.meta["categoryColumn"] is None
    assert [(s.originalText, s.reason) for s in decoded.skipped] == [("Ref | Control | Status", "header row"),
                                                                     ("Access management", "section heading"),
                                                                     ("A3", "blank"), ("Backups", "section heading")]


def test_task_column_prefers_sentences_over_ids_with_the_same_keyword():
    data = ("Domain,Control,Control Description,Guidance\n"
            "IAM,AC-1,Access control policy is documented,Review the policy with the CISO every year and file it\n"
            "IAM,AC-2,Accounts are managed through tickets,Every account change needs an approved ticket reference\n"
            "LOG,AU-2,Auditable events are defined,List the events in the logging standard and map them to sources\n"
            ).encode()
    decoded = decode(data, "text/csv")
    assert triples(decoded) == [("Access control policy is documented", "IAM", "row 2"),
                                ("Accounts are managed through tickets", "IAM", "row 3"),
                                ("Auditable events are defined", "LOG", "row 4")]
    assert decoded.meta["taskColumn"] == "Control Description"


def test_tsv_uses_tab_delimiter_and_single_column_header():
    data = "Task\tNotes\nConfirm the DPA is signed\tlegal\nCheck the SOC 2 report date\t\n".encode()
    decoded = decode(data, "text/tab-separated-values")
    assert decoded.meta["format"] == "tsv"
    assert triples(decoded) == [("Confirm the DPA is signed", None, "row 2"),
                                ("Check the SOC 2 report date", None, "row 3")]


def test_single_column_csv_with_bom_and_cp1252():
    utf8 = "\ufeffCheck\nLe fournisseur chiffre les données\nLes accès sont révisés\n".encode("utf-8")
    decoded = decode(utf8, "text/csv")
    assert [t.text for t in decoded.tasks] == ["Le fournisseur chiffre les données", "Les accès sont révisés"]
    assert decoded.meta["encoding"] == "utf-8"
    legacy = "Check\nCafé menus are naïve – “quoted”\nZürich office is reviewed\n".encode("cp1252")
    decoded = decode(legacy, "text/csv")
    assert decoded.meta["encoding"] == "cp1252"
    assert [t.text for t in decoded.tasks] == ["Café menus are naïve – “quoted”", "Zürich office is reviewed"]


def test_utf16_csv_is_decoded():
    data = "Check,Area\nDisk encryption is on,Laptops\nScreens lock after 5 minutes,Laptops\n".encode("utf-16")
    decoded = decode(data, "text/csv")
    assert [t.text for t in decoded.tasks] == ["Disk encryption is on", "Screens lock after 5 minutes"]


def test_nul_bytes_are_stripped():
    data = b"Check,Area\nDisk\x00 encryption is on,Lap\x00tops\nBack\x00ups are tested,Servers\n"
    decoded = decode(data, "text/csv")
    assert [(t.text, t.category) for t in decoded.tasks] == [("Disk encryption is on", "Laptops"),
                                                             ("Backups are tested", "Servers")]
    assert "\x00" not in decoded.canonical_text
    assert all("\x00" not in t.text for t in decoded.tasks)


def test_two_thousand_rows_are_all_tasks():
    lines = ["Section,Check"] + [f"Area {i % 7},Control number {i} is implemented and evidenced" for i in range(2000)]
    decoded = decode("\n".join(lines).encode(), "text/csv")
    assert len(decoded.tasks) == 2000
    assert decoded.meta["rows"] == 2000
    assert decoded.tasks[0] == Task("Control number 0 is implemented and evidenced", "Area 0", "row 2")
    assert decoded.tasks[-1].source == "row 2001"


def test_long_tasks_are_truncated_and_too_many_tasks_is_a_limit():
    data = ("Check\n" + "x" * 5000 + "\n").encode()
    decoded = decode(data, "text/csv")
    assert len(decoded.tasks[0].text) == 4000
    many = ("Check\n" + "".join(f"Task number {i}\n" for i in range(30))).encode()
    with pytest.raises(DecodeError) as info:
        decode(many, "text/csv", limits=Limits(max_tasks=20))
    assert info.value.kind == "limits"


def test_header_only_csv_has_no_content():
    with pytest.raises(DecodeError) as info:
        decode(b"Check,Owner\n,,\n", "text/csv")
    assert info.value.kind == "unreadable"
    assert "no readable content" in info.value.message
