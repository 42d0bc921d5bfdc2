"""Request and response models of users, organization user groups, user-data deletion and export."""

from typing import Annotated, Any, Literal

from pydantic import Field

from collab.activities.schemas import Activity
from collab.comments.schemas import UserComment, UserReaction, where
from collab.events import ActionUser
from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, IdList30, IdList100, Name, unique_by
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules
from collab.notifications.schemas import Notification
from collab.recordings.schemas import RecordingAttachment, RecordingTime, display


class UserIn(Model):
    userId: Id
    name: Name = None
    email: str = Field(None, max_length=320)
    accessRole: Literal["viewer", "editor"] = None


class _Scoped(Model):
    organizationId: Id
    documentId: Id = None
    folderId: Id = None

    _rules = rules(
        rule("documentId",
             "folderId")(lambda v: (Broken(None, "Provide either documentId or folderId, not both")
                                    if v.get("documentId") is not None and v.get("folderId") is not None else None)))


Users = Annotated[list[UserIn], Field(min_length=1, max_length=MAX_BATCH), unique_by("userId")]


class AddUsers(_Scoped):
    users: Users


class UpdateUsers(AddUsers):
    pass


def _all_documents(v):
    if v.get("allDocuments"):
        return [
            Broken(f, "allDocuments covers every document: leave out documentId and folderId")
            for f in ("documentId", "folderId") if v.get(f) is not None
        ] or None
    return None


class GetUsers(_Scoped):
    userIds: IdList30 = None
    organizationUserGroupIds: IdList30 = None
    allDocuments: bool = False
    groupByDocumentId: bool = False
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)

    _rules = rules(
        rule("documentId",
             "folderId")(lambda v: (Broken(None, "Provide either documentId or folderId, not both")
                                    if v.get("documentId") is not None and v.get("folderId") is not None else None)),
        rule("allDocuments", "documentId", "folderId")(_all_documents),
        rule("allDocuments", "groupByDocumentId")(
            lambda v: (Broken("groupByDocumentId", "groupByDocumentId works with allDocuments: true")
                       if v.get("groupByDocumentId") and not v.get("allDocuments") else None)))


class DeleteUsers(_Scoped):
    userIds: IdList


class DeleteUserData(Model):
    userIds: IdList100
    organizationIds: IdList100 = None


class UserDataGet(Model):
    userIds: IdList100
    organizationIds: IdList100 = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class UserDataDeleteStatus(Model):
    jobId: Id


class GroupIn(Model):
    groupId: Id
    groupName: Name = None


Groups = Annotated[list[GroupIn], Field(min_length=1, max_length=MAX_BATCH), unique_by("groupId")]


class AddGroups(Model):
    organizationId: Id
    organizationUserGroups: Groups


class GroupUsers(Model):
    organizationId: Id
    organizationUserGroupId: Id
    userIds: IdList


# Response models (documentation and contract tests; see collab.kit.openapi).


class UserWithAccess(Doc):
    userId: str
    accessRole: Literal["viewer", "editor"] = Field(description="The user's effective role at the scope.")
    name: str | None = Field(None, description="Absent when unknown.")
    email: str | None = Field(None, description="Absent when unknown.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A user with access at the scope, from a grant row (unknown name and e-mail left out)."""
        record = {"userId": row["user_id"], "accessRole": row["access_role"]}
        return record | {k: row[k] for k in ("name", "email") if row[k] is not None}


class UsersPageResult(Doc):
    status: Literal["success"]
    message: str
    data: list[UserWithAccess] | dict[str, list[UserWithAccess]] = Field(
        description="An array, or with groupByDocumentId an object mapping documentId to such arrays.")
    pageToken: str | None = Field(description="Pass back to get the next page; null on the last page.")
    nextPageToken: str | None = Field(description="The same token as pageToken (the spec names both).")


class UsersPage(Doc):
    """`{result: {status, message, data, pageToken, nextPageToken}}`."""

    result: UsersPageResult


class UserRemoved(Doc):
    """One entry of Delete Users, keyed by userId."""

    success: bool
    message: str


class GroupMembership(Doc):
    """One entry of the group membership answers, keyed by userId."""

    success: bool
    organizationUserGroupId: str
    message: str


class DeletionStarted(Doc):
    jobId: str
    tasksCount: int


class UserDataDeletion(Doc):
    """The spec's top-level body of Delete All User Data (no `result` wrapper), sent with HTTP 202."""

    status: Literal["success"]
    message: str
    data: DeletionStarted
    statusCode: Literal[202]


class DeletionStatus(Doc):
    isDeleteCompleted: bool
    tasksLeft: int
    lastTaskCompletedTime: int | None = Field(description="Epoch milliseconds; null before the first task finishes.")
    error: str | None = Field(None, description="Present when the deletion job failed for good with tasks left.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """Progress of a deletion job's row: done or not, tasks left, when the last task finished, why it failed."""
        left = len(set(row["tasks"]) - set(row["done"]))
        status: dict[str, Any] = {
            "isDeleteCompleted": left == 0, "tasksLeft": left, "lastTaskCompletedTime": row["last_task_completed_at"]
        }
        if left and row["job_status"] == "failed":
            status["error"] = f"The deletion job failed: {row['job_error']}"
        return status


class UserRecording(Doc):
    """One recording version a user made, in the export."""

    organizationId: str
    documentId: str
    annotationId: str
    version: int
    recordingType: str
    mode: str
    displayName: str
    recordedTime: RecordingTime
    attachments: list[RecordingAttachment]
    from_: ActionUser = Field(alias="from")
    createdAt: int = Field(description="Epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A recording version of the export: its place, time and the attachments' documented keys."""
        attachments = [{k: a[k] for k in RecordingAttachment.model_fields} for a in row["attachments"]]
        return where(row) | {
            "version": row["version"], "recordingType": row["recording_type"], "mode": row["mode"],
            "displayName": row["display_name"], "recordedTime": {
                "duration": row["duration_ms"], "display": display(row["duration_ms"])
            }, "attachments": attachments, "from": row["from_user"], "createdAt": row["created_at"]
        }


_OWNERS = "The requested userIds this record is about (its author, actor, recipient or reader)."


class ExportedComment(Doc):
    type: Literal["comment"]
    userIds: list[str] = Field(description=_OWNERS)
    record: UserComment


class ExportedReaction(Doc):
    type: Literal["reaction"]
    userIds: list[str] = Field(description=_OWNERS)
    record: UserReaction


class ExportedNotification(Doc):
    type: Literal["notification"]
    userIds: list[str] = Field(description=_OWNERS)
    record: Notification


class ExportedActivity(Doc):
    type: Literal["activity"]
    userIds: list[str] = Field(description=_OWNERS)
    record: Activity


class ExportedRecording(Doc):
    type: Literal["recording"]
    userIds: list[str] = Field(description=_OWNERS)
    record: UserRecording


# One record of Get User Data: `type` says which feature it comes from and what `record` holds.
UserDataRecord = Annotated[ExportedComment | ExportedReaction | ExportedNotification | ExportedActivity
                           | ExportedRecording,
                           Field(discriminator="type")]


class UserDataPageOf(Doc):
    status: Literal["success"]
    message: str
    data: list[UserDataRecord]
    pageToken: str | None = Field(description="Pass back to get the next page; null on the last page.")


class UserDataPage(Doc):
    """`{result: {status, message, data: [typed records], pageToken}}`."""

    result: UserDataPageOf
