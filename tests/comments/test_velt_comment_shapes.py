"""Velt's comment bodies accepted as Velt documents them (issue #37 item 2), driven by velt-py where it has the call:
custom statuses and priorities, updateUsers as {oldUser, newUser}, filters on update and delete, a delete without
organizationId or commentIds, and an import that keeps its comments' ids and times."""

from velt_py.models.comment_annotation_api import (
    AddCommentAnnotationsRequest,
    AddCommentsRequest,
    DeleteCommentAnnotationsRequest,
    DeleteCommentsRequest,
    GetCommentAnnotationsCountRequest,
    GetCommentAnnotationsRequest,
    GetCommentsRequest,
    UpdateCommentAnnotationsRequest,
)

from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

GET = "/v2/commentannotations/get"
REVIEW = {
    "id": "needs_review", "name": "Needs review", "type": "ongoing", "color": "#b45309", "lightColor": "#fef3c7",
    "iconUrl": "https://cdn.example.com/review.svg"
}
APPROVED = {"id": "approved", "name": "Approved", "type": "terminal", "color": "#15803d", "lightColor": "#dcfce7"}
URGENT = {"id": "P1", "name": "Urgent", "color": "#dc2626", "lightColor": "#fee2e2"}


def _thread(annotation_id: str, user: str = "ana", location: str | None = None, **more) -> dict:
    thread = {"annotationId": annotation_id, "commentData": [{"commentText": "hi", "from": {"userId": user}}], **more}
    if location:
        thread["location"] = {"id": location}
    return thread


def _threads(client, t, org: str = "o1", doc: str = "d1", **more) -> dict[str, dict]:
    page = result(post(client, GET, {"organizationId": org, "documentId": doc, **more}, t.headers))
    return {a["annotationId"]: a for a in page}


def _api(sdk, t):
    return sdk(t).api.commentAnnotations


def test_custom_statuses_and_priorities_are_stored_returned_and_filtered(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    added = api.addCommentAnnotations(
        AddCommentAnnotationsRequest(
            organizationId="o1", documentId="d1", commentAnnotations=[
                _thread("a1", status=REVIEW, priority=URGENT),
                _thread("a2"),
            ]))
    assert added["result"]["data"]["a1"]["success"] is True
    threads = _threads(client, t)
    assert threads["a1"]["status"] == REVIEW and threads["a1"]["priority"] == URGENT
    assert threads["a2"]["status"] == {"id": "open", "type": "default"}
    got = api.getCommentAnnotations(
        GetCommentAnnotationsRequest(organizationId="o1", documentId="d1", statusIds=["needs_review"]))
    assert [a["annotationId"] for a in got["result"]["data"]] == ["a1"]
    assert [
        a["annotationId"] for a in result(post(client, GET, {"organizationId": "o1", "statusId": "open"}, t.headers))
    ] == ["a2"]
    counted = api.getCommentAnnotationsCount(
        GetCommentAnnotationsCountRequest(organizationId="o1", userId="bo", documentIds=["d1"],
                                          statusIds=["needs_review"]))
    assert counted["result"]["data"]["d1"]["total"] == 1
    # A custom terminal status resolves the thread: the resolver named, then cleared by a status that is not terminal.
    api.updateCommentAnnotations(
        UpdateCommentAnnotationsRequest(organizationId="o1", documentId="d1", annotationIds=["a1"],
                                        updatedData={"status": APPROVED, "resolvedByUserId": "bo"}))
    resolved = _threads(client, t, resolvedBy="bo")
    assert list(resolved) == ["a1"] and resolved["a1"]["status"] == APPROVED
    assert resolved["a1"]["priority"] == URGENT  # a change of status leaves the priority as it was
    api.updateCommentAnnotations(
        UpdateCommentAnnotationsRequest(organizationId="o1", documentId="d1", annotationIds=["a1"],
                                        updatedData={"status": {"id": "open"}, "priority": {"id": "P3"}}))
    reopened = _threads(client, t)["a1"]
    assert reopened["status"] == {"id": "open", "type": "default"} and reopened["priority"] == {"id": "P3"}
    assert "resolvedByUserId" not in reopened


def test_a_status_without_its_type_is_refused_with_where(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    add = "/v2/commentannotations/add"
    for status, words in (({"id": "needs_review", "name": "Needs review"}, "needs a type"),
                          ({"id": "open", "type": "terminal"}, "is of type default"), ({"id": ""}, "at least 1"),
                          ({"id": "x", "type": "done"}, "'default', 'ongoing' or 'terminal'"), ("open", "object")):
        err = error(
            post(client, add,
                 {"organizationId": "o1", "documentId": "d1", "commentAnnotations": [_thread("a1", status=status)]},
                 t.headers), "INVALID_ARGUMENT")
        assert words in err["message"], err
        assert issue_paths(err)[0][:3] == ["commentAnnotations", "0", "status"]
    assert _threads(client, t) == {}  # nothing half-written


def test_update_users_takes_velts_old_and_new_user(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    api.addCommentAnnotations(
        AddCommentAnnotationsRequest(organizationId="o1", documentId="d1", commentAnnotations=[_thread("a1")]))
    renamed = api.updateCommentAnnotations(
        UpdateCommentAnnotationsRequest(
            organizationId="o1", documentId="d1",
            updateUsers=[{"oldUser": {"userId": "ana"}, "newUser": {"userId": "ana2", "name": "Ana Two"}}]))
    assert renamed["result"]["data"]["ana"]["success"] is True
    thread = _threads(client, t)["a1"]
    assert thread["from"] == {"userId": "ana2", "name": "Ana Two"}
    assert thread["comments"][0]["from"] == {"userId": "ana2", "name": "Ana Two"}
    update = "/v2/commentannotations/update"
    for pair in ({"oldUser": {"userId": "ana2"}},
                 {"oldUser": {"userId": "a"}, "to": {"userId": "b"}, "from": {"userId": "c"}}, {}):
        err = error(
            post(client, update, {"organizationId": "o1", "documentId": "d1", "updateUsers": [pair]}, t.headers),
            "INVALID_ARGUMENT")
        assert "oldUser and newUser" in err["message"]


def test_update_and_delete_narrow_by_location_and_creator(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    api.addCommentAnnotations(
        AddCommentAnnotationsRequest(
            organizationId="o1", documentId="d1", commentAnnotations=[
                _thread("a1", "ana", "intro"),
                _thread("a2", "bo", "intro"),
                _thread("a3", "ana", "outro"),
            ]))
    updated = api.updateCommentAnnotations(
        UpdateCommentAnnotationsRequest(organizationId="o1", documentId="d1", locationIds=["intro"], userIds=["ana"],
                                        updatedData={"status": REVIEW}))
    assert list(updated["result"]["data"]) == ["a1"]
    assert {i: a["status"]["id"]
            for i, a in _threads(client, t).items()} == {"a1": "needs_review", "a2": "open", "a3": "open"}
    # A thread named but outside the filters is not found, and stays as it was.
    missed = api.updateCommentAnnotations(
        UpdateCommentAnnotationsRequest(organizationId="o1", documentId="d1", annotationIds=["a3"],
                                        locationIds=["intro"], updatedData={"status": REVIEW}))
    assert missed["result"]["data"]["a3"]["success"] is False
    assert _threads(client, t)["a3"]["status"]["id"] == "open"
    # Velt's delete names no organization (the document's is used) and narrows by creator.
    deleted = api.deleteCommentAnnotations(DeleteCommentAnnotationsRequest(documentId="d1", userIds=["bo"]))
    assert {i: o["success"] for i, o in deleted["result"]["data"].items()} == {"a2": True}
    deleted = api.deleteCommentAnnotations(DeleteCommentAnnotationsRequest(documentId="d1", locationIds=["outro"]))
    assert list(deleted["result"]["data"]) == ["a3"]
    assert list(_threads(client, t)) == ["a1"]


def test_delete_without_organization_needs_one_organization_holding_the_document(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    add_organization(client, t, "o2", "d1")
    delete = "/v2/commentannotations/delete"
    err = error(post(client, delete, {"documentId": "d1"}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["organizationId"]] and "several organizations" in err["message"]
    assert error(post(client, delete, {"documentId": "nope"}, t.headers), "NOT_FOUND")
    # Another tenant's document is not found for this one (it never tells the other's exists).
    other = new_tenant(client)
    assert error(post(client, delete, {"documentId": "d1"}, other.headers), "NOT_FOUND")
    # agentSuggestions narrows the delete (issue #51): with no agent suggestion on the document, nothing goes.
    assert result(
        post(client, delete, {"organizationId": "o1", "documentId": "d1", "agentSuggestions": True}, t.headers)) == {}


def test_delete_by_agent_takes_only_that_agents_threads(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    agent = {"agentSource": "external", "agentId": "lint", "agentName": "Lint", "url": "https://app/p1"}
    first = {"commentText": "finding", "from": {"userId": "bot"}, "agent": agent}
    result(
        post(
            client, "/v2/commentannotations/add", {
                "organizationId": "o1", "documentId": "d1", "commentAnnotations": [{
                    "annotationId": "a1", "commentData": [first]
                }, {"annotationId": "a2", "commentData": [{**first, "agent": {**agent, "url": "https://app/p2"}}]},
                                                                                   _thread("a3")]
            }, t.headers))
    delete = "/v2/commentannotations/delete"
    gone = result(post(client, delete, {"documentId": "d1", "agentUrls": ["https://app/p2"]}, t.headers))
    assert list(gone) == ["a2"]
    assert list(result(post(client, delete, {"documentId": "d1", "agentId": "lint"}, t.headers))) == ["a1"]
    assert list(_threads(client, t)) == ["a3"]


def test_comments_delete_without_ids_empties_the_thread(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    api.addCommentAnnotations(
        AddCommentAnnotationsRequest(organizationId="o1", documentId="d1", commentAnnotations=[_thread("a1")]))
    api.addComments(
        AddCommentsRequest(organizationId="o1", documentId="d1", annotationId="a1",
                           commentData=[{"commentText": "two", "from": {"userId": "bo"}}]))
    deleted = api.deleteComments(DeleteCommentsRequest(organizationId="o1", documentId="d1", annotationId="a1"))
    assert {i: o["success"] for i, o in deleted["result"]["data"].items()} == {"1": True, "2": True}
    assert _threads(client, t)["a1"]["comments"] == []  # the thread stays, empty
    again = api.deleteComments(DeleteCommentsRequest(organizationId="o1", documentId="d1", annotationId="a1"))
    assert again["result"]["data"] == {}


def test_an_import_keeps_its_comment_ids_and_times(client, sdk, live):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    day = 86_400_000
    base = live.svc.now_ms() - 30 * day
    imported = {
        "annotationId": "a1", "createdAt": base, "lastUpdated": base + 2 * day, "commentData": [{
            "commentId": 153783, "commentText": "first", "from": {"userId": "ana"}, "createdAt": base,
            "lastUpdated": base + day, "context": {"ticket": "T-1"},
            "taggedUserContacts": [{"userId": "bo", "contact": {"userId": "bo"}, "text": "@Bo"}]
        }, {"commentId": 607395, "commentText": "second", "from": {"userId": "bo"}, "createdAt": base + 2 * day}]
    }
    request = AddCommentAnnotationsRequest(organizationId="o1", documentId="d1", commentAnnotations=[imported])
    assert api.addCommentAnnotations(request)["result"]["data"]["a1"]["success"] is True
    thread = _threads(client, t)["a1"]
    assert (thread["createdAt"], thread["lastUpdated"]) == (base, base + 2 * day)
    first, second = thread["comments"]
    assert (first["commentId"], first["createdAt"], first["lastUpdated"]) == (153783, base, base + day)
    assert first["context"] == {"ticket": "T-1"} and first["taggedUserContacts"][0]["text"] == "@Bo"
    assert (second["commentId"], second["createdAt"], second["lastUpdated"]) == (607395, base + 2 * day, base + 2 * day)
    # Re-importing into the thread skips the ids it holds; a new comment takes an id above every imported one.
    again = api.addComments(
        AddCommentsRequest(organizationId="o1", documentId="d1", annotationId="a1",
                           commentData=[imported["commentData"][1], {"commentText": "new", "from": {"userId": "cy"}}]))
    assert {i: o["message"]
            for i, o in again["result"]["data"].items()
            } == {"607395": "Comment already exists.", "607396": "Comment added."}
    only_bo = api.getComments(
        GetCommentsRequest(organizationId="o1", documentId="d1", annotationId="a1", userIds=["bo"]))
    assert [c["commentId"] for c in only_bo["result"]["data"]] == [607395]


def test_an_import_with_impossible_times_or_ids_is_refused_whole(client, live):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    now = live.svc.now_ms()
    add = "/v2/commentannotations/add"

    def refused(comment: dict, **thread) -> dict:
        body = {
            "organizationId": "o1", "documentId": "d1", "commentAnnotations": [{
                "annotationId": "a1", "commentData": [{"commentText": "x", "from": {"userId": "ana"}, **comment}],
                **thread
            }]
        }
        return error(post(client, add, body, t.headers), "INVALID_ARGUMENT")

    assert "no later than now" in refused({"createdAt": now + 3_600_000})["message"]
    assert "no later than now" in refused({}, lastUpdated=now + 3_600_000)["message"]
    assert "before createdAt" in refused({"createdAt": now - 10, "lastUpdated": now - 20})["message"]
    for bad in ({"commentId": 0}, {"commentId": "7"}, {"commentId": 2**53}, {"createdAt": -1}):
        refused(bad)
    body = {
        "organizationId": "o1", "documentId": "d1", "commentAnnotations": [{
            "annotationId": "a1", "commentData": [{"commentId": 5, "from": {"userId": "a"}},
                                                  {"commentId": 5, "from": {"userId": "b"}}]
        }]
    }
    assert "commentId" in error(post(client, add, body, t.headers), "INVALID_ARGUMENT")["message"]
    assert _threads(client, t) == {}
