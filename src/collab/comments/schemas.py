"""Request and response models of the comment endpoints (Velt's commentannotations shapes)."""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from collab.activities.schemas import ActionUser
from collab.kit.envelope import Model, dumps
from collab.kit.fields import Id, IdList, distinct
from collab.kit.openapi import Doc

# Size limits (docs/reference.md, "Comments"); comments and bytes per thread are settings
# (COLLAB_COMMENTS_MAX_PER_THREAD, COLLAB_COMMENTS_MAX_THREAD_BYTES).
MAX_TEXT = 20_000  # characters of commentText, and of commentHtml
# JSON bytes (compact, UTF-8) of each free-form value: agent, context, location, and the extra keys of a user or of
# an attachment; and of one comment as stored (its text, users, tags, attachments and agent).
MAX_FIELD_BYTES = 16 * 1024
MAX_COMMENT_BYTES = 64 * 1024
MAX_ATTACHMENTS = 20  # per comment
MAX_TAGGED = 50  # tagged users per comment
MAX_THREADS_PER_CALL = 100  # commentAnnotations in one add
MAX_COMMENTS_PER_CALL = 100  # commentData in one add
MAX_REACTION = 64  # characters of a reaction (an emoji or a short name)
# The built-in statuses and their types; any other id is a custom status (Velt's status objects) and names its type.
STATUS_TYPES = {"open": "default", "in_progress": "ongoing", "resolved": "terminal"}
StatusType = Literal["default", "ongoing", "terminal"]
StatusId = Annotated[str, Field(min_length=1, max_length=100)]
OptId = Field(None, min_length=1, max_length=200)
MAX_EPOCH_MS = 32_503_680_000_000  # year 3000: an import's createdAt and lastUpdated are epoch milliseconds


def json_size(value: Any) -> int:
    """Bytes of a value as compact UTF-8 JSON, as the service writes it."""
    return len(dumps(value))


def too_big(what: str, cap: int) -> PydanticCustomError:
    """The validation error of a value past a byte cap (issue code too_big, on the field's path)."""
    return PydanticCustomError("too_long", "{what} over {cap} bytes of JSON", {"what": what, "cap": cap})


def _free_form(value: dict[str, Any]) -> dict[str, Any]:
    if json_size(value) > MAX_FIELD_BYTES:
        raise too_big("The value is", MAX_FIELD_BYTES)
    return value


FreeForm = Annotated[dict[str, Any], AfterValidator(_free_form)]  # an object of the client's own keys, capped


def _location(value: dict[str, Any]) -> dict[str, Any]:
    # Its id is what locationIds filters on and notifications carry: an id like any other (200 characters).
    if isinstance(value.get("id"), str) and len(value["id"]) > 200:
        raise PydanticCustomError("string_too_long", "location.id is over 200 characters")
    return value


Location = Annotated[FreeForm, AfterValidator(_location)]


def _extra_capped(model: Model) -> None:
    """Refuse extra keys (kept as sent) whose JSON together passes MAX_FIELD_BYTES."""
    if model.model_extra and json_size(model.model_extra) > MAX_FIELD_BYTES:
        raise too_big("The extra keys are", MAX_FIELD_BYTES)


class User(Model):
    """A user as Velt sends one; further keys are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    userId: str = Field(min_length=1, max_length=200)
    name: str = Field(None, max_length=500)
    email: str = Field(None, max_length=320)

    @model_validator(mode="after")
    def _capped(self):
        _extra_capped(self)
        return self


class TargetElement(Model):
    elementId: str = Field(None, max_length=1000)
    targetText: str = Field(None, max_length=10_000)
    occurrence: int = Field(None, ge=0, le=1_000_000)


Color = Field(None, max_length=100)


class Status(Model):
    """A built-in status by id, or Velt's custom status object (its type says whether it resolves the thread)."""

    id: StatusId
    name: str = Field(None, max_length=200)
    type: StatusType = None
    color: str = Color
    lightColor: str = Color
    svg: str = Field(None, max_length=MAX_FIELD_BYTES)
    iconUrl: str = Field(None, max_length=4000)

    @model_validator(mode="after")
    def _typed(self):
        built_in = STATUS_TYPES.get(self.id)
        if built_in is None and self.type is None:
            raise ValueError(f"A custom status ({self.id!r}) needs a type: default, ongoing or terminal")
        if built_in is not None and self.type not in (None, built_in):
            raise ValueError(f"The built-in status {self.id!r} is of type {built_in}")
        return self

    def kind(self) -> str:
        """The status's type: its own, else the built-in's."""
        return self.type or STATUS_TYPES[self.id]

    def meta(self) -> dict[str, Any] | None:
        """The display fields sent (name, colors, icon), stored beside the id."""
        return self.model_dump(exclude={"id", "type"}, exclude_none=True) or None


class Priority(Model):
    """A priority by id, with Velt's display fields when sent."""

    id: str = Field(min_length=1, max_length=100)
    name: str = Field(None, max_length=200)
    color: str = Color
    lightColor: str = Color

    def meta(self) -> dict[str, Any] | None:
        """The display fields sent, stored beside the id."""
        return self.model_dump(exclude={"id"}, exclude_none=True) or None


VisibilityType = Literal["public", "organizationPrivate", "restricted"]


class Visibility(Model):
    """Velt's visibility: public, organizationPrivate (the users of `organizationId`, which must be the thread's own
    organization: collab's reads are scoped by organization already) or restricted (to `userIds`)."""

    type: VisibilityType
    organizationId: str = OptId
    userIds: list[Id] = Field(None, max_length=1000)

    @model_validator(mode="after")
    def _check(self):
        if self.type == "organizationPrivate" and self.organizationId is None:
            raise PydanticCustomError("missing", "organizationPrivate visibility needs its organizationId")
        return self


AnnotationType = Literal["comment", "suggestion"]
SUGGESTION_STATUSES = ("pending", "accepted", "rejected")


def _suggestion(value: dict[str, Any]) -> dict[str, Any]:
    status = value.get("status")
    if status is not None and status not in SUGGESTION_STATUSES:
        raise PydanticCustomError("literal_error", "suggestion.status is one of pending, accepted, rejected")
    return value


# Velt's proposed-change payload of a suggestion thread: open (kept as sent), capped like every free-form value.
Suggestion = Annotated[FreeForm, AfterValidator(_suggestion)]

# Velt's agent filters of commentannotations/get; at most one per request.
AGENT_FILTERS = ("agentId", "executionId", "agentType", "agentSource", "agentSuggestions", "agentComments")


class Tagged(Model):
    userId: Id
    contact: User = None
    text: str = Field(None, max_length=1000)  # Velt: the text that tagged the user ("@Ana"), kept


class Attachment(Model):
    """An attachment as Velt describes one (url, name, mimeType, size...); further keys are kept as given."""

    model_config = ConfigDict(strict=True, extra="allow")
    url: str = Field(None, max_length=4000)
    name: str = Field(None, max_length=1000)
    mimeType: str = Field(None, max_length=200)
    size: int = Field(None, ge=0)

    @model_validator(mode="after")
    def _capped(self):
        _extra_capped(self)
        return self


def _distinct_tags(tags: list[Tagged] | None) -> None:
    if tags:
        distinct((t.userId for t in tags), "tagged userId")


Epoch = Field(None, ge=0, le=MAX_EPOCH_MS)


class CommentIn(Model):
    # An import's own id and times (Velt's commentData[].commentId, createdAt and lastUpdated).
    commentId: int = Field(None, ge=1, le=2**53 - 1)
    createdAt: int = Epoch
    lastUpdated: int = Epoch
    commentText: str = Field(None, max_length=MAX_TEXT)
    commentHtml: str = Field(None, max_length=MAX_TEXT)
    from_: User = Field(alias="from")
    taggedUserContacts: list[Tagged] = Field(None, max_length=MAX_TAGGED)
    attachments: list[Attachment] = Field(None, max_length=MAX_ATTACHMENTS)
    triggerNotification: bool = True
    triggerActivities: bool = True
    agent: FreeForm = None
    context: FreeForm = None

    @model_validator(mode="after")
    def _check(self):
        _distinct_tags(self.taggedUserContacts)
        _ordered(self)
        if json_size(self.stored()) > MAX_COMMENT_BYTES:
            raise too_big("The comment is", MAX_COMMENT_BYTES)
        return self

    def stored(self) -> dict[str, Any]:
        """The comment's own fields as they are stored (what its byte cap measures)."""
        return self.model_dump(
            by_alias=True, exclude_none=True,
            exclude={"triggerNotification", "triggerActivities", "commentId", "createdAt", "lastUpdated"})


def _ordered(item: Any) -> None:
    if item.createdAt is not None and item.lastUpdated is not None and item.lastUpdated < item.createdAt:
        raise ValueError("lastUpdated is before createdAt")


def _distinct_comment_ids(comments: list[CommentIn]) -> None:
    distinct((c.commentId for c in comments if c.commentId is not None), "commentId")


class AnnotationIn(Model):
    annotationId: str = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_\-:.]+$")
    location: Location = None
    targetElement: TargetElement = None
    status: Status = None
    priority: Priority = None
    assignedTo: User = None
    context: FreeForm = None
    visibility: Visibility = None
    # Velt: the thread's kind (comment by default; agents' findings are suggestions) and a suggestion's payload,
    # stored as sent with its status stamped pending (a status sent on add is dropped; ignored on a comment).
    type: AnnotationType = "comment"
    suggestion: Suggestion = None
    createdAt: int = Epoch
    lastUpdated: int = Epoch
    commentData: list[CommentIn] = Field(min_length=1, max_length=MAX_COMMENTS_PER_CALL)

    @model_validator(mode="after")
    def _check(self):
        _ordered(self)
        _distinct_comment_ids(self.commentData)
        return self

    def size(self) -> int:
        """JSON bytes of the thread as it would be stored, its comments included (the thread cap's measure)."""
        own = self.model_dump(by_alias=True, exclude_none=True,
                              exclude={"commentData", "createdAt", "lastUpdated", "type"})
        agent = self.commentData[0].agent
        if agent is not None:  # the thread carries its first comment's agent block too
            own["agent"] = agent
        return json_size(own) + sum(json_size(c.stored()) for c in self.commentData)


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
    documentIds: IdList = None
    annotationIds: IdList = None
    locationIds: IdList = None
    folderId: str = OptId
    userIds: IdList = None
    mentionedUserIds: IdList = None
    assignedToUserIds: IdList = None
    statusIds: list[StatusId] = Field(None, min_length=1, max_length=100)
    statusId: StatusId = None  # Velt: one status, the same as statusIds with one id
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
    # Velt's agent filters (at most one): threads an agent wrote, by agent, execution, type or source; agents'
    # still-pending suggestions; or every agent thread.
    agentId: str = OptId
    executionId: str = OptId
    agentType: Literal["built-in", "custom", "external"] = None
    agentSource: Literal["velt", "external"] = None
    agentSuggestions: bool = None
    agentComments: bool = None
    # velt-py sends these; collab answers a thread's metadata always and has no page info: no effect.
    includeMetadata: bool = None
    includePageInfo: bool = None

    @model_validator(mode="after")
    def _check(self):
        if self.documentId and self.documentIds:
            raise ValueError("Provide documentId or documentIds, not both")
        agent = [name for name in AGENT_FILTERS if getattr(self, name) not in (None, False)]
        if len(agent) > 1:
            raise ValueError(f"Provide one agent filter at most (of {', '.join(AGENT_FILTERS)}); "
                             f"got {', '.join(agent)}")
        if self.statusId is not None and self.statusIds is not None:
            raise ValueError("Provide statusId or statusIds, not both")
        return self

    def status_ids(self) -> list[str] | None:
        """The statuses filtered on (statusId is one of them)."""
        return [self.statusId] if self.statusId is not None else self.statusIds


class AnnotationChange(Model):
    status: Status = None
    priority: Priority = None
    assignedTo: User = None
    location: Location = None
    context: FreeForm = None
    visibility: Visibility = None
    targetElement: TargetElement = None
    # Velt: who resolved it; null clears it (a status that is not terminal clears it anyway).
    resolvedByUserId: str | None = Field(None, min_length=1, max_length=200)
    # The thread's kind, and a suggestion's payload: it replaces the stored one whole, its status honoured
    # (pending, accepted or rejected; kept as it was when none is sent).
    type: AnnotationType = None
    suggestion: Suggestion = None


class IdentityChange(Model):
    """One user's identity rewritten: Velt's {oldUser, newUser}, or {from, to}."""

    from_: User = Field(None, alias="from")
    to: User = None
    oldUser: User = None
    newUser: User = None

    @model_validator(mode="after")
    def _pair(self):
        if (self.from_ is None) == (self.oldUser is None) or (self.to is None) == (self.newUser is None):
            raise ValueError("Provide oldUser and newUser (or from and to)")
        return self

    def old(self) -> User:
        """The identity being replaced."""
        return self.oldUser or self.from_

    def new(self) -> User:
        """The identity it becomes."""
        return self.newUser or self.to


class Threads(Scope):
    """A document's threads, narrowed by ids, locations and creators (all the document's when none is given)."""

    annotationIds: IdList = None
    locationIds: IdList = None
    userIds: IdList = None


class UpdateAnnotations(Threads):
    updatedData: AnnotationChange = None
    updateUsers: list[IdentityChange] = Field(None, min_length=1, max_length=100)
    # Beyond Velt: who makes the change (activities, resolvedByUserId, verifyUserPermissions).
    actionUser: User = None
    verifyUserPermissions: bool = False

    @model_validator(mode="after")
    def _check(self):
        if self.updateUsers is None and self.updatedData is None:
            raise ValueError("Provide updatedData or updateUsers")
        if self.verifyUserPermissions and self.actionUser is None:
            raise ValueError("actionUser is required when verifyUserPermissions is true")
        return self


class DeleteAnnotations(Threads):
    organizationId: str = OptId  # Velt: optional; the document's organization when it is in only one
    agentId: str = OptId
    agentUrls: list[Annotated[str, Field(min_length=1, max_length=4000)]] = Field(None, min_length=1, max_length=100)
    agentSuggestions: bool = False
    actionUser: User = None
    verifyUserPermissions: bool = False

    @model_validator(mode="after")
    def _check(self):
        if self.verifyUserPermissions and self.actionUser is None:
            raise ValueError("actionUser is required when verifyUserPermissions is true")
        return self


class CountAnnotations(Model):
    organizationId: Id
    documentIds: IdList = None
    userId: Id
    statusIds: list[StatusId] = Field(None, min_length=1, max_length=100)


class Thread(Scope):
    annotationId: Id


class AddComments(Thread):
    commentData: list[CommentIn] = Field(min_length=1, max_length=MAX_COMMENTS_PER_CALL)
    verifyUserPermissions: bool = False
    createOrganization: bool = False
    createDocument: bool = False

    @model_validator(mode="after")
    def _check(self):
        _distinct_comment_ids(self.commentData)
        return self


CommentIds = Field(min_length=1, max_length=1000)


class GetComments(Thread):
    commentIds: list[int] = Field(None, min_length=1, max_length=1000)
    userIds: IdList = None  # Velt: only these authors' comments
    # Beyond Velt: a thread's comments come in pages of at most pageSize comments and COLLAB_MAX_RESPONSE_BYTES.
    pageSize: int = Field(1000, ge=1, le=1000)
    pageToken: str = Field(None, max_length=1000)


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
    commentIds: list[int] = Field(None, min_length=1, max_length=1000)  # none: every comment of the thread
    actionUser: User = None
    verifyUserPermissions: bool = False


class Reaction(Thread):
    commentId: int = Field(ge=1)
    reaction: str = Field(min_length=1, max_length=MAX_REACTION)
    userId: Id
    verifyUserPermissions: bool = False


class ReadUpdate(Scope):
    userId: Id
    annotationIds: IdList = None


# Response models (documentation and contract tests; see collab.kit.openapi).

UserOut = ActionUser  # a user as the client sent it


class TargetElementOut(Doc):
    elementId: str | None = None
    targetText: str | None = None
    occurrence: int | None = None


class StatusOut(Doc):
    id: str
    type: StatusType
    name: str | None = None
    color: str | None = None
    lightColor: str | None = None
    svg: str | None = None
    iconUrl: str | None = None


class PriorityOut(Doc):
    id: str
    name: str | None = None
    color: str | None = None
    lightColor: str | None = None


class VisibilityOut(Doc):
    type: VisibilityType
    organizationId: str | None = Field(None, description="With organizationPrivate: the organization.")
    userIds: list[str] | None = None


class TaggedOut(Doc):
    userId: str
    contact: UserOut | None = None
    text: str | None = None


class ReactionOut(Doc):
    reaction: str
    userIds: list[str]


class UserBrief(Doc):
    """A user as events carry it: the client's extra keys left out."""

    userId: str
    name: str | None = None
    email: str | None = None

    @staticmethod
    def wire(user: dict[str, Any]) -> dict[str, Any]:
        """The user's id, name and email, those it has."""
        return {k: user[k] for k in ("userId", "name", "email") if k in user}


class CommentBrief(Doc):
    """A stored comment as an event that did not carry it quotes it: author, times and the start of its text."""

    commentId: int
    commentText: str | None = Field(None, description="The first 500 characters; absent when the comment has none.")
    from_: UserBrief = Field(alias="from")
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds.")
    isEdited: bool

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A comment_briefs row as events quote it."""
        record: dict[str, Any] = {"commentId": row["id"]}
        if row["text_preview"] is not None:
            record["commentText"] = row["text_preview"]
        return record | {
            "from": row["from_brief"], "createdAt": row["created_at"], "lastUpdated": row["updated_at"],
            "isEdited": row["is_edited"]
        }


class AnnotationSnapshot(Doc):
    """The thread as every event carries it: ids and small fields, none of its free-form blobs (location, context,
    target element, users' extra keys, the restricted list)."""

    annotationId: str
    documentId: str
    organizationId: str
    status: StatusOut
    priority: PriorityOut | None = None
    assignedTo: UserBrief | None = None
    from_: UserBrief = Field(alias="from")
    visibility: VisibilityOut
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds.")
    resolvedByUserId: str | None = None

    @staticmethod
    def wire(thread: dict[str, Any]) -> dict[str, Any]:
        """A thread row as events carry it."""
        record: dict[str, Any] = {
            "annotationId": thread["id"], "documentId": thread["document_id"],
            "organizationId": thread["organization_id"],
            "status": {"id": thread["status"], "type": thread["status_type"]}
        }
        if thread["priority"] is not None:
            record["priority"] = {"id": thread["priority"]}
        if thread["assigned_to"] is not None:
            record["assignedTo"] = UserBrief.wire(thread["assigned_to"])
        record |= {
            "from": UserBrief.wire(thread["from_user"]), "visibility": {"type": thread["visibility"]},
            "createdAt": thread["created_at"], "lastUpdated": thread["updated_at"]
        }
        if thread["resolved_by"] is not None:
            record["resolvedByUserId"] = thread["resolved_by"]
        return record


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
    context: dict[str, Any] | None = None

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A comment with its reactions (unset text fields left out)."""
        record: dict[str, Any] = {"commentId": row["id"]}
        if row["comment_text"] is not None:
            record["commentText"] = row["comment_text"]
        if row["comment_html"] is not None:
            record["commentHtml"] = row["comment_html"]
        record |= {
            "from": row["from_user"], "createdAt": row["created_at"], "lastUpdated": row["updated_at"],
            "isEdited": row["is_edited"], "taggedUserContacts": row["tagged"], "reactions": row["reactions"],
            "attachments": row["attachments"]
        }
        if row["agent"] is not None:
            record["agent"] = row["agent"]
        if row["context"] is not None:
            record["context"] = row["context"]
        return record


class AnnotationMetadata(Doc):
    organizationId: str
    documentId: str


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
    visibilityConfig: VisibilityOut = Field(description="Velt's name of `visibility` (the same value).")
    type: AnnotationType = Field(description="comment, or suggestion (an agent's finding, or one sent as such).")
    sourceType: Literal["rest-api", "agent"] = Field(
        description="How the thread was made: agent when its first comment carries an agent block.")
    agent: dict[str, Any] | None = Field(
        None, description=(
            "Agent threads: the first comment's agent block (agentId, agentName, agentType, agentSource, executionId, "
            "url, reason)."))
    suggestion: dict[str, Any] | None = Field(
        None, description="Suggestions only: the proposed-change payload with its status (pending, accepted or "
        "rejected).")
    metadata: AnnotationMetadata = Field(description="Velt's place of the thread's organizationId and documentId.")
    createdAt: int = Field(description="Epoch milliseconds.")
    lastUpdated: int = Field(description="Epoch milliseconds.")
    resolvedByUserId: str | None = None
    commentsPageToken: str | None = Field(
        None, description=(
            "Present only when the thread's comments did not fit the page (COLLAB_MAX_RESPONSE_BYTES): pass it to "
            "comments/get for this thread to read the rest."))

    @staticmethod
    def wire(row: dict[str, Any], comments: list[dict[str, Any]]) -> dict[str, Any]:
        """A thread with its comments (each a `Comment.wire`)."""
        record: dict[str, Any] = {
            "annotationId": row["id"], "documentId": row["document_id"], "organizationId": row["organization_id"]
        }
        for column, wire in (("location", "location"), ("target_element", "targetElement")):
            if row[column] is not None:
                record[wire] = row[column]
        record["status"] = {"id": row["status"], "type": row["status_type"], **(row["status_meta"] or {})}
        if row["priority"] is not None:
            record["priority"] = {"id": row["priority"], **(row["priority_meta"] or {})}
        if row["assigned_to"] is not None:
            record["assignedTo"] = row["assigned_to"]
        record |= {"from": row["from_user"], "comments": comments}
        if row["context"] is not None:
            record["context"] = row["context"]
        visibility: dict[str, Any] = {"type": row["visibility"]}
        if row["visibility"] == "organizationPrivate":
            visibility["organizationId"] = row["organization_id"]
        if row["visibility"] == "restricted":
            visibility["userIds"] = list(row["visible_user_ids"] or [])
        record |= {
            "visibility": visibility, "visibilityConfig": visibility, "type": row["kind"],
            "sourceType": row["source_type"]
        }
        if row["agent"] is not None:
            record["agent"] = row["agent"]
        if row["kind"] == "suggestion" and row["suggestion"] is not None:
            record["suggestion"] = row["suggestion"]
        record |= {
            "metadata": {"organizationId": row["organization_id"], "documentId": row["document_id"]},
            "createdAt": row["created_at"], "lastUpdated": row["updated_at"]
        }
        if row["resolved_by"] is not None:
            record["resolvedByUserId"] = row["resolved_by"]
        return record


class AnnotationsPageOf(Doc):
    status: Literal["success"]
    message: str
    data: list[Annotation] | dict[str, list[Annotation]] = Field(
        description="Annotations, or annotations keyed by documentId with groupByDocumentId.")
    pageToken: str | None = Field(description="Pass back to get the next page; null on the last page.")
    nextPageToken: str | None = Field(description="Velt's name of `pageToken` (the same value).")


class AnnotationsPage(Doc):
    result: AnnotationsPageOf


class Outcome(Doc):
    """One entry of a batch answer keyed by id."""

    success: bool
    id: str
    message: str


class Added(Outcome):
    """One thread of an add: the outcome, with Velt's annotationId and commentIds beside it."""

    annotationId: str
    commentIds: list[int] = Field(description="The comments created in the thread (none when it existed).")
    findingId: str | None = Field(None, description="Agent threads: commentData[0].agent.reason.findingId, as sent.")


class Count(Doc):
    total: int = Field(description="Threads on the document the user may see.")
    unread: int = Field(description="Of those, threads with a comment by someone else after the user's read mark.")
    unreadComments: int = Field(description="Comments by others after the user's read marks.")


def where(row: dict[str, Any]) -> dict[str, Any]:
    """The thread an exported record belongs to, as clients name it."""
    return {
        "organizationId": row["organization_id"], "documentId": row["document_id"], "annotationId": row["annotation_id"]
    }


class UserComment(Doc):
    """One comment of a user in the export, with where it sits."""

    organizationId: str
    documentId: str
    annotationId: str
    comment: Comment

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A comment row of the export, with its thread's place."""
        return where(row) | {"comment": Comment.wire(row)}


class UserReaction(Doc):
    """One reaction of a user in the export, with the comment it is on."""

    organizationId: str
    documentId: str
    annotationId: str
    commentId: int
    reaction: str
    userId: str
    createdAt: int

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A reaction row of the export, with its comment's place."""
        return where(row) | {
            "commentId": row["comment_id"], "reaction": row["reaction"], "userId": row["user_id"],
            "createdAt": row["created_at"]
        }
