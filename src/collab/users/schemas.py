"""Request and response models of users, organization user groups, user-data deletion and export."""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from collab.activities.schemas import Activity
from collab.comments.schemas import UserComment, UserReaction, where
from collab.events import ActionUser
from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id, IdList, IdList30, IdList100, Name, distinct_ids, unique_by
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules
from collab.notifications.schemas import EmailAddress, Notification, one_address
from collab.recordings.schemas import RecordingAttachment, RecordingTime, display


class UserIn(Model):
    userId: Id
    name: Name = None
    email: EmailAddress = None
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


def _creates(v):
    # Velt's create flags make the scope they name; a flag without its id has nothing to create.
    return [
        Broken(flag, f"{flag} needs {field}")
        for flag, field in (("createDocument", "documentId"),
                            ("createFolder", "folderId")) if v.get(flag) and v.get(field) is None
    ] or None


class AddUsers(_Scoped):
    users: Users
    createOrganization: bool = False
    createDocument: bool = False
    createFolder: bool = False
    parentFolderId: Id = None

    _rules = rules(
        rule("documentId",
             "folderId")(lambda v: (Broken(None, "Provide either documentId or folderId, not both")
                                    if v.get("documentId") is not None and v.get("folderId") is not None else None)),
        rule("createDocument", "documentId", "createFolder", "folderId")(_creates))


class UpdateUsers(_Scoped):
    users: Users


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


def _one_user_list(v):
    given = [f for f in ("userIds", "userId", "veltUserIds") if v.get(f) is not None]
    if not given:
        return Broken("userIds", "Provide userIds (or Velt's userId)")
    if given[0] == "userIds" and len(given) > 1:  # Velt's veltUserIds stands in for its userId, not for userIds
        return Broken(given[1], "Provide userIds, or Velt's userId (or veltUserIds), not both")
    if v.get("organizationId") is not None and v.get("organizationIds") is not None:
        return Broken("organizationId", "Provide organizationIds or organizationId, not both")
    return None


class UserDataGet(Model):
    """collab's shape `{userIds, organizationIds?}` or Velt's `{organizationId, userId}` (with its variants
    `veltUserIds` for several users and `veltAllOrganizations` for every organization)."""

    userIds: IdList100 = None
    organizationIds: IdList100 = None
    userId: Id = None
    organizationId: Id = None
    veltUserIds: IdList100 = None
    veltAllOrganizations: bool = False
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)

    _rules = rules(rule("userIds", "userId", "veltUserIds", "organizationId", "organizationIds")(_one_user_list))

    def users(self) -> list[str]:
        """The users whose data is asked for, whichever shape named them."""
        return self.userIds or self.veltUserIds or [self.userId]

    def by_feature(self) -> bool:
        """Velt's form (`userId` or `veltUserIds`, no `userIds`): answered by feature, as Velt does."""
        return self.userIds is None

    def organizations(self) -> list[str] | None:
        """The organizations the export is bounded to; None for all of them."""
        if self.veltAllOrganizations:
            return None
        return self.organizationIds or ([self.organizationId] if self.organizationId is not None else None)


class UserDataDeleteStatus(Model):
    jobId: Id


class GroupIn(Model):
    groupId: Id
    groupName: Name = None


Groups = Annotated[list[GroupIn], Field(min_length=1, max_length=MAX_BATCH), unique_by("groupId")]


class AddGroups(Model):
    organizationId: Id
    organizationUserGroups: Groups
    createOrganization: bool = False


class GroupUsers(Model):
    organizationId: Id
    organizationUserGroupId: Id
    userIds: IdList


class DeleteGroupUsers(Model):
    organizationId: Id
    organizationUserGroupId: Id
    # With deleteAll the group is emptied and userIds (which Velt clients may still send, even empty) is not read.
    userIds: Annotated[list[Id], Field(max_length=MAX_BATCH), AfterValidator(distinct_ids)] = None
    deleteAll: bool = False

    _rules = rules(
        rule("userIds", "deleteAll")(lambda v: (Broken("userIds", "Provide userIds, or deleteAll: true")
                                                if not v.get("deleteAll") and not v.get("userIds") else None)))


class GetGroups(Model):
    organizationId: Id
    organizationUserGroupIds: IdList = None
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


def _scope_or_all(v):
    if v.get("allDocuments"):
        return [
            Broken(f, "allDocuments covers every document: leave out documentId and folderId")
            for f in ("documentId", "folderId") if v.get(f) is not None
        ] or None
    if v.get("documentId") is not None and v.get("folderId") is not None:
        return Broken(None, "Provide either documentId or folderId, not both")
    return None


class CountUsers(Model):
    organizationId: Id
    documentId: Id = None
    folderId: Id = None
    userId: Id = None
    allDocuments: bool = False

    _rules = rules(rule("allDocuments", "documentId", "folderId")(_scope_or_all))


class DocUsers(Model):
    organizationId: Id
    userIds: Annotated[list[Id], Field(min_length=1, max_length=20), AfterValidator(distinct_ids)] = None
    includeInvolvedDocuments: bool = False
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)

    _rules = rules(
        rule("includeInvolvedDocuments",
             "userIds")(lambda v: (Broken("userIds", "includeInvolvedDocuments needs userIds, at most 5") if v.get(
                 "includeInvolvedDocuments") and len(v.get("userIds") or range(6)) > 5 else None)))


InviteType = Literal["org_user", "doc_user", "folder_user"]
InviteStatus = Literal["PENDING", "ACCEPTED", "REJECTED", "WITHDRAWN"]
Email = Annotated[str, Field(min_length=3, max_length=320), AfterValidator(one_address)]


def _invite_target(v):
    # doc_user names a document and folder_user a folder (velt-py's rule); org_user is the organization itself.
    needs = {"doc_user": "documentId", "folder_user": "folderId"}.get(v.get("type") or "")
    if needs and v.get(needs) is None:
        return Broken(needs, f"Required for type {v.get('type')}")
    return None


class InvitedBy(Model):
    email: str = Field(None, max_length=320)
    userId: Id = None
    userSnippylyId: Id = None
    clientUserId: Id = None


class AddInvite(Model):
    email: Email
    organizationId: Id
    type: InviteType
    organizationName: Name = None
    documentId: Id = None
    documentName: Name = None
    folderId: Id = None
    folderName: Name = None
    invitedBy: InvitedBy = None

    _rules = rules(rule("type", "documentId", "folderId")(_invite_target))


class InvitedUser(Model):
    userId: Id
    name: Name = None
    email: str = Field(None, max_length=320)


class RespondInvite(Model):
    email: Email
    organizationId: Id
    status: Literal["ACCEPTED", "REJECTED", "WITHDRAWN"]
    type: InviteType
    documentId: Id = None
    folderId: Id = None
    user: InvitedUser = None
    authToken: str = Field(None, max_length=10000)

    _rules = rules(
        rule("type", "documentId", "folderId")(_invite_target),
        rule("status", "user")(lambda v: (Broken("user", "Required to accept: the user who joins")
                                          if v.get("status") == "ACCEPTED" and v.get("user") is None else None)))


class GetInvites(Model):
    organizationId: Id
    email: Email = None
    isPendingUsersOnly: bool = False
    pageSize: int = Field(100, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class GetInvitations(Model):
    organizationId: Id
    email: Email
    status: InviteStatus = None
    type: InviteType = None
    pageSize: int = Field(100, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


class PendingInvites(Model):
    organizationId: Id
    type: InviteType


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


class UserDataByFeature(Doc):
    """Velt's form of the answer (asked with `userId` or `veltUserIds`): up to 100 records of each feature a page."""

    comments: list[UserComment] = Field(description="The users' comments, each with its reactions.")
    reactions: list[UserReaction] = Field(description="The reactions the users gave.")
    recordings: list[UserRecording] = Field(description="The recordings the users made.")
    notifications: list[Notification] = Field(description="Notifications the users caused, got or read.")
    activities: list[Activity] = Field(description="The users' activities (collab's addition; Velt keeps none).")


class UserDataPageOf(Doc):
    status: Literal["success"]
    message: str
    data: list[UserDataRecord] | UserDataByFeature = Field(
        description="collab's form (`userIds`): one list of typed records; Velt's form (`userId` or "
        "`veltUserIds`): the records by feature.")
    pageToken: str | None = Field(description="Pass back to get the next page; null on the last page.")
    nextPageToken: str | None = Field(description="The same token as pageToken (Velt's name).")


class UserDataPage(Doc):
    """`{result: {status, message, data: [typed records] or {comments, reactions, recordings, notifications,
    activities}, pageToken, nextPageToken}}`."""

    result: UserDataPageOf


class UserCount(Doc):
    count: int


class InvolvedDocument(Doc):
    documentId: str
    accessRole: Literal["viewer", "editor"]


class DocUser(Doc):
    """A user with access to at least one document of the organization (users/doc/get)."""

    userId: str
    name: str | None = Field(None, description="Absent when unknown.")
    email: str | None = Field(None, description="Absent when unknown.")
    documentsCount: int = Field(description="How many of the organization's documents the user holds a grant on "
                                "(their own or a group's, on the document itself).")
    involvedDocuments: list[InvolvedDocument] | None = Field(
        None, description="With includeInvolvedDocuments: those documents (the first 1000 by id) and the role on each.")

    @staticmethod
    def wire(row: dict[str, Any], *, involved: bool) -> dict[str, Any]:
        """A document-level user, with the documents they are involved in when asked."""
        record = {"userId": row["user_id"]} | {k: row[k] for k in ("name", "email") if row[k] is not None}
        record["documentsCount"] = row["documents_count"]
        if involved:
            record["involvedDocuments"] = [{"documentId": d, "accessRole": r} for d, r in row["documents"]]
        return record


class Invitation(Doc):
    invitationId: str
    organizationId: str
    type: Literal["org_user", "doc_user", "folder_user"]
    email: str = Field(description="Lower-cased.")
    status: Literal["PENDING", "ACCEPTED", "REJECTED", "WITHDRAWN"]
    documentId: str | None = None
    folderId: str | None = None
    organizationName: str | None = None
    documentName: str | None = None
    folderName: str | None = None
    invitedBy: dict[str, str] | None = None
    userId: str | None = Field(None, description="The user who accepted; absent before.")
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An invitation as clients see it (unset fields left out)."""
        record = {
            "invitationId": row["id"], "organizationId": row["organization_id"], "type": row["type"],
            "email": row["email"], "status": row["status"]
        }
        optional = {
            "documentId": row["document_id"], "folderId": row["folder_id"],
            "organizationName": row["organization_name"], "documentName": row["document_name"],
            "folderName": row["folder_name"], "invitedBy": row["invited_by"], "userId": row["user_id"]
        }
        record |= {k: v for k, v in optional.items() if v is not None}
        return record | {"createdAt": row["created_at"], "lastUpdated": row["updated_at"]}


class Group(Doc):
    groupId: str
    groupName: str | None = Field(None, description="Absent when the group was never named.")
    membersCount: int
    createdAt: int = Field(description="Epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An organization user group with how many members it has."""
        record: dict[str, Any] = {"groupId": row["id"]}
        if row["name"] is not None:
            record["groupName"] = row["name"]
        return record | {"membersCount": row["members"], "createdAt": row["created_at"]}
