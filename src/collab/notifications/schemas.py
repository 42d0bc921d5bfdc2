"""Request models of notifications."""

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, Name, batch, id_list

NOTIFICATION_ID = r"^[A-Za-z0-9_-]+$"


class User(Model):
    """A user as clients send it; fields beyond these are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    userId: Id
    name: Name = None
    email: str = Field(None, max_length=320)


class AddNotification(Model):
    organizationId: Id
    documentId: Id
    actionUser: User
    notificationId: str = Field(None, min_length=1, max_length=200, pattern=NOTIFICATION_ID)
    displayHeadlineMessageTemplate: str = Field(max_length=10_000)
    displayHeadlineMessageTemplateData: dict[str, Any] = None
    displayBodyMessage: str = Field(max_length=100_000)
    notifyUsers: list[User] = Field(max_length=MAX_BATCH)
    notifyAll: bool = True
    notificationSourceData: dict[str, Any] = None
    locationId: Id = None
    createDocument: bool = False
    createOrganization: bool = False


class GetNotifications(Model):
    organizationId: Id
    documentId: Id = None
    userId: Id = None
    locationId: Id = None
    notificationIds: id_list(30) = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)
    order: Literal["asc", "desc"] = "desc"

    @model_validator(mode="after")
    def _document_or_user(self):
        if self.documentId is None and self.userId is None:
            raise ValueError("Provide documentId or userId")
        return self


class NotificationChange(Model):
    id: Id
    displayHeadlineMessageTemplate: str = Field(None, max_length=10_000)
    displayHeadlineMessageTemplateData: dict[str, Any] = None
    displayBodyMessage: str = Field(None, max_length=100_000)
    notificationSourceData: dict[str, Any] = None
    readByUserIds: list[Id] = Field(None, max_length=MAX_BATCH)


Changes = batch(NotificationChange, "id")


class UpdateNotifications(Model):
    organizationId: Id
    notifications: Changes


class DeleteNotifications(Model):
    organizationId: Id
    documentId: Id = None
    notificationIds: id_list() = None

    @model_validator(mode="after")
    def _something(self):
        if self.documentId is None and self.notificationIds is None:
            raise ValueError("Provide notificationIds or documentId")
        return self
