"""Request models of the activity endpoints."""

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from collab.kit.envelope import Model

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

    @model_validator(mode="after")
    def _custom_needs_target(self):
        if self.featureType == "custom" and not self.targetEntityId:
            raise ValueError("targetEntityId is required when featureType is custom")
        return self


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
    actionTypes: list[str] = Field(None, min_length=1, max_length=50)
    userId: str = Field(None, min_length=1, max_length=200)
    activityIds: list[str] = Field(None, min_length=1, max_length=100)
    order: Literal["asc", "desc"] = "desc"
    pageSize: int = Field(100, ge=1, le=1000)
    pageToken: str = Field(None, max_length=500)


class DeleteActivities(Model):
    organizationId: str = Id
    documentId: str = Field(None, min_length=1, max_length=200)
    activityIds: list[str] = Field(None, min_length=1, max_length=500)

    @model_validator(mode="after")
    def _something(self):
        if not self.documentId and not self.activityIds:
            raise ValueError("Provide activityIds or documentId")
        return self
