"""Request models of users, organization user groups and user-data deletion."""

from typing import Literal

from pydantic import Field, model_validator

from collab.kit.envelope import Model
from collab.kit.fields import Id, Name, batch, id_list
from collab.kit.openapi import Doc


class UserIn(Model):
    userId: Id
    name: Name = None
    email: str = Field(None, max_length=320)
    accessRole: Literal["viewer", "editor"] = None


class _Scoped(Model):
    organizationId: Id
    documentId: Id = None
    folderId: Id = None

    @model_validator(mode="after")
    def _one_scope(self):
        if self.documentId is not None and self.folderId is not None:
            raise ValueError("Provide either documentId or folderId, not both")
        return self


Users = batch(UserIn, "userId")


class AddUsers(_Scoped):
    users: Users


class UpdateUsers(AddUsers):
    pass


class GetUsers(_Scoped):
    userIds: id_list(30) = None
    organizationUserGroupIds: id_list(30) = None
    allDocuments: bool = False
    groupByDocumentId: bool = False
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)

    @model_validator(mode="after")
    def _all_documents(self):
        if self.allDocuments and (self.documentId is not None or self.folderId is not None):
            raise ValueError("allDocuments covers every document: leave out documentId and folderId")
        if self.groupByDocumentId and not self.allDocuments:
            raise ValueError("groupByDocumentId works with allDocuments: true")
        return self


class DeleteUsers(_Scoped):
    userIds: id_list()


class DeleteUserData(Model):
    userIds: id_list(100)
    organizationIds: id_list(100) = None


class UserDataDeleteStatus(Model):
    jobId: Id


class GroupIn(Model):
    groupId: Id
    groupName: Name = None


Groups = batch(GroupIn, "groupId")


class AddGroups(Model):
    organizationId: Id
    organizationUserGroups: Groups


class GroupUsers(Model):
    organizationId: Id
    organizationUserGroupId: Id
    userIds: id_list()


# Response models (documentation and contract tests; see collab.kit.openapi).


class UserWithAccess(Doc):
    userId: str
    accessRole: Literal["viewer", "editor"] = Field(description="The user's effective role at the scope.")
    name: str | None = Field(None, description="Absent when unknown.")
    email: str | None = Field(None, description="Absent when unknown.")


class UsersPageResult(Doc):
    status: Literal["success"]
    message: str
    data: list[UserWithAccess] | dict[str, list[UserWithAccess]] = Field(
        description="An array, or with groupByDocumentId an object mapping documentId to such arrays."
    )
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
