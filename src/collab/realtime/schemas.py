"""Request and response models of the live state endpoints."""

from typing import Any

from pydantic import ConfigDict, Field

from collab.kit.envelope import Model
from collab.kit.fields import Id
from collab.kit.openapi import Doc
from collab.kit.validation import required


class BroadcastLiveState(Model):
    model_config = ConfigDict(json_schema_extra=required("organizationId", "documentId", "liveStateDataId", "data"))
    organizationId: Id
    documentId: Id
    liveStateDataId: Id
    data: Any = Field(description="Any JSON value (null included).")
    # Merge an object into the object kept (its top-level keys), instead of replacing the value.
    merge: bool = False


class GetLiveState(Model):
    organizationId: Id
    documentId: Id
    liveStateDataId: Id | None = None


# Response models (documentation and contract tests; see collab.kit.openapi).


class LiveStateOutcome(Doc):
    success: bool


class LiveState(Doc):
    """The last value broadcast (or merged) for one liveStateDataId of a document."""

    liveStateDataId: str
    data: Any = Field(description="Any JSON value.")
    updatedAt: int = Field(description="Last broadcast, epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A kept value as livestate/get answers it."""
        return {"liveStateDataId": row["live_state_data_id"], "data": row["data"], "updatedAt": row["updated_at"]}
