"""Request models of the presence endpoints."""

from typing import Annotated, Any

from pydantic import Field, field_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, Name, unique_by
from collab.kit.openapi import Doc


class PresenceUser(Model):
    userId: Id
    name: Name = None
    email: str = Field(None, max_length=320)
    # Any short label the client shows (`online`, `busy`, ...); omitted means `online`.
    status: str = Field(None, min_length=1, max_length=50)

    @field_validator("status")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("status must not be blank")
        return value


PresenceUsers = Annotated[list[PresenceUser], Field(min_length=1, max_length=MAX_BATCH), unique_by("userId")]


class UpdatePresence(Model):
    organizationId: Id
    documentId: Id
    users: PresenceUsers


class DeletePresence(Model):
    organizationId: Id
    documentId: Id
    userIds: IdList


class GetPresence(Model):
    organizationId: Id
    documentId: Id


# Response models (documentation and contract tests; see collab.kit.openapi).


class PresenceOutcome(Doc):
    success: bool


class Presence(Doc):
    """A user seen on a document, with the status they read now."""

    userId: str
    name: str | None = Field(None, description="Absent when never sent.")
    email: str | None = Field(None, description="Absent when never sent.")
    status: str = Field(
        description="The status last sent (default `online`), read as `away` and then `offline` once the user "
        "stops sending heartbeats.")
    lastSeen: int = Field(description="Last update, epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any], status: str) -> dict[str, Any]:
        """A user's presence as clients see it (unset name and e-mail left out)."""
        record: dict[str, Any] = {"userId": row["user_id"]}
        if row["name"] is not None:
            record["name"] = row["name"]
        if row["email"] is not None:
            record["email"] = row["email"]
        return record | {"status": status, "lastSeen": row["last_seen"]}
