"""lib0 encoding, as Yjs and y-protocols write it: unsigned varints and length-prefixed byte strings."""


def uint(n: int) -> bytes:
    """An unsigned varint (7 bits a byte, low bits first)."""
    out = bytearray()
    while n > 127:
        out.append(128 | (n & 127))
        n >>= 7
    out.append(n)
    return bytes(out)


def buf(data: bytes) -> bytes:
    """A byte string with its length in front."""
    return uint(len(data)) + data


class Reader:
    """Reads lib0 values from `data`; anything short or malformed raises `error` (the caller's own kind)."""

    def __init__(self, data: bytes, error: type[ValueError] = ValueError):
        self.data, self.pos, self.error = data, 0, error

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.error("truncated")
        self.pos += 1
        return self.data[self.pos - 1]

    def uint(self) -> int:
        value, shift = 0, 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise self.error("integer too long")

    def skip(self, n: int) -> None:
        if n > len(self.data) - self.pos:
            raise self.error("truncated")
        self.pos += n

    def bytes(self) -> bytes:
        n = self.uint()
        self.skip(n)
        return self.data[self.pos - n:self.pos]

    def string(self) -> str:
        try:
            return self.bytes().decode()
        except UnicodeDecodeError:
            raise self.error("a string is not UTF-8") from None

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.error("trailing bytes")
