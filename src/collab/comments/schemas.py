"""Request and response models of the comment endpoints (Velt's commentannotations shapes)."""

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from collab.activities.schemas import ActionUser
from collab.kit.envelope import Model
from collab.kit.fields import Id, distinct, id_list
from collab.kit.openapi import Doc

# Size limits (docs/decisions.md, "Comments"); comments per thread is a setting (COLLAB_COMMENTS_MAX_PER_THREAD).
MAX_TEXT = 20_000  # characters of commentText, and of commentHtml
MAX_ATTACHMENTS = 20  # per comment
MAX_TAGGED = 50  # tagged users per comment
MAX_THREADS_PER_CALL = 100  # commentAnnotations in one add
MAX_COMMENTS_PER_CALL = 100  # commentData in one add
MAX_REACTION = 64  # characters of a reaction (an emoji or a short name)
StatusId = Literal["open", "in_progress", "resolved"]
OptId = Field(None, min_length=1, max_length=200)


class User(Model):
    """A user as Velt sends one; further keys are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    userId: str = Field(min_length=1, max_length=200)
    name: str = Field(None, max_length=500)
    email: str = Field(None, max_length=320)


class TargetElement(Model):
    elementId: str = Field(None, max_length=1000)
    targetText: str = Field(None, max_length=10_000)
    occurrence: int = Field(None, ge=0, le=1_000_000)


class Status(Model):
    id: StatusId


class Priority(Model):
    id: str = Field(min_length=1, max_length=100)


class Visibility(Model):
    type: Literal["public", "restricted"]
    userIds: list[Id] = Field(None, max_length=1000)


class Tagged(Model):
    userId: Id
    contact: User = None


class Attachment(Model):
    """An attachment as Velt describes one (url, name, mimeType, size...); further keys are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    url: str = Field(None, max_length=4000)
    name: str = Field(None, max_length=1000)
    mimeType: str = Field(None, max_length=200)
    size: int = Field(None, ge=0)


def _distinct_tags(tags: list[Tagged] | None) -> None:
    if tags:
        distinct((t.userId for t in tags), "tagged userId")


class CommentIn(Model):
    commentText: str = Field(None, max_length=MAX_TEXT)
    commentHtml: str = Field(None, max_length=MAX_TEXT)
    from_: User = Field(alias="from")
    taggedUserContacts: list[Tagged] = Field(None, max_length=MAX_TAGGED)
    attachments: list[Attachment] = Field(None, max_length=MAX_ATTACHMENTS)
    triggerNotification: bool = True
    triggerActivities: bool = True
    agent: dict[str, Any] = None

    @model_validator(mode="after")
    def _check(self):
        _distinct_tags(self.taggedUserContacts)
        return self


class AnnotationIn(Model):
    annotationId: str = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_\-:.]+$")
    location: dict[str, Any] = None
    targetElement: TargetElement = None
    status: Status = None
    priority: Priority = None
    assignedTo: User = None
    context: dict[str, Any] = None
    visibility: Visibility = None
    commentData: list[CommentIn] = Field(min_length=1, max_length=MAX_COMMENTS_PER_CALL)


class Scope(Model):
    organizationId: Id
    documentId: Id


class AddAnnotations(Scope):
    createOrganization: bool = False
    createDocument: bool = False
    verifyUserPermissions: bool = False
    commentAnnotations: list[AnnotationIn] = Field(min_length=1, max_length=MAX_THREADS_PER_CALL)

    @model_validator(mode="after")
    def _check(self):
        distinct((a.annotationId for a in self.commentAnnotations if a.annotationId), "annotationId")
        return self


class GetAnnotations(Model):
    organizationId: Id
    documentId: str = OptId
    documentIds: id_list() = None
    annotationIds: id_list() = None
    locationIds: id_list() = None
    folderId: str = OptId
    userIds: id_list() = None
    mentionedUserIds: id_list() = None
    assignedToUserIds: id_list() = None
    statusIds: list[StatusId] = Field(None, min_length=1, max_length=3)
    resolvedBy: str = OptId
    createdAfter: int = Field(None, ge=0)
    createdBefore: int = Field(None, ge=0)
    updatedAfter: int = Field(None, ge=0)
    updatedBefore: int = Field(None, ge=0)
    order: Literal["asc", "desc"] = "desc"
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)
    groupByDocumentId: bool = False
    userId: str = OptId

    @model_validator(mode="after")
    def _check(self):
        if self.documentId and self.documentIds:
            raise ValueError("Provide documentId or documentIds, not both")
        return self


class AnnotationChange(Model):
    status: Status = None
    priority: Priority = None
    assignedTo: User = None
    location: dict[str, Any] = None
    context: dict[str, Any] = None
    visibility: Visibility = None


class IdentityChange(Model):
    from_: User = Field(alias="from")
    to: User


class UpdateAnnotations(Scope):
    annotationIds: id_list() = None
    updatedData: AnnotationChange = None
    updateUsers: list[IdentityChange] = Field(None, min_length=1, max_length=100)
    # Beyond Velt: who makes the change (activities, resolvedByUserId, verifyUserPermissions).
    actionUser: User = None
    verifyUserPermissions: bool = False

    @model_validator(mode="after")
    def _check(self):
        if self.updateUsers is None and (self.annotationIds is None or self.updatedData is None):
            raise ValueError("Provide annotationIds with updatedData, or updateUsers")
        if self.verifyUserPermissions and self.actionUser is None:
            raise ValueError("actionUser is required when verifyUserPermissions is true")
        return self


class DeleteAnnotations(Scope):
    annotationIds: id_list() = None
    actionUser: User = None
    verifyUserPermissions: bool = False

    @model_validator(mode="after")
    def _check(self):
        if self.verifyUserPermissions and self.actionUser is None:
            raise ValueError("actionUser is required when verifyUserPermissions is true")
        return self


class CountAnnotations(Model):
    organizationId: Id
    documentIds: id_list() = None
    userId: Id


class Thread(Scope):
    annotationId: Id


class AddComments(Thread):
    commentData: list[CommentIn] = Field(min_length=1, max_length=MAX_COMMENTS_PER_CALL)
    verifyUserPermissions: bool = False


CommentIds = Field(min_length=1, max_length=1000)


class GetComments(Thread):
    commentIds: list[int] = Field(None, min_length=1, max_length=1000)


class CommentChange(Model):
    commentText: str = Field(None, max_length=MAX_TEXT)
    commentHtml: str = Field(None, max_length=MAX_TEXT)
    taggedUserContacts: list[Tagged] = Field(None, max_length=MAX_TAGGED)

    @model_validator(mode="after")
    def _check(self):
        _distinct_tags(self.taggedUserContacts)
        return self


class UpdateComments(Thread):
    commentIds: list[int] = CommentIds
    updatedData: CommentChange
    actionUser: User = None
    verifyUserPermissions: bool = False
    triggerNotification: bool = True


class DeleteComments(Thread):
    commentIds: list[int] = CommentIds
    actionUser: User = None
    verifyUserPermissions: bool = False


class Reaction(Thread):
    commentId: int = Field(ge=1)
    reaction: str = Field(min_length=1, max_length=MAX_REACTION)
    userId: Id
    verifyUserPermissions: bool = False


class ReadUpdate(Scope):
    userId: Id
    annotationIds: id_list() = None


# Response models (documentation and contract tests; see collab.kit.openapi).


UserOut = ActionUser  # a user as the client sent it


class TargetElementOut(Doc):
    elementId: str | None = None
    targetText: str | None = None
    occurrence: int | None = None


class StatusOut(Doc):
    id: StatusId
    type: Literal["default", "ongoing", "terminal"]


class PriorityOut(Doc):
    id: str


class VisibilityOut(Doc):
    type: Literal["public", "restricted"]
    userIds: list[str] | None = None


class TaggedOut(Doc):
    userId: str
    contact: UserOut | None = None


class ReactionOut(Doc):
    reaction: str
    userIds: list[str]


class Comment(Doc):
    commentId: int
    commentText: str | None = None
    commentHtml: str | None = None
    from_: UserOut = Field(alias="from")
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds.")
    isEdited: bool
    taggedUserContacts: list[TaggedOut]
    reactions: list[ReactionOut]
    attachments: list[dict[str, Any]] = Field(description="As the client sent them (url, name, mimeType, size...).")
    agent: dict[str, Any] | None = None


class Annotation(Doc):
    annotationId: str
    documentId: str
    organizationId: str
    location: dict[str, Any] | None = None
    targetElement: TargetElementOut | None = None
    status: StatusOut
    priority: PriorityOut | None = None
    assignedTo: UserOut | None = None
    from_: UserOut = Field(alias="from")
    comments: list[Comment]
    context: dict[str, Any] | None = None
    visibility: VisibilityOut
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds.")
    resolvedByUserId: str | None = None


class AnnotationsPageOf(Doc):
    status: Literal["success"]
    message: str
    data: list[Annotation] | dict[str, list[Annotation]] = Field(
        description="Annotations, or annotations keyed by documentId with groupByDocumentId.")
    pageToken: str | None = Field(description="Pass back to get the next page; null on the last page.")


class AnnotationsPage(Doc):
    result: AnnotationsPageOf


class Outcome(Doc):
    """One entry of a batch answer keyed by id."""

    success: bool
    id: str
    message: str


class Count(Doc):
    total: int = Field(description="Threads on the document the user may see.")
    unread: int = Field(description="Of those, threads with a comment by someone else after the user's read mark.")
    unreadComments: int = Field(description="Comments by others after the user's read marks.")


class UserComment(Doc):
    """One comment of a user in the export, with where it sits."""

    organizationId: str
    documentId: str
    annotationId: str
    comment: Comment


class UserReaction(Doc):
    """One reaction of a user in the export, with the comment it is on."""

    organizationId: str
    documentId: str
    annotationId: str
    commentId: int
    reaction: str
    userId: str
    createdAt: int
