"""Suggestion threads at the root, as Velt's comment-annotation pages show them (issue #51 items 3 and 8), driven by
velt-py: `type` taken and returned on add, get and update; an agent's first comment makes an agent thread with its
`agent` block and `sourceType: "agent"`; a suggestion's `suggestion.status`; get's agent filters; delete's
`agentSuggestions`; `organizationPrivate` visibility; and add's and get's Velt keys beside collab's."""

from velt_py.models.comment_annotation_api import (
    AddCommentAnnotationsRequest,
    DeleteCommentAnnotationsRequest,
    GetCommentAnnotationsRequest,
    UpdateCommentAnnotationsRequest,
)

from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

SPELL = {
    "agentSource": "external", "agentType": "external", "agentId": "spell-check", "agentName": "Spell Check",
    "executionId": "exec_123", "url": "https://example.com/pricing",
    "reason": {"findingId": "f-1", "title": "Spelling", "description": "'Welcom' should be 'Welcome'."}
}


def _api(sdk, t):
    return sdk(t).api.commentAnnotations


def _data(answer):
    assert answer["result"]["status"] == "success", answer
    return answer["result"]["data"]


def _get(api, **more):
    return _data(api.getCommentAnnotations(GetCommentAnnotationsRequest(organizationId="o1", documentId="d1", **more)))


def _seed(api):
    """A plain comment, a pending agent suggestion, an agent comment of another execution, and a REST-made
    suggestion with a proposed-change payload."""
    return _data(
        api.addCommentAnnotations(
            AddCommentAnnotationsRequest(
                organizationId="o1", documentId="d1", commentAnnotations=[
                    {"annotationId": "plain", "commentData": [{"commentText": "hi", "from": {"userId": "ana"}}]},
                    {
                        "annotationId": "spell", "type": "suggestion", "commentData": [{
                            "commentText": "Heading has a spelling mistake.", "from": {"userId": "spell-check"},
                            "agent": SPELL
                        }]
                    },
                    {
                        "annotationId": "note", "commentData": [{
                            "commentText": "An agent's remark.", "from": {"userId": "a11y"}, "agent": {
                                "agentId": "a11y", "agentSource": "velt", "agentType": "custom", "executionId": "exec_9"
                            }
                        }]
                    },
                    {
                        "annotationId": "bump", "type": "suggestion", "suggestion": {
                            "targetId": "row.123", "oldValue": {"x": 205}, "newValue": {"x": 305}, "status": "accepted",
                            "myCustomField": "kept as-is"
                        }, "commentData": [{"commentText": "Bump x.", "from": {"userId": "bo"}}]
                    },
                ])))


def test_threads_carry_their_type_source_agent_and_suggestion_at_the_root(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    added = _seed(api)
    # Velt's annotationId and commentIds beside collab's id (and an agent thread's findingId echoed).
    assert added["plain"] == {
        "success": True, "id": "plain", "message": "Annotation added.", "annotationId": "plain", "commentIds": [1]
    }
    assert added["spell"]["findingId"] == "f-1" and added["spell"]["commentIds"] == [1]

    threads = {a["annotationId"]: a for a in _get(api)}
    plain, spell, note, bump = (threads[k] for k in ("plain", "spell", "note", "bump"))
    assert (plain["type"], plain["sourceType"]) == ("comment", "rest-api")
    assert "agent" not in plain and "suggestion" not in plain
    assert (spell["type"], spell["sourceType"], spell["agent"]) == ("suggestion", "agent", SPELL)
    assert spell["suggestion"] == {"status": "pending"}
    assert spell["comments"][0]["agent"] == SPELL  # the comment's own block stays
    assert (note["type"], note["sourceType"]) == ("comment", "agent") and "suggestion" not in note
    # The payload kept as sent, its status stamped pending (a status sent on add is dropped).
    assert bump["suggestion"] == {
        "targetId": "row.123", "oldValue": {"x": 205}, "newValue": {"x": 305}, "myCustomField": "kept as-is",
        "status": "pending"
    }
    assert bump["sourceType"] == "rest-api"
    # Velt's visibilityConfig and metadata beside collab's visibility, organizationId and documentId.
    assert plain["visibilityConfig"] == plain["visibility"] == {"type": "public"}
    assert plain["metadata"] == {"organizationId": "o1", "documentId": "d1"}
    page = api.getCommentAnnotations(GetCommentAnnotationsRequest(organizationId="o1", documentId="d1", pageSize=2))
    assert page["result"]["nextPageToken"] == page["result"]["pageToken"] is not None


def test_get_filters_by_the_agent_fields_velt_lists(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    _seed(api)

    def ids(**filters):
        return sorted(a["annotationId"] for a in _get(api, **filters))

    assert ids(agentId="spell-check") == ["spell"]
    assert ids(executionId="exec_9") == ["note"]
    assert ids(agentType="custom") == ["note"]
    assert ids(agentSource="external") == ["spell"]
    assert ids(agentSuggestions=True) == ["spell"]  # fresh agent suggestions only: not a REST-made one
    assert ids(agentComments=True) == ["note", "spell"]
    assert ids() == ["bump", "note", "plain", "spell"]
    # Velt: one agent filter per request.
    refused = api.getCommentAnnotations(
        GetCommentAnnotationsRequest(organizationId="o1", documentId="d1", agentId="spell-check", agentComments=True))
    assert refused["error"]["status"] == "INVALID_ARGUMENT"
    # An accepted suggestion is no longer fresh.
    _data(
        api.updateCommentAnnotations(
            UpdateCommentAnnotationsRequest(organizationId="o1", documentId="d1", annotationIds=["spell"],
                                            updatedData={"status": {"id": "resolved"}})))
    assert ids(agentSuggestions=True) == []
    assert {a["annotationId"]: a for a in _get(api)}["spell"]["suggestion"] == {"status": "accepted"}


def test_update_takes_type_and_suggestion(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    _seed(api)
    _data(
        api.updateCommentAnnotations(
            UpdateCommentAnnotationsRequest(
                organizationId="o1", documentId="d1", annotationIds=["plain"],
                updatedData={"type": "suggestion", "suggestion": {"status": "rejected", "summary": "no"}})))
    plain = {a["annotationId"]: a for a in _get(api)}["plain"]
    assert plain["type"] == "suggestion" and plain["suggestion"] == {"status": "rejected", "summary": "no"}
    refused = api.updateCommentAnnotations(
        UpdateCommentAnnotationsRequest(organizationId="o1", documentId="d1", annotationIds=["plain"],
                                        updatedData={"suggestion": {"status": "maybe"}}))
    assert refused["error"]["status"] == "INVALID_ARGUMENT"


def test_delete_narrows_to_pending_agent_suggestions(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    _seed(api)
    deleted = _data(
        api.deleteCommentAnnotations(
            DeleteCommentAnnotationsRequest(organizationId="o1", documentId="d1", agentSuggestions=True)))
    assert sorted(deleted) == ["spell"]
    assert sorted(a["annotationId"] for a in _get(api)) == ["bump", "note", "plain"]
    # AND-combined with agentId: another agent's suggestions are not matched.
    _seed(api)
    assert _data(
        api.deleteCommentAnnotations(
            DeleteCommentAnnotationsRequest(organizationId="o1", documentId="d1", agentSuggestions=True,
                                            agentId="a11y"))) == {}
    assert "spell" in {a["annotationId"] for a in _get(api)}


def test_organization_private_visibility_is_accepted(client, sdk):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    api = _api(sdk, t)
    body = {
        "annotationId": "private", "visibility": {"type": "organizationPrivate", "organizationId": "o1"},
        "commentData": [{"commentText": "Org only", "from": {"userId": "ana"}}]
    }
    _data(
        api.addCommentAnnotations(
            AddCommentAnnotationsRequest(organizationId="o1", documentId="d1", commentAnnotations=[body])))
    (thread, ) = result(post(client, "/v2/commentannotations/get", {"organizationId": "o1", "userId": "bo"},
                             t.headers))  # any reader within the organization sees it
    assert thread["visibilityConfig"] == {"type": "organizationPrivate", "organizationId": "o1"}
    other = {**body, "annotationId": "elsewhere", "visibility": {"type": "organizationPrivate", "organizationId": "o2"}}
    refused = api.addCommentAnnotations(
        AddCommentAnnotationsRequest(organizationId="o1", documentId="d1", commentAnnotations=[other]))["error"]
    assert refused["status"] == "INVALID_ARGUMENT"
    assert issue_paths({"details": refused["details"]}) == [["commentAnnotations", "0", "visibility", "organizationId"]]
    missing = {**body, "annotationId": "bare", "visibility": {"type": "organizationPrivate"}}
    assert api.addCommentAnnotations(
        AddCommentAnnotationsRequest(organizationId="o1", documentId="d1",
                                     commentAnnotations=[missing]))["error"]["status"] == "INVALID_ARGUMENT"


def test_a_thread_type_outside_velt_s_is_refused(client):
    t = new_tenant(client)
    add_organization(client, t, "o1", "d1")
    body = {
        "organizationId": "o1", "documentId": "d1",
        "commentAnnotations": [{"type": "chart", "commentData": [{"commentText": "x", "from": {"userId": "a"}}]}]
    }
    err = error(post(client, "/v2/commentannotations/add", body, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["commentAnnotations", "0", "type"]]
