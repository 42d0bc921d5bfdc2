"""Restricted threads with verifyUserPermissions: who cannot see a thread cannot write to it, react on it, mark it
read, change its visibility or delete it (delete-all included); it answers as a thread that does not exist."""

from support.helpers import add_organization, error, new_tenant, post, result

BASE = "/v2/commentannotations"
DOC = {"organizationId": "org", "documentId": "doc"}


def _setup(client):
    """The review's scene: amy's thread restricted to ben; mallory edits the document, vera views it."""
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    result(
        post(
            client, "/v2/users/add", {
                "organizationId": "org",
                "users": [{"userId": u, "accessRole": "editor"}
                          for u in ("amy", "ben", "mallory")] + [{"userId": "vera", "accessRole": "viewer"}]
            }, t.headers))
    threads = [{
        "annotationId": "private-5", "visibility": {"type": "restricted", "userIds": ["ben"]},
        "commentData": [{"commentText": "salary of ben: secret", "from": {"userId": "amy"}}]
    }, {"annotationId": "open-1", "commentData": [{"commentText": "public", "from": {"userId": "amy"}}]}]
    result(post(client, f"{BASE}/add", {**DOC, "commentAnnotations": threads}, t.headers))
    return t


def _thread(client, t, user=None):
    body = {"organizationId": "org", "annotationIds": ["private-5"], **({"userId": user} if user else {})}
    return result(post(client, f"{BASE}/get", body, t.headers))


def test_who_cannot_see_a_restricted_thread_cannot_write_to_it(client, db):
    t = _setup(client)
    verify = {**DOC, "annotationId": "private-5", "verifyUserPermissions": True}
    refused = post(client, f"{BASE}/comments/add",
                   {**verify, "commentData": [{"commentText": "me too", "from": {"userId": "mallory"}}]}, t.headers)
    assert error(refused, "NOT_FOUND")["message"] == "Annotation does not exist."
    refused = post(client, f"{BASE}/comments/reactions/add",
                   {**verify, "commentId": 1, "reaction": "👍", "userId": "vera"}, t.headers)
    error(refused, "NOT_FOUND")
    refused = post(
        client, f"{BASE}/comments/update",
        {**verify, "commentIds": [1], "actionUser": {"userId": "mallory"}, "updatedData": {"commentText": "rewritten"}},
        t.headers)
    error(refused, "NOT_FOUND")
    refused = post(client, f"{BASE}/comments/delete",
                   {**verify, "commentIds": [1], "actionUser": {"userId": "mallory"}}, t.headers)
    error(refused, "NOT_FOUND")
    # Visibility: mallory cannot make it public (so she could read it).
    made_public = result(
        post(
            client, f"{BASE}/update", {
                **DOC, "annotationIds": ["private-5"], "verifyUserPermissions": True,
                "actionUser": {"userId": "mallory"}, "updatedData": {"visibility": {"type": "public"}}
            }, t.headers))
    assert made_public["private-5"]["success"] is False
    assert _thread(client, t, "mallory") == []
    # Nothing changed: one comment, unedited, no reaction, still restricted.
    (kept, ) = _thread(client, t)
    assert kept["visibility"] == {"type": "restricted", "userIds": ["ben"]}
    assert [(c["commentText"], c["reactions"]) for c in kept["comments"]] == [("salary of ben: secret", [])]
    # Delete-all removes only what the actor can see.
    gone = result(
        post(client, f"{BASE}/delete", {**DOC, "verifyUserPermissions": True, "actionUser": {"userId": "mallory"}},
             t.headers))
    assert set(gone) == {"open-1"}
    assert [a["annotationId"] for a in _thread(client, t)] == ["private-5"]
    # A read mark lands only on threads the user may see.
    result(post(client, f"{BASE}/read/update", {**DOC, "userId": "vera"}, t.headers))
    assert (db.execute("select count(*) as n from comment_reads where api_key_id = %s and user_id = 'vera'",
                       (t.api_key, )).fetchone()["n"] == 0)


def test_who_may_see_a_restricted_thread_still_writes_to_it(client):
    t = _setup(client)
    verify = {**DOC, "annotationId": "private-5", "verifyUserPermissions": True}
    added = result(
        post(client, f"{BASE}/comments/add",
             {**verify, "commentData": [{"commentText": "thanks", "from": {"userId": "ben"}}]}, t.headers))
    assert list(added.values())[0]["success"] is True
    public = result(
        post(
            client, f"{BASE}/update", {
                **DOC, "annotationIds": ["private-5"], "verifyUserPermissions": True, "actionUser": {"userId": "amy"},
                "updatedData": {"visibility": {"type": "public"}}
            }, t.headers))
    assert public["private-5"]["success"] is True
    assert [c["commentText"]
            for c in _thread(client, t, "mallory")[0]["comments"]] == ["salary of ben: secret", "thanks"]
