"""Request models of the activity endpoints."""

from typing import Any, Literal

from pydantic import ConfigDict, Field

from collab.events import ActionUser
from collab.kit import fields
from collab.kit.envelope import Model
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules

Id = Field(min_length=1, max_length=200)
FeatureType = Literal["comment", "reaction", "recorder", "crdt", "custom"]


class User(Model):
    """A user as the spec sends it; fields beyond these are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    userId: str = Field(min_length=1, max_length=200)
    name: str = Field(None, max_length=500)
    email: str = Field(None, max_length=320)


class ActivityIn(Model):
    id: str = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_\-:.]+$")
    featureType: FeatureType
    actionType: str = Field(min_length=1, max_length=200)
    actionUser: User
    targetEntityId: str = Field(None, min_length=1, max_length=500)
    targetSubEntityId: str = Field(None, min_length=1, max_length=500)
    changes: dict[str, Any] = None
    entityData: Any = None
    entityTargetData: Any = None
    displayMessageTemplate: str = Field(None, max_length=10_000)
    displayMessageTemplateData: dict[str, Any] = None
    actionIcon: str = Field(None, max_length=2000)
    isActivityResolverUsed: bool = False
    # Beyond the spec: when the activity happened (epoch ms), for importing history; never in the future.
    timestamp: int = Field(None, ge=0, le=10**14)

    _rules = rules(
        rule("featureType", "targetEntityId")(
            lambda v: (Broken("targetEntityId", "targetEntityId is required when featureType is custom")
                       if v.get("featureType") == "custom" and not v.get("targetEntityId") else None)))


class AddActivities(Model):
    organizationId: str = Id
    documentId: str = Id
    activities: list[ActivityIn] = Field(min_length=1, max_length=500)


class ActivityChange(Model):
    id: str = Field(min_length=1, max_length=200)
    changes: dict[str, Any] = None
    entityData: Any = None
    entityTargetData: Any = None
    displayMessageTemplate: str = Field(None, max_length=10_000)
    displayMessageTemplateData: dict[str, Any] = None
    actionIcon: str = Field(None, max_length=2000)


class UpdateActivities(Model):
    organizationId: str = Id
    activities: list[ActivityChange] = Field(min_length=1, max_length=500)


class GetActivities(Model):
    organizationId: str = Id
    documentId: str = Field(None, min_length=1, max_length=200)
    targetEntityId: str = Field(None, min_length=1, max_length=500)
    featureTypes: list[FeatureType] = Field(None, min_length=1, max_length=5)
    actionTypes: list[fields.Name] = Field(None, min_length=1, max_length=50)
    userId: str = Field(None, min_length=1, max_length=200)
    activityIds: list[fields.Id] = Field(None, min_length=1, max_length=100)
    order: Literal["asc", "desc"] = "desc"
    pageSize: int = Field(100, ge=1, le=1000)
    pageToken: str = Field(None, max_length=500)


class DeleteActivities(Model):
    organizationId: str = Id
    documentId: str = Field(None, min_length=1, max_length=200)
    activityIds: list[fields.Id] = Field(None, min_length=1, max_length=500)
    targetEntityId: str = Field(None, min_length=1, max_length=200)  # Velt: every activity about this entity

    _rules = rules(
        rule(
            "documentId", "activityIds",
            "targetEntityId")(lambda v: (Broken(None, "Provide activityIds, documentId or targetEntityId") if not v.get(
                "documentId") and not v.get("activityIds") and not v.get("targetEntityId") else None)))


# Response models (documentation and contract tests; see collab.kit.openapi).

# An activity's columns by the spec's field names (Activity.wire).
_ACTIVITY_FIELDS = {
    "id": "id", "organization_id": "organizationId", "document_id": "documentId", "feature_type": "featureType",
    "action_type": "actionType", "action_user": "actionUser", "target_entity_id": "targetEntityId",
    "target_sub_entity_id": "targetSubEntityId", "changes": "changes", "entity_data": "entityData",
    "entity_target_data": "entityTargetData", "display_message_template": "displayMessageTemplate",
    "display_message_template_data": "displayMessageTemplateData", "action_icon": "actionIcon",
    "is_activity_resolver_used": "isActivityResolverUsed", "timestamp": "timestamp"
}


class ActivityMetadata(Doc):
    """Velt's `metadata` of an activity: where it belongs."""

    apiKey: str = Field(description="The API key the record belongs to (the caller's).")
    organizationId: str
    documentId: str | None = Field(None, description="Absent for an activity of no document.")


class Activity(Doc):
    """An activity log record; fields never set are left out."""

    id: str
    organizationId: str
    documentId: str
    featureType: FeatureType
    actionType: str
    actionUser: ActionUser
    targetEntityId: str | None = None
    targetSubEntityId: str | None = None
    changes: dict[str, Any] | None = Field(None, description="Field name to `{from, to}`, as the client sent it.")
    entityData: Any = Field(None, description="Snapshot of the entity, as the client sent it.")
    entityTargetData: Any = Field(None, description="Snapshot of the target entity, as the client sent it.")
    displayMessageTemplate: str | None = None
    displayMessageTemplateData: dict[str, Any] | None = Field(None, description="As the client sent it.")
    actionIcon: str | None = None
    isActivityResolverUsed: bool
    timestamp: int = Field(description="When the activity happened, epoch milliseconds.")
    metadata: ActivityMetadata | None = Field(
        None, description="In activities/get: Velt's place for the record's scope (the same ids as at the top).")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An activity log record as the spec names its fields (unset ones left out)."""
        return {wire: row[column] for column, wire in _ACTIVITY_FIELDS.items() if row.get(column) is not None}

    @staticmethod
    def listed(row: dict[str, Any], api_key_id: str) -> dict[str, Any]:
        """A record as activities/get lists it: with Velt's `metadata` (the caller's API key and the record's ids)."""
        record = Activity.wire(row)
        record["metadata"] = {"apiKey": api_key_id, "organizationId": row["organization_id"]}
        if row.get("document_id") is not None:
            record["metadata"]["documentId"] = row["document_id"]
        return record


class ActivitiesAdded(Doc):
    success: bool
    message: str


class ActivityOutcome(Doc):
    """One entry of Update Activities, keyed by activity id."""

    success: bool
    message: str


class ActivitiesDeleted(Doc):
    success: bool
    message: str
    deletedIds: list[str]
