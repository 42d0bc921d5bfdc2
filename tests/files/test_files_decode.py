"""decode(): MIME handling, size limits, empty and binary inputs, and the error contract."""

import random

import pytest

from collab.files import (
    SUPPORTED_MIME_TYPES,
    Decoded,
    DecodeError,
    Limits,
    Skipped,
    Task,
    decode,
    normalise_mime_type,
)
from collab.testing.samples import XLSX


def error_of(data: bytes, mime: str, **limits) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode(data, mime, limits=Limits(**limits))
    return info.value


def test_supported_mime_types():
    assert SUPPORTED_MIME_TYPES == {
        "text/csv", "text/tab-separated-values", XLSX, "application/pdf", "text/plain", "text/markdown"
    }


def test_mime_type_is_normalised():
    decoded = decode(b"Check\nThe firewall denies inbound traffic\n", "  Text/CSV ; charset=utf-8 ")
    assert isinstance(decoded, Decoded)
    assert decoded.tasks == [Task(text="The firewall denies inbound traffic", category=None, source="row 2")]
    assert decoded.skipped == [Skipped(originalText="Check", reason="header row")]


def test_mime_aliases_and_file_name():
    assert normalise_mime_type("Application/CSV; header=present") == "text/csv"
    assert normalise_mime_type("text/x-markdown") == "text/markdown"
    decoded = decode(b"- Confirm the backup job ran\n", "text/x-markdown", file_name="list.md")
    assert decoded.meta["fileName"] == "list.md"
    assert decoded.meta["format"] == "markdown"


def test_unsupported_mime_type():
    for mime in ("application/msword", "image/png", "", "application/vnd.ms-excel"):
        error = error_of(b"Check\nSomething\n", mime)
        assert error.kind == "unsupported"


def test_oversized_file_is_a_limit_for_every_type():
    big = b"Check the thing,\n" * (6 * 1024 * 1024 // 17 + 1)
    assert len(big) > 6 * 1024 * 1024 - 20
    for mime in SUPPORTED_MIME_TYPES:
        error = error_of(big, mime)
        assert error.kind == "limits"
    assert error_of(b"Check\nA check to run\n", "text/csv", max_bytes=10).kind == "limits"


def test_empty_file_is_unreadable_for_every_type():
    for mime in SUPPORTED_MIME_TYPES:
        for data in (b"", b"  \n\t\n"):
            error = error_of(data, mime)
            assert error.kind == "unreadable"
            assert "no readable content" in error.message


@pytest.mark.parametrize("mime", ["text/csv", "text/plain", "text/markdown", "text/tab-separated-values"])
def test_binary_garbage_with_a_text_mime_type_is_unreadable(mime):
    for seed in (1, 2, 3):
        error = error_of(random.Random(seed).randbytes(64 * 1024), mime)
        assert error.kind == "unreadable"
    # Mostly control characters that happen to be valid UTF-8.
    assert error_of(bytes(range(1, 32)) * 400 + b"a check that is fine\n", mime).kind == "unreadable"


def test_decode_error_has_kind_and_message():
    error = DecodeError("limits", "too big")
    assert (error.kind, error.message) == ("limits", "too big")
    with pytest.raises(ValueError):
        DecodeError("other", "x")


def test_canonical_text_is_capped():
    line = "Make sure that " + "very " * 200 + "long checks still work\n"
    data = ("Check\n" + "".join(f"{i} {line}" for i in range(2_600))).encode()
    decoded = decode(data, "text/csv")
    assert len(decoded.canonical_text) == 2_000_000
    assert len(decoded.tasks) == 2_600
