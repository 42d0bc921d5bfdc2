"""Reactions are capped per comment: kinds, per user and in all (the review's 883 distinct reactions of one user)."""

from collab.comments import replies
from support.helpers import add_organization, error, new_tenant, post, result

BASE = "/v2/commentannotations"
DOC = {"organizationId": "org", "documentId": "doc"}


def _react(client, t, reaction, user="ed"):
    return post(client, f"{BASE}/comments/reactions/add",
                {**DOC, "annotationId": "a1", "commentId": 1, "reaction": reaction, "userId": user}, t.headers)


def test_reactions_are_capped_per_user_kinds_and_comment(client, monkeypatch, db):
    monkeypatch.setattr(replies, "MAX_REACTIONS_PER_USER", 3)
    monkeypatch.setattr(replies, "MAX_REACTION_KINDS", 4)
    monkeypatch.setattr(replies, "MAX_REACTIONS_PER_COMMENT", 6)
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    result(
        post(
            client, f"{BASE}/add", {
                **DOC, "commentAnnotations": [{
                    "annotationId": "a1", "commentData": [{"commentText": "hi", "from": {"userId": "amy"}}]
                }]
            }, t.headers))
    for reaction in ("r1", "r2", "r3"):
        result(_react(client, t, reaction))
    refused = error(_react(client, t, "r4"), "INVALID_ARGUMENT")
    assert "at most 3 reactions" in refused["message"] and refused["details"]["issues"][0]["path"] == ["reaction"]
    again = _react(client, t, "r1")  # one made already: no change, no refusal
    assert again.status_code == 200 and again.json()["result"]["data"]["message"] == "Reaction already exists."
    result(_react(client, t, "r4", user="ann"))  # a fourth kind, by another user
    assert "4 kinds" in error(_react(client, t, "r5", user="ann"), "INVALID_ARGUMENT")["message"]
    result(_react(client, t, "r1", user="ann"))
    result(_react(client, t, "r2", user="bo"))  # the sixth reaction
    assert "6 reactions" in error(_react(client, t, "r3", user="cy"), "INVALID_ARGUMENT")["message"]
    held = db.execute(
        "select count(*) as n, count(distinct reaction) as kinds from comment_reactions where api_key_id = %s",
        (t.api_key, )).fetchone()
    assert held == {"n": 6, "kinds": 4}
