"""Pathological webhook inputs (endpoint URLs, publicKeys), as plain lists for the fuzz tests and hardening tests.

Every entry must be refused with 400 INVALID_ARGUMENT (never a 500), whether private targets are allowed or not.
"""

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


def _spki(public_key) -> bytes:
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def short_rsa_key(bits: int) -> str:
    """A base64 DER RSA public key of `bits` bits (no private key needed: RSA-OAEP cannot wrap 32 bytes under it)."""
    return base64.b64encode(_spki(rsa.RSAPublicNumbers(65537, (1 << (bits - 1)) | 0x1235).public_key())).decode()


# Endpoint URLs that pass a loose URL check but that the sender's parser (httpx + the resolver) refuses or crashes on.
URLS = [
    "http://0177.0.0.1/",  # octal IPv4 (httpx: invalid IPv4 address)
    "http://0x7f.1/",  # inet_aton reads it as 127.0.0.1
    "http://2130706433/",  # a whole IPv4 address as one number
    "http://a..b/",  # an empty label (the resolver's IDNA codec raises)
    "http://a\tb/",  # a tab inside the host
    "http://exa mple.com/",  # a space inside the host
    "http://[::1",  # an unclosed IPv6 literal
    "http://[fe80::1%25eth0]/",  # an IPv6 zone
    "http://%zz/",  # a bad percent-escape as the host
    "http://xn--zz/",  # an invalid A-label
    "http://xn--a.com/",  # an A-label that decodes to a control character
    "http://\u2603.com/",  # a code point IDNA 2008 does not allow
    "http://a:0/",  # port 0
    "http://a.example:99999/",  # port beyond 65535
    "http://user:pass@example.com/",  # credentials in the URL
    "http://:@example.com/",  # empty credentials
    "http://" + "a" * 64 + ".com/",  # a label over 63 characters
    "http://" + ".".join(["a" * 60] * 5) + "/",  # a host over 253 characters
    "http://-a.com/",  # a label starting with a hyphen
    "http://./",  # a host that is only a dot
    "ftp://example.com/",  # not http(s)
    "http:///path"  # no host
]

# publicKeys that advancedwebhookconfig/update must refuse (only a base64 DER RSA key of 2048+ bits passes).
PUBLIC_KEYS = [
    "PEM",
    "k",
    "bm90IGEga2V5",  # base64 of "not a key"
    "!!!not base64!!!",
    "AAAA",
    short_rsa_key(512),  # RSA-OAEP-256 cannot wrap a 32-byte key: used to crash the render
    short_rsa_key(768),
    base64.b64encode(_spki(rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key())).decode(),
    base64.b64encode(_spki(ec.generate_private_key(ec.SECP256R1()).public_key())).decode(),  # not RSA
    rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()  # PEM, not base64 DER
]

# Integers that orjson cannot write (beyond 64 bits): rows holding them were stored before ingress refused them.
BIG_INTEGERS = [2**64, -(2**63) - 1, 10**30]
