"""Event amplification (issue #34, item 4): an event carries a bounded snapshot of its thread, never its free-form
blobs, so what a request makes the service write is a small multiple of the request (the review's 5 KB request
wrote 95 MiB of activities)."""

import json

import pytest

from support.helpers import add_organization, enable_activities, new_tenant, post, result

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

BASE = "/v2/commentannotations"
DOC = {"organizationId": "org", "documentId": "doc"}
BLOB = "x" * 16_000  # each free-form value at its cap (16 KiB of JSON)


def _written(db, t, *action_types):
    """Bytes the activity log holds for these action types (the JSON of every column a record carries)."""
    return db.execute(
        "select count(*) as n, coalesce(sum(octet_length(id) + octet_length(action_user::text)"
        " + coalesce(octet_length(changes::text), 0) + coalesce(octet_length(entity_data::text), 0)"
        " + coalesce(octet_length(entity_target_data::text), 0)), 0) as bytes"
        " from activities where api_key_id = %s and action_type = any(%s)", (t.api_key, list(action_types))).fetchone()


def test_events_carry_a_bounded_snapshot_not_the_threads_blobs(client, db):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    enable_activities(client, t)
    # A thread whose every free-form field is at its cap, anchored to 10,000 characters, restricted to 500 users.
    first = {"commentText": "opening", "from": {"userId": "ed", "bio": BLOB}, "agent": {"notes": BLOB}}
    result(
        post(
            client, f"{BASE}/add", {
                **DOC, "commentAnnotations": [{
                    "annotationId": "heavy", "context": {"c": BLOB}, "location": {"id": "loc", "l": BLOB},
                    "targetElement": {"elementId": "e", "targetText": "t" * 10_000}, "assignedTo": {
                        "userId": "al", "bio": BLOB
                    }, "visibility": {"type": "restricted", "userIds": [f"reader-{n:04}"
                                                                        for n in range(500)]}, "commentData": [first]
                }]
            }, t.headers))

    # The review's request: 100 short comments in one call.
    body = {
        **DOC, "annotationId": "heavy",
        "commentData": [{"commentText": f"c{n}", "from": {"userId": "ed"}} for n in range(100)]
    }
    sent = len(json.dumps({"data": body}))
    result(post(client, f"{BASE}/comments/add", body, t.headers))
    written = _written(db, t, "comment.add")
    assert written["n"] == 100
    # Each event: its comment, the thread's ids and small fields, 500 characters of the anchored text.
    assert written["bytes"] <= 2 * sent + 100 * 1024, (written, sent)

    # A reaction, an edit and a delete quote the comment they act on briefly, not its agent or its author's keys.
    thread = {**DOC, "annotationId": "heavy"}
    result(
        post(client, f"{BASE}/comments/reactions/add", {**thread, "commentId": 1, "reaction": "👍", "userId": "al"},
             t.headers))
    result(
        post(client, f"{BASE}/comments/update", {**thread, "commentIds": [1], "updatedData": {"commentText": "e"}},
             t.headers))
    result(post(client, f"{BASE}/comments/delete", {**thread, "commentIds": [1]}, t.headers))
    result(
        post(
            client, f"{BASE}/update", {
                **DOC, "annotationIds": ["heavy"],
                "updatedData": {"status": {"id": "resolved"}, "assignedTo": {"userId": "bo", "bio": "short"}}
            }, t.headers))
    for kind in ("comment.reaction_add", "comment.update", "comment.delete", "comment_annotation.status_change",
                 "comment_annotation.assign"):
        one = _written(db, t, kind)
        assert one["n"] == 1 and one["bytes"] <= 2 * 1024, (kind, one)

    (logged, ) = result(
        post(client, "/v2/activities/get", {"organizationId": "org", "actionTypes": ["comment.reaction_add"]},
             t.headers))
    snapshot = logged["entityData"]["commentAnnotation"]
    assert snapshot["annotationId"] == "heavy" and snapshot["from"] == {"userId": "ed"}
    assert snapshot["visibility"] == {"type": "restricted"} and "context" not in snapshot
    assert logged["entityData"]["commentText"] == "opening" and "agent" not in logged["entityData"]
    assert logged["entityTargetData"]["text"] == "t" * 500
