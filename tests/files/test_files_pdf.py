"""PDF checklists: numbered rules across pages decode; hostile PDFs fail fast in the sandboxed child."""

import io
import random

import pytest
from pypdf import PdfReader, PdfWriter

from collab.files import DecodeError, Limits, decode
from collab.files.pdf import extract_pages
from collab.testing.samples import build_pdf, flate_bomb_pdf, make_pdf
from support.factories import triples

PDF = "application/pdf"

PAGES = [[
    "VENDOR SECURITY STANDARD", "Section 1: Access Control",
    "1. All administrator accounts must use multi-factor authentication for every",
    "login, including break-glass accounts.", "2. Accounts unused for 90 days are disabled.",
    "3. Access reviews happen quarterly:", "(a) privileged roles are reviewed by the system owner;",
    "(b) the review is recorded in the ticketing system.", "Section 2: Logging",
    "4) Audit logs are retained for at least one year."
],
         [
             "5) Alerts fire on ten failed logins within five minutes and are triaged",
             "by the on-call engineer within one hour.", "Data Protection",
             "6.1 Customer data is encrypted at rest with AES-256.",
             "6.2 Backups are encrypted and restored in a test twice a year.", "- Keys are rotated every twelve months",
             "Page 2 of 2"
         ]]


def kind_of(data: bytes, **limits) -> str:
    with pytest.raises(DecodeError) as info:
        decode(data, PDF, limits=Limits(**limits))
    return info.value.kind


def test_numbered_rules_across_two_pages():
    decoded = decode(make_pdf(PAGES), PDF)
    assert triples(decoded) == [
        ("All administrator accounts must use multi-factor authentication for every login, "
         "including break-glass accounts.", "Section 1: Access Control", "page 1"),
        ("Accounts unused for 90 days are disabled.", "Section 1: Access Control", "page 1"),
        ("Access reviews happen quarterly:", "Section 1: Access Control", "page 1"),
        ("privileged roles are reviewed by the system owner;", "Section 1: Access Control", "page 1"),
        ("the review is recorded in the ticketing system.", "Section 1: Access Control", "page 1"),
        ("Audit logs are retained for at least one year.", "Section 2: Logging", "page 1"),
        ("Alerts fire on ten failed logins within five minutes and are triaged by the on-call engineer "
         "within one hour.", "Section 2: Logging", "page 2"),
        ("Customer data is encrypted at rest with AES-256.", "Data Protection", "page 2"),
        ("Backups are encrypted and restored in a test twice a year.", "Data Protection", "page 2"),
        ("Keys are rotated every twelve months", "Data Protection", "page 2")
    ]
    assert decoded.meta["format"] == "pdf"
    assert decoded.meta["pages"] == 2
    assert "Page 2 of 2" in decoded.canonical_text


def test_numbered_section_titles_become_categories():
    pages = [[
        "1. Network", "1.1 Inbound traffic is denied by default.", "1.2 Firewall changes are peer reviewed.",
        "2. Endpoints", "2.1 Disks are encrypted."
    ]]
    decoded = decode(make_pdf(pages), PDF)
    assert triples(decoded) == [("Inbound traffic is denied by default.", "Network", "page 1"),
                                ("Firewall changes are peer reviewed.", "Network", "page 1"),
                                ("Disks are encrypted.", "Endpoints", "page 1")]


def test_pdf_without_list_items_uses_lines():
    pages = [["Password policy", "Passwords are at least twelve characters.", "Passwords are never shared."]]
    decoded = decode(make_pdf(pages), PDF)
    assert triples(decoded) == [("Passwords are at least twelve characters.", "Password policy", "page 1"),
                                ("Passwords are never shared.", "Password policy", "page 1")]


def test_owner_only_encryption_opens_and_user_password_is_unreadable():
    reader = PdfReader(io.BytesIO(make_pdf(PAGES)))
    for user_password, expected in (("", "ok"), ("secret", "unreadable")):
        writer = PdfWriter(clone_from=reader)
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-128")
        buffer = io.BytesIO()
        writer.write(buffer)
        if expected == "ok":
            assert len(decode(buffer.getvalue(), PDF).tasks) == 10
        else:
            with pytest.raises(DecodeError) as info:
                decode(buffer.getvalue(), PDF)
            assert info.value.kind == "unreadable"
            assert "password" in info.value.message


def test_too_many_pages_is_a_limit():
    writer = PdfWriter()
    for _ in range(501):
        writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(DecodeError) as info:
        decode(buffer.getvalue(), PDF)
    assert info.value.kind == "limits"
    assert "501 pages" in info.value.message


def test_decompression_bomb_is_a_limit():
    assert kind_of(flate_bomb_pdf(raw_bytes=200 * 1024 * 1024)) == "limits"


def test_memory_cap_in_child_is_a_limit():
    # 60 MB inflates below pypdf's own 75 MB cap, so only the child's address-space limit stops it.
    assert kind_of(flate_bomb_pdf(raw_bytes=60 * 1024 * 1024), pdf_memory_bytes=100 * 1024 * 1024) == "limits"


def test_timeout_kills_the_child_and_is_a_limit():
    with pytest.raises(DecodeError) as info:
        extract_pages(make_pdf(PAGES), limits=Limits(pdf_timeout_s=0.001))
    assert info.value.kind == "limits"
    assert "longer than" in info.value.message


def test_cyclic_and_self_referencing_structures_fail_fast():
    kids_cycle = build_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
        b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>"
    ])
    reference_loop = build_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"3 0 R", b"2 0 R"])
    length_loop = build_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length 5 0 R >>\nstream\nBT ET\nendstream", b"6 0 R", b"5 0 R"
    ])
    for data in (kids_cycle, reference_loop, length_loop):
        assert kind_of(data, pdf_timeout_s=5) in {"unreadable", "limits"}


def test_garbage_and_blank_pdfs_are_unreadable():
    assert kind_of(random.Random(1).randbytes(20_000)) == "unreadable"
    assert kind_of(b"%PDF-1.7\n" + random.Random(2).randbytes(5_000)) == "unreadable"
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    assert kind_of(buffer.getvalue()) == "unreadable"
