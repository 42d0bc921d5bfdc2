"""Event types (DESIGN.md §3): keys of trigger maps, activity actionTypes and webhook types; and the wire
types several features' events share (so no feature imports another's schemas for them)."""

from typing import Literal, get_args

from pydantic import ConfigDict, Field

from collab.kit.openapi import Doc

CommentEvent = Literal["comment_annotation.add", "comment_annotation.assign", "comment_annotation.status_change",
                       "comment_annotation.priority_change", "comment_annotation.custom_list_change",
                       "comment_annotation.subscribe", "comment_annotation.unsubscribe", "comment_annotation.accept",
                       "comment_annotation.reject", "comment_annotation.approve",
                       "comment_annotation.suggestion_accept", "comment_annotation.suggestion_reject", "comment.add",
                       "comment.update", "comment.delete", "comment.accept", "comment.reject", "comment.reaction_add",
                       "comment.reaction_delete"]
HuddleEvent = Literal["huddle.create", "huddle.join"]
OtherEvent = Literal["crdt.update_data", "notification.add", "document.migrate", "document.approve", "document.reject",
                     "user_data.delete"]

COMMENT_EVENTS: tuple[str, ...] = get_args(CommentEvent)
HUDDLE_EVENTS: tuple[str, ...] = get_args(HuddleEvent)

# Activity actionTypes that record a review decision (judgments/derive.py turns them into judgments): an activity of
# any other type never becomes one, so logging it needs no judgment job unless it overwrites an earlier activity.
APPROVED_EVENTS = frozenset({
    "comment_annotation.approve", "comment_annotation.accept", "comment.accept", "comment_annotation.suggestion_accept"
})
REJECTED_EVENTS = frozenset({"comment_annotation.reject", "comment.reject", "comment_annotation.suggestion_reject"})
JUDGED_EVENTS = (APPROVED_EVENTS
                 | REJECTED_EVENTS
                 | {
                     "comment.add", "comment_annotation.add", "comment_annotation.status_change",
                     "comment.reaction_add", "document.approve", "document.reject"
                 })


class ActionUser(Doc):
    """A user as the client sent it: userId, name and email, plus any further keys kept as given."""

    model_config = ConfigDict(extra="allow")
    userId: str
    name: str | None = Field(None, description="Absent when the client sent none.")
    email: str | None = Field(None, description="Absent when the client sent none.")
