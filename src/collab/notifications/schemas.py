"""Request models of notifications."""

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from collab.events import ActionUser
from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, IdList30, Name, unique_by
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules

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
    notificationIds: IdList30 = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)
    order: Literal["asc", "desc"] = "desc"

    _rules = rules(
        rule("documentId", "userId")(lambda v: (Broken(None, "Provide documentId or userId")
                                                if v.get("documentId") is None and v.get("userId") is None else None)))


class NotificationChange(Model):
    id: Id
    displayHeadlineMessageTemplate: str = Field(None, max_length=10_000)
    displayHeadlineMessageTemplateData: dict[str, Any] = None
    displayBodyMessage: str = Field(None, max_length=100_000)
    notificationSourceData: dict[str, Any] = None
    readByUserIds: list[Id] = Field(None, max_length=MAX_BATCH)


Changes = Annotated[list[NotificationChange], Field(min_length=1, max_length=MAX_BATCH), unique_by("id")]


class UpdateNotifications(Model):
    organizationId: Id
    notifications: Changes


class DeleteNotifications(Model):
    organizationId: Id
    documentId: Id = None
    notificationIds: IdList = None

    _rules = rules(
        rule("documentId", "notificationIds")(lambda v: (Broken(None, "Provide notificationIds or documentId") if v.get(
            "documentId") is None and v.get("notificationIds") is None else None)))


# Response models (documentation and contract tests; see collab.kit.openapi).


class RecipientRef(Doc):
    userId: str


class BatchedActivities(Doc):
    """`notificationSourceData` of a comment or huddle notification: the activities it reports."""

    activityIds: list[str]
    actionTypes: list[str]
    entityData: Any = Field(description="entityData of the latest activity, as its client sent it (null when none).")
    visibility: Literal["private"] | None = Field(None, description="Present only for a private comment.")
    visibleToUserIds: list[str] | None = Field(None, description="Present only for a private comment.")


class BatchedHeadlineData(Doc):
    """`displayHeadlineMessageTemplateData` of a comment or huddle notification."""

    actionUser: ActionUser
    activityCount: str = Field(description="How many activities the notification reports, as a string.")
    recipientUser: RecipientRef | None = Field(None, description="Present when batched per recipient.")


class NotificationMetadata(Doc):
    apiKey: str
    documentId: str
    organizationId: str


class Notification(Doc):
    """A notification record; `readByUserIds` goes beyond the spec."""

    id: str
    notificationSource: Literal["custom", "comment", "huddle"]
    notificationSourceData: BatchedActivities | dict[str, Any] = Field(
        description="For `comment` and `huddle`, the activities reported; for `custom`, the client's object as sent "
        "(`{}` when none).")
    actionUser: ActionUser
    displayBodyMessage: str
    displayHeadlineMessageTemplate: str
    displayHeadlineMessageTemplateData: BatchedHeadlineData | dict[str, Any] = Field(
        description="For `custom`, the client's object as sent (`{}` when none).")
    metadata: NotificationMetadata
    notifyUsers: dict[str, bool] = Field(description="Recipient key (e-mail when known, else userId) to true.")
    notifyUsersByUserId: dict[str, bool] = Field(description="Recipient userId to true.")
    timestamp: int = Field(description="Epoch milliseconds.")
    readByUserIds: list[str]

    @staticmethod
    def wire(row: dict[str, Any], api_key_id: str) -> dict[str, Any]:
        """A notification in the spec's record shape (plus `readByUserIds`)."""
        return {
            "id": row["id"], "notificationSource": row["notification_source"],
            "notificationSourceData": row["notification_source_data"] or {}, "actionUser": row["action_user"],
            "displayBodyMessage": row["display_body_message"],
            "displayHeadlineMessageTemplate": row["display_headline_message_template"],
            "displayHeadlineMessageTemplateData": row["display_headline_message_template_data"] or {}, "metadata": {
                "apiKey": api_key_id, "documentId": row["document_id"], "organizationId": row["organization_id"]
            }, "notifyUsers": row["notify_users"], "notifyUsersByUserId": row["notify_users_by_user_id"],
            "timestamp": row["timestamp"], "readByUserIds": list(row["read_by"])
        }


class NotificationAdded(Doc):
    success: bool
    message: str
    id: str = Field(description="The notification's id: the one sent, or the one generated.")
