"""Request models of the recording endpoints."""

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, IdList100, Name, distinct
from collab.kit.openapi import Doc

# Durations and sizes stay exact in JavaScript clients (Number.MAX_SAFE_INTEGER).
MAX_SAFE_INTEGER = 2**53 - 1
Label = Annotated[str, Field(min_length=1, max_length=50)]


class User(Model):
    userId: Id
    name: Name = None
    email: str = Field(None, max_length=320)


class RecordedTime(Model):
    # Milliseconds; `display` is always computed from it, so a sent one is ignored.
    duration: int = Field(ge=0, le=MAX_SAFE_INTEGER)


class AttachmentIn(Model):
    url: str = Field(min_length=1, max_length=2000)
    mimeType: str = Field(min_length=1, max_length=255)
    name: str = Field(min_length=1, max_length=500)
    type: Label
    size: int = Field(ge=0, le=MAX_SAFE_INTEGER)

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not re.match(r"^https?://\S+$", value, re.IGNORECASE):
            raise ValueError("Must be an http(s) URL")
        return value


class RecordingIn(Model):
    annotationId: Id = None
    recordingType: Label
    mode: Label
    displayName: str = Field(min_length=1, max_length=500)
    recordedTime: RecordedTime
    attachments: list[AttachmentIn] = Field(min_length=1, max_length=100)
    from_: User = Field(None, alias="from")


def _distinct_ids(items: list[RecordingIn]) -> list[RecordingIn]:
    # Results are keyed by annotationId: a supplied one may appear once (generated ones are fresh).
    distinct((r.annotationId for r in items if r.annotationId is not None), "annotationId")
    return items


Recordings = Annotated[list[RecordingIn], Field(min_length=1, max_length=MAX_BATCH), AfterValidator(_distinct_ids)]


class AddRecordings(Model):
    organizationId: Id
    documentId: Id
    recordings: Recordings


class GetRecordings(Model):
    organizationId: Id
    documentId: Id = None
    recordingIds: IdList100 = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class DeleteRecordings(Model):
    organizationId: Id
    annotationIds: IdList


# Response models (documentation and contract tests; see collab.kit.openapi).


class RecordingMetadata(Doc):
    apiKey: str
    documentId: str
    organizationId: str


class RecordingTime(Doc):
    duration: int = Field(description="Milliseconds.")
    display: str = Field(description="The duration as HH:MM:SS (whole seconds; hours may pass 24).")


class RecordingAttachment(Doc):
    attachmentId: int = Field(description="1..n in the order the files were sent, per version.")
    url: str
    mimeType: str
    name: str
    type: str
    size: int = Field(description="Bytes, as the client sent it.")


def display(duration_ms: int) -> str:
    """HH:MM:SS of a duration in milliseconds: whole seconds (cut, like a timer), hours past 24 as they are."""
    seconds = duration_ms // 1000
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Recording(Doc):
    """A recording annotation at its latest version."""

    type: Literal["recorder"]
    recordingType: str
    mode: str
    metadata: RecordingMetadata
    recordedTime: RecordingTime
    displayName: str
    annotationId: str
    attachments: list[RecordingAttachment]
    latestVersion: int

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A recording annotation in the spec's shape, at its latest version."""
        return {
            "type": "recorder", "recordingType": row["recording_type"], "mode": row["mode"], "metadata": {
                "apiKey": row["api_key_id"], "documentId": row["document_id"], "organizationId": row["organization_id"]
            }, "recordedTime": {"duration": row["duration_ms"], "display": display(row["duration_ms"])},
            "displayName": row["display_name"], "annotationId": row["annotation_id"],
            "attachments": [{k: a[k]
                             for k in ("attachmentId", "url", "mimeType", "name", "type", "size")}
                            for a in row["attachments"]], "latestVersion": row["version"]
        }
