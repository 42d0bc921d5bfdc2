"""Threads and comments as clients see them (Velt's field names), from stored rows."""

from typing import Any

STATUS_TYPES = {"open": "default", "in_progress": "ongoing", "resolved": "terminal"}


def comment(row: dict[str, Any]) -> dict[str, Any]:
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
    return record


def annotation(row: dict[str, Any], comments: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A thread with its comments (rendered already); without them (None) as event snapshots carry it."""
    record: dict[str, Any] = {
        "annotationId": row["id"], "documentId": row["document_id"], "organizationId": row["organization_id"]
    }
    for column, wire in (("location", "location"), ("target_element", "targetElement")):
        if row[column] is not None:
            record[wire] = row[column]
    record["status"] = {"id": row["status"], "type": row["status_type"]}
    if row["priority"] is not None:
        record["priority"] = {"id": row["priority"]}
    if row["assigned_to"] is not None:
        record["assignedTo"] = row["assigned_to"]
    record["from"] = row["from_user"]
    if comments is not None:
        record["comments"] = comments
    if row["context"] is not None:
        record["context"] = row["context"]
    visibility: dict[str, Any] = {"type": row["visibility"]}
    if row["visibility"] == "restricted":
        visibility["userIds"] = list(row["visible_user_ids"] or [])
    record |= {"visibility": visibility, "createdAt": row["created_at"], "lastUpdated": row["updated_at"]}
    if row["resolved_by"] is not None:
        record["resolvedByUserId"] = row["resolved_by"]
    return record


def may_see(row: dict[str, Any], user_id: str) -> bool:
    """Whether a user may see a thread: public, or restricted to them (its creator always may)."""
    return row["visibility"] == "public" or row["from_id"] == user_id or user_id in (row["visible_user_ids"] or [])
