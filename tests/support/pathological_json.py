"""JSON inputs that once passed ingress and broke a later read or write (issue #14): for the fuzz corpus.

Every one of them must be answered INVALID_ARGUMENT at ingress, never stored, never a 5xx later.
`VALUES` are Python values to place anywhere inside `data` (free-form JSON fields included);
`RAW_BODIES` are request bodies as bytes, for inputs that `json.dumps` cannot write (or writes otherwise).
"""

MAX_SAFE_INTEGER = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER: the largest integer accepted


def nested(value, depth: int = 40):
    """`value` inside `depth` alternating objects and arrays (below the 64-level nesting limit)."""
    for level in range(depth):
        value = {"n": value} if level % 2 else [value]
    return value


# Integers JSON readers cannot all hold exactly: just past the safe range, the 64-bit edges, far beyond.
BIG_INTEGERS = {
    "2^53": 2**53, "-2^53": -(2**53), "2^63": 2**63, "2^64": 2**64, "-2^63-1": -(2**63) - 1, "10^30": 10**30,
    "-10^30": -(10**30)
}

VALUES = {
    **BIG_INTEGERS, "nested 2^64": nested(2**64), "nested 10^30 in a list": nested([1, 2, 10**30]),
    "2^64 among safe values": {"ok": MAX_SAFE_INTEGER, "also": -MAX_SAFE_INTEGER, "bad": 2**64}
}

# Values at the edge that must still be accepted, and come back exactly as sent.
SAFE_VALUES = {
    "2^53-1": MAX_SAFE_INTEGER, "-(2^53-1)": -MAX_SAFE_INTEGER, "long digit string": "123456789012345678901234567890",
    "large float": 1e300
}

RAW_BODIES = {
    # Past Python's 4,300-digit conversion limit: refused as invalid JSON, not a 500.
    "5000-digit integer": b'{"data": {"n": 1' + b"0" * 5000 + b"}}",
    # An exponent is a float, not an integer: 1e400 is out of double range and refused.
    "1e400": b'{"data": {"n": 1e400}}',
    "integer outside data": b'{"data": {}, "extra": 18446744073709551616}'
}
