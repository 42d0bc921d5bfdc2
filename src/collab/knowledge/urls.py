"""The signed URLs of knowledge sources, served by this service: one to PUT an upload's bytes, two to download a
source (its original file, its canonical markdown). A token is its claims and an HMAC of them under the keyring;
nothing else opens a URL, and every refusal reads alike (no answer tells whether an id exists)."""

import base64
import json
from urllib.parse import quote

from collab.kit.crypto import Keyring

UPLOAD_PATH = "/knowledge/uploads/"
DOWNLOAD_PATH = "/knowledge/files/"
FILE_REF = "collab://uploads/"
_PURPOSE = b"knowledge-url\x00"
MAX_TOKEN_CHARS = 1000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(keyring: Keyring, *, purpose: str, api_key_id: str, id: str, expires_ms: int, mime_type: str = "") -> str:
    """A token that opens one URL (`purpose` upload, original or canonical) of one record until `expires_ms`."""
    payload = _b64(json.dumps([purpose, api_key_id, id, expires_ms, mime_type], separators=(",", ":")).encode())
    return payload + "." + _b64(keyring.sign(_PURPOSE + payload.encode()))


def read(keyring: Keyring, token: str, *, purposes: tuple[str, ...], now_ms: int) -> tuple[str, str, str, str] | None:
    """(purpose, api key, id, MIME type) of an unexpired token this service signed for one of `purposes`; else None."""
    if len(token) > MAX_TOKEN_CHARS:
        return None
    try:
        payload, signature = token.split(".")
        if not keyring.signed(_PURPOSE + payload.encode(), _unb64(signature)):
            return None
        values = json.loads(_unb64(payload))
    except (ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(values, list) and len(values) == 5 and isinstance(values[3], int)
            and all(isinstance(v, str) for v in (values[0], values[1], values[2], values[4]))):
        return None
    purpose, api_key_id, id, expires_ms, mime_type = values
    if purpose not in purposes or expires_ms <= now_ms:
        return None
    return purpose, api_key_id, id, mime_type


def url(base: str, path: str, token: str) -> str:
    """The absolute URL of a signed path under `base` (`Settings.base_url`: COLLAB_PUBLIC_URL, else the address the
    request reached)."""
    return base.rstrip("/") + path + quote(token, safe="")


def file_ref(upload_id: str) -> str:
    """The fileRef of an upload slot."""
    return FILE_REF + upload_id


def upload_id(ref: str) -> str | None:
    """The upload id a fileRef names, or None when it is not one of ours."""
    if not ref.startswith(FILE_REF):
        return None
    rest = ref[len(FILE_REF):]
    return rest if rest and "/" not in rest and len(rest) <= 100 else None
