"""Request models of notifications."""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from collab.events import ActionUser
from collab.kit import safety
from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, IdList30, Name, distinct
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, required, rule, rules
from collab.notifications import mail

NOTIFICATION_ID = r"^[A-Za-z0-9_-]+$"


def one_address(value: str) -> str:
    """A field's e-mail address: exactly one addr-spec (mail.addr_spec), or "" for none."""
    if value and mail.addr_spec(value) is None:
        raise ValueError("Must be one e-mail address such as name@example.com (no display name, list, group or "
                         "bare local part)")
    return value


# A user's e-mail address, as every operation that sets one takes it ("" is none).
EmailAddress = Annotated[str, Field(max_length=320), AfterValidator(one_address)]


class User(Model):
    """A user as clients send it; fields beyond these are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    userId: Id
    name: Name = None
    email: EmailAddress = None  # e-mails go to it


class Context(Model):
    """Velt's `context` (context-based filtering in its client SDK); accepted and bounded, not stored (ADR 0050)."""

    model_config = ConfigDict(strict=True, extra="allow")
    access: dict[str, Annotated[str, Field(max_length=1000)] | int | float] = Field(None, max_length=100)


TEXTS = ("displayHeadlineMessageTemplate", "displayBodyMessage")


def _texts(v: dict[str, Any]) -> list[Broken]:
    """The spec requires both texts; Velt too, unless a notification resolver fills them in at read time."""
    if v.get("isNotificationResolverUsed") is True:
        return []
    return [
        Broken(name, f"{name} is required unless isNotificationResolverUsed is true", "invalid_type") for name in TEXTS
        if v.get(name) is None
    ]


class AddNotification(Model):
    # Required as the spec says (documented so); a rule lets a notification resolver's body leave them out.
    model_config = ConfigDict(json_schema_extra=required(*TEXTS))
    organizationId: Id
    documentId: Id
    actionUser: User
    notificationId: str = Field(None, min_length=1, max_length=200, pattern=NOTIFICATION_ID)
    # Required unless isNotificationResolverUsed (then stored as "", the resolver supplies them).
    displayHeadlineMessageTemplate: str = Field(None, max_length=10_000)
    displayHeadlineMessageTemplateData: dict[str, Any] = None
    displayBodyMessage: str = Field(None, max_length=100_000)
    notifyUsers: list[User] = Field(max_length=MAX_BATCH)
    notifyAll: bool = True
    notificationSource: Literal["custom", "comment", "huddle", "crdt"] = "custom"
    notificationSourceData: dict[str, Any] = None
    locationId: Id = None
    location: dict[str, Any] = None
    createDocument: bool = False
    createOrganization: bool = False
    verifyUserPermissions: bool = False
    isNotificationResolverUsed: bool = False
    context: Context = None

    _rules = rules(rule(*TEXTS, "isNotificationResolverUsed")(_texts))


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
    id: Id = None
    actionUser: User = None
    displayHeadlineMessageTemplate: str = Field(None, max_length=10_000)
    displayHeadlineMessageTemplateData: dict[str, Any] = None
    displayBodyMessage: str = Field(None, max_length=100_000)
    notificationSourceData: dict[str, Any] = None
    readByUserIds: list[Id] = Field(None, max_length=MAX_BATCH)
    persistReadForUsers: bool = False  # collab never hides read notifications: always as if true (ADR 0050)


def _ids_distinct(changes: list[NotificationChange]) -> list[NotificationChange]:
    distinct((c.id for c in changes if c.id is not None), "id")
    return changes


Changes = Annotated[list[NotificationChange], Field(min_length=1, max_length=MAX_BATCH), AfterValidator(_ids_distinct)]


def _field(value: Any, name: str) -> Any:
    """A field of a sub-object, as sent (a dict) or as validated (a model)."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _scoped(v: dict[str, Any]) -> Broken | None:
    unscoped = any(_field(c, "id") is None for c in v.get("notifications") or [])
    if unscoped and all(v.get(k) is None for k in ("documentId", "locationId", "userId")):
        return Broken("notifications", "A change without an id needs documentId, locationId or userId")
    return None


class UpdateNotifications(Model):
    organizationId: Id
    documentId: Id = None
    locationId: Id = None
    userId: Id = None
    verifyUserPermissions: bool = False
    notifications: Changes

    _rules = rules(rule("notifications", "documentId", "locationId", "userId")(_scoped))


class DeleteNotifications(Model):
    organizationId: Id
    documentId: Id = None
    locationId: Id = None
    userId: Id = None
    notificationIds: IdList = None

    _rules = rules(
        rule("documentId", "notificationIds", "locationId",
             "userId")(lambda v: (Broken(None, "Provide notificationIds, documentId, locationId or userId") if all(
                 v.get(k) is None for k in ("documentId", "notificationIds", "locationId", "userId")) else None)))


Channel = Literal["ALL", "MINE", "NONE"]


class ChannelConfig(Model):
    inbox: Channel = None
    email: Channel = None
    slack: Channel = None  # delivered to the API key's Slack webhook (notifications/slack.py, ADR 0050)


class SetPreferences(Model):
    organizationId: Id
    userIds: IdList
    documentIds: IdList30 = None
    config: ChannelConfig

    _rules = rules(
        rule("config")(lambda v: (Broken("config", "Set at least one of inbox, email or slack")
                                  if v.get("config") is not None and all(
                                      _field(v["config"], k) is None for k in ("inbox", "email", "slack")) else None)))


class GetPreferences(Model):
    organizationId: Id
    userId: Id
    documentIds: IdList30 = None
    getOrganizationConfig: bool = False

    _rules = rules(
        rule("documentIds", "getOrganizationConfig")(
            lambda v: (Broken("documentIds", "Provide documentIds or getOrganizationConfig: true")
                       if not v.get("documentIds") and v.get("getOrganizationConfig") is not True else None)))


class EmailServiceConfig(Model):
    """Velt's `emailServiceConfig`, plus `smtp*` fields for an API key's own SMTP server (ADR 0050)."""

    type: Literal["default", "sendgrid", "smtp", "custom"] = None
    apiKey: str = Field(None, max_length=500)
    fromEmail: str = Field(None, max_length=320)
    fromCompany: str = Field(None, max_length=200)
    commentTemplateId: str = Field(None, max_length=200)
    tagTemplateId: str = Field(None, max_length=200)
    triggers: dict[str, bool] = Field(None, max_length=100)
    smtpHost: str = Field(None, min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:\[\]-]+$")
    smtpPort: int = Field(None, ge=1, le=65535)
    smtpSecurity: Literal["none", "starttls", "tls"] = None
    smtpUsername: str = Field(None, max_length=320)
    smtpPassword: str = Field(None, max_length=500)

    _from = field_validator("fromEmail")(lambda v: _email_or_empty(v))
    _host = field_validator("smtpHost")(lambda v: _host_or_none(v))


def _host_or_none(value: str | None) -> str | None:
    """A DNS name (labels of 1-63 characters, 253 in all) or an IP literal, as the resolver will take it."""
    if value is not None:
        try:
            safety.host_name(value)
        except safety.Refused as exc:
            raise ValueError(str(exc)) from None
    return value


def _email_or_empty(value: str | None) -> str | None:
    if value and mail.addr_spec(value) is None:
        raise ValueError("Invalid email address: must be one address such as name@example.com")
    return value


_EMAIL_CONFIG_PARTS = ("useEmailService", "emailServiceConfig", "slackWebhookUrl")


def _one_part(values: dict[str, Any]) -> Broken | None:
    if all(values.get(k) is None for k in _EMAIL_CONFIG_PARTS):
        return Broken(None, "Provide useEmailService, emailServiceConfig or slackWebhookUrl")
    return None


class UpdateEmailConfig(Model):
    useEmailService: bool = None
    emailServiceConfig: EmailServiceConfig = None
    # collab's Slack delivery (ADR 0050): the incoming-webhook URL notifications of the `slack` channel go to; the
    # value shown (masked) keeps the stored one, "" clears it.
    slackWebhookUrl: str = Field(None, max_length=2000)

    _rules = rules(rule(*_EMAIL_CONFIG_PARTS)(_one_part))


class EmailStatusQuery(Model):
    ownerEmail: str = Field(None, max_length=320)
    userId: Id = None
    status: Literal["open", "pending", "sending", "sent", "failed", "skipped", "cancelled"] = None
    pageSize: int = Field(50, ge=1, le=200)


class SendLoginLink(Model):
    """Velt's workspace/email/send-login-link."""

    email: Annotated[str, Field(min_length=3, max_length=320), AfterValidator(one_address)]
    continueUrl: str = Field(min_length=1, max_length=2000)


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
    notificationSource: Literal["custom", "comment", "huddle", "crdt"]
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


class PreferenceSet(Doc):
    """One user's outcome of notifications/config/set."""

    success: bool
    userId: str
    message: str
    documentId: str | None = Field(None, description="Present when one document was given.")
    documentIds: list[str] | None = Field(None, description="Present when several documents were given.")


class ChannelChoice(Doc):
    inbox: Channel
    email: Channel
    slack: Channel | None = Field(
        None, description="Present once set; unset is NONE. ALL or MINE posts the user's notifications to the API "
        "key's Slack webhook (`slackWebhookUrl` of workspace/emailconfig).")


class PreferenceMetadata(Doc):
    organizationId: str
    apiKey: str
    userId: str
    documentId: str | None = Field(None, description="Absent for the organization level.")


class UserPreference(Doc):
    """A user's effective channels at one level (a document's choice, else the organization's, else ALL)."""

    config: ChannelChoice
    metadata: PreferenceMetadata


class EmailServiceView(Doc):
    type: str
    apiKey: str = Field(description="`****` and the last 4 characters when set, else empty.")
    fromEmail: str
    fromCompany: str
    commentTemplateId: str
    tagTemplateId: str
    triggers: dict[str, bool] | None = None
    smtpHost: str | None = None
    smtpPort: int | None = None
    smtpSecurity: Literal["none", "starttls", "tls"] | None = None
    smtpUsername: str | None = None
    smtpPassword: str | None = Field(None, description="`****` when set (never returned).")


class EmailConfigView(Doc):
    useEmailService: bool
    emailServiceConfig: EmailServiceView
    slackWebhookUrl: str | None = Field(
        None, description="Present once set: the Slack incoming-webhook URL's scheme and host, then `****` and its "
        "last 4 characters (collab's Slack delivery).")


class EmailRecord(Doc):
    """One notification e-mail: to one user, reporting one or more notifications."""

    id: str
    organizationId: str
    userId: str
    to: str
    status: Literal["open", "pending", "sending", "sent", "failed", "skipped", "cancelled"]
    notificationIds: list[str]
    subject: str | None
    provider: str | None
    attempts: int
    lastError: str | None
    nextAttemptAt: int | None = Field(description="Epoch ms when it goes out (next), while open or pending.")
    sentAt: int | None
    createdAt: int


class SlackRecord(Doc):
    """One Slack message: one user's notifications (one or a batch) posted to the API key's Slack webhook."""

    id: str
    organizationId: str
    userId: str
    status: Literal["open", "pending", "sending", "sent", "failed", "skipped", "cancelled"]
    notificationIds: list[str]
    attempts: int
    lastError: str | None
    nextAttemptAt: int | None = Field(description="Epoch ms when it goes out (next), while open or pending.")
    sentAt: int | None
    createdAt: int


class SlackStatus(Doc):
    configured: bool = Field(description="Whether a Slack webhook URL is set.")
    counts: dict[str, int] = Field(description="Slack messages in each state.")
    messages: list[SlackRecord] = Field(description="The latest Slack messages, newest first (the same filters).")


class EmailStatus(Doc):
    useEmailService: bool
    type: str
    counts: dict[str, int] = Field(description="E-mails in each state.")
    emails: list[EmailRecord] = Field(description="The latest e-mails, newest first.")
    slack: SlackStatus | None = Field(None, description="collab's Slack delivery (the `slack` channel).")
    verified: bool | None = Field(
        None, description="Present when ownerEmail was sent: whether it is the e-mail of "
        "the workspace's owner (collab has no separate verification step).")


class OwnerVerification(Doc):
    """The public workspace/email/status (no credentials): an owner's address is verified (collab has no separate
    verification step); any other address answers NOT_FOUND."""

    verified: bool
