"""Request models of the CRDT endpoints."""

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import ConfigDict, Field

from collab.crdt import ydoc
from collab.kit.envelope import Model
from collab.kit.fields import Id, IdList
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, Check, required, rule, rules

CrdtType = Literal["text", "map", "array", "xml", "xmltext"]
# The base64 of an update as large as the 8 MiB body limit allows.
MAX_YJS_UPDATE_CHARS = 11_184_812

# The messages Velt clients know for a missing id (the organization's has no full stop there either).
_ID_REQUIRED = {
    "organizationId": "Organization ID is required", "documentId": "Document ID is required.",
    "editorId": "Editor ID is required."
}


def _id_required(field: str) -> Check:
    """A check refusing a missing or null `field` with its own message."""

    def check(v: Mapping[str, Any]) -> Broken | None:
        return Broken(field, _ID_REQUIRED[field], "invalid_type") if v.get(field) is None else None

    return check


def _ids(*fields: str) -> list:
    """Rules refusing a missing or null id with its own message, beside every other failing field (one rule per id:
    a rule whose fields include one that failed its type does not run, and the others must still be named)."""
    return [rule(f)(_id_required(f)) for f in fields]


class Editors(Model):
    # Nullable so a missing id is answered with the message Velt clients know (the rules below).
    organizationId: Id | None = None
    documentId: Id | None = None


class AddCrdt(Editors):
    model_config = ConfigDict(json_schema_extra=required("organizationId", "documentId", "editorId", "data"))
    editorId: Id | None = None
    data: Any = None
    type: CrdtType
    contentKey: str = Field("content", min_length=1, max_length=200)
    # Beyond the spec: who wrote it (becomes lastUpdatedBy) and in which editor session.
    userId: Id | None = None
    sessionId: str | None = Field(None, min_length=1, max_length=200)

    _rules = rules(
        *_ids("organizationId", "documentId", "editorId"),
        rule("data")(lambda v: None
                     if v.get("data") is not None else Broken("data", "Data is required.", "invalid_type")))


class UpdateCrdt(Editors):
    model_config = ConfigDict(json_schema_extra=required("organizationId", "documentId", "editorId"))
    editorId: Id | None = None
    data: Any = None
    # Beyond the spec: a Yjs update (base64) from any Yjs client, in place of data.
    yjsUpdate: str | None = Field(None, min_length=1, max_length=MAX_YJS_UPDATE_CHARS)
    userId: Id | None = None
    sessionId: str | None = Field(None, min_length=1, max_length=200)

    _rules = rules(*_ids("organizationId", "documentId", "editorId"))


class GetCrdt(Editors):
    model_config = ConfigDict(json_schema_extra=required("organizationId", "documentId"))
    editorId: Id | None = None
    # Beyond the spec: "yjs" adds yjsUpdate, the base64 Yjs update that encodes each whole document.
    format: Literal["json", "yjs"] = "json"
    # Beyond the spec: a document's editors come in pages of about COLLAB_MAX_RESPONSE_BYTES; this continues one.
    pageToken: str | None = Field(None, max_length=500)

    _rules = rules(*_ids("organizationId", "documentId"))


class DeleteCrdt(Editors):
    model_config = ConfigDict(json_schema_extra=required("organizationId", "documentId"))
    editorIds: IdList | None = None

    _rules = rules(*_ids("organizationId", "documentId"))


# Response models (documentation and contract tests; see collab.kit.openapi).


def _iso(ms: int) -> str:
    """Epoch milliseconds as JavaScript's toISOString writes them (UTC, milliseconds, Z)."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class CrdtEditor(Doc):
    """A CRDT editor record."""

    data: str | dict[str, Any] | list[Any] = Field(
        description="The content: a string for `text`, `xmltext` and `xml` (XML markup), an object for `map`, "
        "an array for `array`.")
    id: str = Field(description="The editor ID.")
    lastUpdate: str = Field(description="ISO-8601 timestamp (UTC, milliseconds).")
    lastUpdatedBy: str | None = Field(description="userId of the last writer; null when none was sent.")
    sessionId: str | None
    yjsUpdate: str | None = Field(
        None, description="With `format: yjs` only: the base64 Yjs update that encodes the whole document.")

    @staticmethod
    def wire(row: dict[str, Any], content: Any, *, yjs: bool) -> dict[str, Any]:
        """A CRDT editor record as Get CRDT Data returns it."""
        record = {
            "data": content, "id": row["editor_id"], "lastUpdate": _iso(row["last_update"]),
            "lastUpdatedBy": row["last_updated_by"], "sessionId": row["session_id"]
        }
        if yjs:
            record["yjsUpdate"] = ydoc.encode(row["state"])
        return record
