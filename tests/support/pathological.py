"""Uploads that made the old decoders super-linear (backtracking regexes, csv.Sniffer), for unit and fuzz tests.

Each case is (name, bytes, mime type). Every one must be decoded or refused with a DecodeError in about the time
of any other upload of its size; none may stall the process that receives it.
"""

MARKDOWN = "text/markdown"
TEXT = "text/plain"
CSV = "text/csv"
TSV = "text/tab-separated-values"
FIVE_MB = 5 * 1024 * 1024 - 4096

# `_ATX` was cubic on the spaces between a heading's words: 6 KB took minutes, 24 KB hours.
ATX_LINE = b"# x" + b" " * 24_000 + b"y"
# `_LINK` was quadratic on a run of "[" (and on "[a](" repeated without a closing parenthesis).
BRACKETS_LINE = b"[" * 100_000
LINK_OPENERS_LINE = b"[a](" * 25_000
# csv.Sniffer's quote guess was quadratic on opening quotes after delimiters (32 KB sample: seconds).
SNIFF_LINE = b',"' * 16_000
SNIFF_LINES = (b'a,"b' * 2_000 + b"\n") * 8
SETEXT_AND_RULES = b"- " * 50_000 + b"x\n" + b"=" * 50_000 + b" x\n"
LONG_LINE = b"Check that " + b"very " * 400_000 + b"long lines are handled\n"
REAL_ITEMS = b"".join(b"- Check that item %d of the review is done\n" % i for i in range(40))


def _fill(unit: bytes, *, head: bytes = b"", size: int = FIVE_MB) -> bytes:
    """head, then unit repeated (whole lines) up to size bytes."""
    count = max(1, (size - len(head)) // len(unit))
    return head + unit * count


# Real checklist lines first, then the pathological lines up to just under the 5 MB upload limit.
FIVE_MB_MARKDOWN = _fill(ATX_LINE + b"\n" + BRACKETS_LINE + b"\n" + LINK_OPENERS_LINE + b"\n", head=REAL_ITEMS)
CSV_ITEMS = b"Check,Area\n" + b"".join(b"Check item %d is done,Ops\n" % i for i in range(40))
FIVE_MB_CSV = _fill(SNIFF_LINE + b"\n", head=CSV_ITEMS)

CASES: list[tuple[str, bytes, str]] = [("atx_heading_spaces", ATX_LINE + b"\n" + REAL_ITEMS, MARKDOWN),
                                       ("atx_heading_spaces_text", ATX_LINE + b"\n" + REAL_ITEMS, TEXT),
                                       ("bracket_run", BRACKETS_LINE + b"\n" + REAL_ITEMS, MARKDOWN),
                                       ("link_openers", LINK_OPENERS_LINE + b"\n" + REAL_ITEMS, MARKDOWN),
                                       ("setext_and_rules", SETEXT_AND_RULES + REAL_ITEMS, MARKDOWN),
                                       ("long_line", LONG_LINE, TEXT), ("csv_sniff_quotes", SNIFF_LINE + b"\n", CSV),
                                       ("csv_sniff_quote_lines", SNIFF_LINES, CSV),
                                       ("tsv_long_cells", (b"Check\t" + b"a " * 60_000 + b"\n") * 20, TSV),
                                       ("five_mb_markdown", FIVE_MB_MARKDOWN, MARKDOWN),
                                       ("five_mb_text", FIVE_MB_MARKDOWN, TEXT), ("five_mb_csv", FIVE_MB_CSV, CSV)]
