"""XLSX checklists: every sheet decodes; zip bombs, corrupt zips and XML entity tricks are refused."""

import datetime as dt
import io
import zipfile

import pytest

from collab.files import DecodeError, Limits, decode
from collab.testing.samples import XLSX, make_xlsx, zip_bomb_xlsx
from support.factories import triples


def kind_of(data: bytes, mime: str = XLSX, **limits) -> str:
    with pytest.raises(DecodeError) as info:
        decode(data, mime, limits=Limits(**limits))
    return info.value.kind


def test_multi_sheet_workbook():
    data = make_xlsx({
        "Access": [["Access control review"], [], ["#", "Check", "Done?"], [1, "Admin accounts use MFA", False],
                   [2, "Leavers are removed within a day", True], [3.0, "Access is recertified every quarter", None]],
        "Vendors": [["Domain", "Question", "Answer", "Due"],
                    ["Privacy", "Is customer data processed in the EU?", "Yes",
                     dt.datetime(2024, 3, 1)], [None, "Is there a signed DPA?", "",
                                                dt.datetime(2024, 3, 1)],
                    ["Security", "Do you hold an ISO 27001 certificate?", "No",
                     dt.datetime(2024, 4, 1)]], "Empty": []
    })
    decoded = decode(data, XLSX, file_name="review.xlsx")
    assert triples(decoded) == [("Admin accounts use MFA", "Access", "Access!row 4"),
                                ("Leavers are removed within a day", "Access", "Access!row 5"),
                                ("Access is recertified every quarter", "Access", "Access!row 6"),
                                ("Is customer data processed in the EU?", "Privacy", "Vendors!row 2"),
                                ("Is there a signed DPA?", "Privacy", "Vendors!row 3"),
                                ("Do you hold an ISO 27001 certificate?", "Security", "Vendors!row 4")]
    assert decoded.meta["format"] == "xlsx"
    assert decoded.meta["fileName"] == "review.xlsx"
    assert [s["name"] for s in decoded.meta["sheets"]] == ["Access", "Vendors", "Empty"]
    assert decoded.meta["sheets"][0]["taskColumn"] == "Check"
    assert decoded.meta["sheets"][1]["categoryColumn"] == "Domain"
    assert "## Vendors" in decoded.canonical_text
    assert "2024-03-01" in decoded.canonical_text
    assert [(s.originalText, s.reason) for s in decoded.skipped][:2] == [("Access control review", "title row"),
                                                                         ("# | Check | Done?", "header row")]


def test_sparse_rows_far_down_keep_their_row_numbers():
    workbook_rows = [["Check"], ["Firewall rules are reviewed"]] + [[]] * 500 + [["Backups are restored yearly"]]
    decoded = decode(make_xlsx({"S": workbook_rows}), XLSX)
    assert triples(decoded) == [("Firewall rules are reviewed", "S", "S!row 2"),
                                ("Backups are restored yearly", "S", "S!row 503")]


def test_zip_bomb_is_refused_quickly():
    bomb = zip_bomb_xlsx()
    assert len(bomb) < 1024 * 1024
    assert kind_of(bomb) == "limits"
    # Even with the ratio check disabled the declared total size stops it before any inflation.
    assert kind_of(bomb, max_compression_ratio=1e12) == "limits"


def test_high_compression_ratio_member_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/sharedStrings.xml", "<sst>" + "<si><t>a</t></si>" * 200_000 + "</sst>")
    with pytest.raises(DecodeError) as info:
        decode(buffer.getvalue(), XLSX)
    assert info.value.kind == "limits"
    assert "expands" in info.value.message


def test_corrupt_zip_and_non_workbook_zip_are_unreadable():
    good = make_xlsx({"S": [["Check"], ["Something to verify"]]})
    assert kind_of(good[:len(good) // 2]) == "unreadable"
    assert kind_of(b"PK\x03\x04 this is not really a zip") == "unreadable"
    assert kind_of(b"Check,Owner\nNot a workbook at all,me\n") == "unreadable"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    assert kind_of(buffer.getvalue()) == "unreadable"


def test_xml_entity_expansion_is_refused():
    good = make_xlsx({"S": [["Check"], ["Something to verify"]]})
    doctype = ('<!DOCTYPE worksheet [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
               '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>')
    source, target = zipfile.ZipFile(io.BytesIO(good)), io.BytesIO()
    sheet = source.read("xl/worksheets/sheet1.xml").decode()
    assert "Something to verify" in sheet
    body = sheet.replace("<worksheet", doctype + "<worksheet", 1).replace("Something to verify", "&d;")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, body if info.filename == "xl/worksheets/sheet1.xml" else source.read(info))
    with pytest.raises(DecodeError) as info:
        decode(target.getvalue(), XLSX)
    assert info.value.kind == "unreadable"
    assert "EntitiesForbidden" in info.value.message


def test_workbook_with_no_text_is_unreadable():
    assert kind_of(make_xlsx({"Numbers": [[1, 2], [3, 4]]})) == "unreadable"


def test_reader_timeout_and_memory_cap_are_limits(monkeypatch):
    from collab.files import xlsx

    data = make_xlsx({"S": [["Check"], ["Something to verify"]]})
    monkeypatch.setattr(xlsx, "TIMEOUT_S", 0.001)
    with pytest.raises(DecodeError) as info:
        decode(data, XLSX)
    assert (info.value.kind, "longer than" in info.value.message) == ("limits", True)
    monkeypatch.setattr(xlsx, "TIMEOUT_S", 20.0)
    monkeypatch.setattr(xlsx, "MEMORY_BYTES", 1)
    with pytest.raises(DecodeError) as info:
        decode(data, XLSX)
    assert info.value.kind == "limits"


def test_forged_dimension_and_far_away_row_stay_fast():
    good = make_xlsx({"S": [["Check"], ["Something to verify"]]})
    source, target = zipfile.ZipFile(io.BytesIO(good)), io.BytesIO()
    sheet = source.read("xl/worksheets/sheet1.xml").decode()
    assert '<dimension ref="A1:A2"' in sheet
    far = '<row r="1048576"><c r="A1048576" t="inlineStr"><is><t>The last row is a check too</t></is></c></row>'
    sheet = sheet.replace('<dimension ref="A1:A2"',
                          '<dimension ref="A1:XFD1048576"').replace("</sheetData>", far + "</sheetData>")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            archive.writestr(info.filename, sheet if info.filename == "xl/worksheets/sheet1.xml" else source.read(info))
    decoded = decode(target.getvalue(), XLSX)
    assert triples(decoded) == [("Something to verify", "S", "S!row 2"),
                                ("The last row is a check too", "S", "S!row 1048576")]
