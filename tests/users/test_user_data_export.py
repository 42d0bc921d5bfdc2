"""Get User Data (issue #18, GDPR export): a user's comments, reactions, notifications, activities and recordings
through HTTP, as typed records paged by count and by bytes; nothing of other users or other tenants."""

import json
from contextlib import contextmanager

import pytest
from velt_py.models.gdpr import GetAllUserDataRequest

from support.helpers import add_organization, enable_activities, error, issue_paths, new_tenant, post, result

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

EXPORT = "/v2/users/data/get"
COMMENTS = "/v2/commentannotations"
WHERE = {"organizationId": "org", "documentId": "doc"}
KINDS = ["comment", "reaction", "notification", "activity", "recording"]


def call(client, t, path, data):
    return result(post(client, path, data, t.headers))


def thread(client, t, annotation_id, user, text, where=WHERE):
    call(
        client, t, f"{COMMENTS}/add", {
            **where, "commentAnnotations": [{
                "annotationId": annotation_id, "commentData": [{"commentText": text, "from": {"userId": user}}]
            }]
        })


def reply(client, t, annotation_id, user, text, where=WHERE):
    call(client, t, f"{COMMENTS}/comments/add",
         {**where, "annotationId": annotation_id, "commentData": [{"commentText": text, "from": {"userId": user}}]})


def react(client, t, annotation_id, comment_id, user, reaction, where=WHERE):
    call(client, t, f"{COMMENTS}/comments/reactions/add",
         {**where, "annotationId": annotation_id, "commentId": comment_id, "reaction": reaction, "userId": user})


def notify(client, t, notification_id, actor, to, body="hello", where=WHERE):
    call(
        client, t, "/v2/notifications/add", {
            **where, "notificationId": notification_id, "actionUser": {"userId": actor
                                                                       }, "displayHeadlineMessageTemplate": "x",
            "displayBodyMessage": body, "notifyAll": False, "notifyUsers": [{"userId": u} for u in to]
        })


def record(client, t, annotation_id, user, name, where=WHERE, url="https://cdn.example.com/r.webm"):
    call(
        client, t, "/v2/recordings/add", {
            **where, "recordings": [{
                "annotationId": annotation_id, "recordingType": "screen", "mode": "floating", "displayName": name,
                "recordedTime": {"duration": 5000}, "from": {"userId": user},
                "attachments": [{"url": url, "mimeType": "video/webm", "name": "r.webm", "type": "video", "size": 1}]
            }]
        })


def act(client, t, activity_id, user, text, where=WHERE):
    call(
        client, t, "/v2/activities/add", {
            **where, "activities": [{
                "id": activity_id, "featureType": "comment", "actionType": "comment.add",
                "actionUser": {"userId": user}, "targetEntityId": "elsewhere", "entityData": {"text": text}
            }]
        })


def export(client, t, **data):
    response = post(client, EXPORT, data, t.headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def every_page(client, t, **data):
    """Follow page tokens to the end: the pages' records."""
    pages, token = [], None
    while True:
        page = export(client, t, **data, **({"pageToken": token} if token else {}))
        pages.append(page["data"])
        token = page["pageToken"]
        if token is None:
            return pages
        assert len(pages) < 200


def ident(item):
    """What a record is, in a form two answers can compare."""
    r = item["record"]
    return {
        "comment": lambda: (r["annotationId"], r["comment"]["commentId"]), "reaction": lambda:
        (r["annotationId"], r["commentId"], r["reaction"], r["userId"]), "notification": lambda: r["id"],
        "activity": lambda: r["id"], "recording": lambda: (r["annotationId"], r["version"])
    }[item["type"]]()


def of(records, kind):
    return [i for i in records if i["type"] == kind]


def populated(client):
    """A tenant where u1 and u2 each have data in every feature (activities on, so comment writes log theirs)."""
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    add_organization(client, t, "org2", "doc")
    enable_activities(client, t)
    thread(client, t, "a1", "u1", "u1 opens a1")
    reply(client, t, "a1", "u2", "u2 answers in a1")
    thread(client, t, "a2", "u2", "u2 opens a2")
    reply(client, t, "a2", "u1", "u1 answers in a2")
    react(client, t, "a1", 2, "u1", "👍")  # u1 on u2's comment
    react(client, t, "a1", 1, "u2", "🎉")  # u2 on u1's comment
    notify(client, t, "n-by-u1", "u1", ["u2"])
    notify(client, t, "n-to-u1", "u3", ["u1"])
    notify(client, t, "n-other", "u3", ["u2"])
    act(client, t, "act-u1", "u1", "u1 did this")
    act(client, t, "act-u2", "u2", "u2 did this")
    record(client, t, "r1", "u1", "u1 recording")
    record(client, t, "r2", "u2", "u2 recording")
    where2 = {"organizationId": "org2", "documentId": "doc"}
    thread(client, t, "b1", "u1", "u1 in org2", where=where2)
    return t


def test_a_users_data_from_every_feature_comes_back_and_nothing_of_others(client):
    t = populated(client)
    page = export(client, t, userIds=["u1"])
    records = page["data"]
    assert page["pageToken"] is None
    assert [i["type"] for i in records] == sorted((i["type"] for i in records), key=KINDS.index)  # grouped by kind
    assert {i["type"] for i in records} == set(KINDS)
    assert all(i["userIds"] == ["u1"] for i in records)
    comments = of(records, "comment")
    assert {(c["record"]["organizationId"], c["record"]["annotationId"], c["record"]["comment"]["commentText"])
            for c in comments} == {("org", "a1", "u1 opens a1"), ("org", "a2", "u1 answers in a2"),
                                   ("org2", "b1", "u1 in org2")}
    # u1's comment shows the reactions it got (u2's), as in the thread.
    first = next(c["record"]["comment"] for c in comments if c["record"]["annotationId"] == "a1")
    assert first["reactions"] == [{"reaction": "🎉", "userIds": ["u2"]}] and first["from"] == {"userId": "u1"}
    assert [(r["record"]["annotationId"], r["record"]["commentId"], r["record"]["reaction"])
            for r in of(records, "reaction")] == [("a1", 2, "👍")]
    assert sorted(n["record"]["id"] for n in of(records, "notification")) == ["n-by-u1", "n-to-u1"]
    activities = of(records, "activity")
    assert "act-u1" in {a["record"]["id"] for a in activities}
    assert {a["record"]["actionUser"]["userId"] for a in activities} == {"u1"}
    assert {a["record"]["actionType"]
            for a in activities} >= {"comment_annotation.add", "comment.add", "comment.reaction_add"}
    [recording] = of(records, "recording")
    assert recording["record"] | {"createdAt": 0} == {
        "organizationId": "org", "documentId": "doc", "annotationId": "r1", "version": 1, "recordingType": "screen",
        "mode": "floating", "displayName": "u1 recording", "recordedTime": {"duration": 5000, "display": "00:00:05"},
        "attachments": [{
            "attachmentId": 1, "url": "https://cdn.example.com/r.webm", "mimeType": "video/webm", "name": "r.webm",
            "type": "video", "size": 1
        }], "from": {"userId": "u1"}, "createdAt": 0
    }
    # u1's own activities may quote what they acted on (a reaction's comment); the rest holds nothing of u2.
    text = json.dumps([i for i in records if i["type"] != "activity"], ensure_ascii=False)
    for others in ("u2 answers in a1", "u2 opens a2", "n-other", "act-u2", "u2 recording"):
        assert others not in text


def test_several_users_and_organizations_filter(client):
    t = populated(client)
    alone = {
        u: {(i["type"], json.dumps(ident(i)))
            for i in export(client, t, userIds=[u])["data"]}
        for u in ("u1", "u2")
    }
    both = export(client, t, userIds=["u2", "u1"])["data"]
    assert {(i["type"], json.dumps(ident(i))) for i in both} == alone["u1"] | alone["u2"]
    # A notification both caused (u1) and received (u2) names both.
    by_u1 = next(i for i in both if i["type"] == "notification" and i["record"]["id"] == "n-by-u1")
    assert by_u1["userIds"] == ["u1", "u2"]
    in_org2 = export(client, t, userIds=["u1"], organizationIds=["org2"])["data"]
    assert {
        i["record"]["organizationId"] if i["type"] != "notification" else i["record"]["metadata"]["organizationId"]
        for i in in_org2
    } == {"org2"}
    assert {ident(i) for i in of(in_org2, "comment")} == {("b1", 1)}


def test_another_tenants_users_answer_like_unknown_ones(client):
    t = populated(client)
    other = new_tenant(client)
    unknown = export(client, other, userIds=["u1", "u2"])
    never = export(client, other, userIds=["nobody-ever"])
    assert unknown == never == {
        "status": "success", "message": "User data retrieved.", "data": [], "pageToken": None, "nextPageToken": None
    }
    assert export(client, t, userIds=["nobody-ever"])["data"] == []
    # A page token is the tenant's own: another tenant cannot use one.
    token = export(client, t, userIds=["u1"], pageSize=1)["pageToken"]
    assert token
    err = error(post(client, EXPORT, {"userIds": ["u1"], "pageSize": 1, "pageToken": token}, other.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["pageToken"]]


FEATURES = ["comments", "reactions", "recordings", "notifications", "activities"]


def test_velts_form_answers_by_feature_up_to_100_each_with_next_page_token(client, sdk):
    """Velt's `{organizationId, userId}` gets Velt's answer: `data: {comments, reactions, recordings,
    notifications}` (and collab's activities), up to 100 records of each a page, and `nextPageToken`."""
    t = populated(client)
    call(
        client, t, "/v2/recordings/add", {
            **WHERE, "recordings": [{
                "annotationId": f"rec{n:03}", "recordingType": "audio", "mode": "floating", "displayName": "r",
                "recordedTime": {"duration": 1000}, "from": {"userId": "u1"}, "attachments": [{
                    "url": "https://cdn.example.com/a.webm", "mimeType": "audio/webm", "name": "a.webm",
                    "type": "audio", "size": 1
                }]
            } for n in range(101)]
        })
    gdpr = sdk(t).api.gdpr
    first = gdpr.getAllUserData(GetAllUserDataRequest(organizationId="org", userId="u1"))["result"]
    data = first["data"]
    assert sorted(data) == sorted(FEATURES)
    assert {(c["annotationId"], c["comment"]["commentText"])
            for c in data["comments"]} == {("a1", "u1 opens a1"), ("a2", "u1 answers in a2")}  # organization org only
    assert [(r["annotationId"], r["reaction"], r["userId"]) for r in data["reactions"]] == [("a1", "👍", "u1")]
    assert sorted(n["id"] for n in data["notifications"]) == ["n-by-u1", "n-to-u1"]
    assert len(data["recordings"]) == 100 and {r["from"]["userId"] for r in data["recordings"]} == {"u1"}
    assert first["nextPageToken"] and first["pageToken"] == first["nextPageToken"]
    rest = gdpr.getAllUserData(
        GetAllUserDataRequest(organizationId="org", userId="u1", pageToken=first["nextPageToken"]))["result"]
    assert rest["nextPageToken"] is None
    assert {k: len(v) for k, v in rest["data"].items()} == {k: 2 * (k == "recordings") for k in FEATURES}
    served = [r["annotationId"] for page in (data, rest["data"]) for r in page["recordings"]]
    assert len(served) == len(set(served)) == 102 and "r2" not in served  # u1's r1 and rec000-100, each once
    # collab's own form keeps its shape: one list of typed records.
    typed = export(client, t, userIds=["u1"], organizationIds=["org"], pageSize=1000)
    assert isinstance(typed["data"], list) and typed["data"][0]["type"] == "comment"
    # Nobody's data in another tenant: every feature empty, no token.
    other = sdk(new_tenant(client)).api.gdpr.getAllUserData(GetAllUserDataRequest(organizationId="org",
                                                                                  userId="u1"))["result"]
    assert other["data"] == {k: [] for k in FEATURES} and other["nextPageToken"] is None


def test_velts_form_pages_by_bytes_and_loses_nothing(client, live):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    big = "x" * 1500
    for n in range(3):
        thread(client, t, f"a{n}", "u1", f"{n} {big}")
        notify(client, t, f"n{n}", "u1", ["u2"], body=big)
    with response_budget(live, 4096):
        pages, token = [], None
        while True:
            page = export(client, t, organizationId="org", userId="u1", **({"pageToken": token} if token else {}))
            pages.append(page["data"])
            token = page["nextPageToken"]
            if token is None:
                break
            assert len(pages) < 20
    assert len(pages) > 1
    assert sorted(c["annotationId"] for p in pages for c in p["comments"]) == ["a0", "a1", "a2"]
    assert sorted(n["id"] for p in pages for n in p["notifications"]) == ["n0", "n1", "n2"]
    # A token of one form is not the other's.
    token = export(client, t, userIds=["u1"], pageSize=1)["pageToken"]
    err = error(post(client, EXPORT, {"organizationId": "org", "userId": "u1", "pageToken": token}, t.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["pageToken"]]


@contextmanager
def response_budget(live, budget):
    before = live.svc.settings.max_response_bytes
    live.svc.settings.max_response_bytes = budget
    try:
        yield budget
    finally:
        live.svc.settings.max_response_bytes = before


def test_pages_cut_by_count_and_bytes_lose_and_repeat_nothing(client, live):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    enable_activities(client, t)
    big = "x" * 1500
    for n in range(3):
        thread(client, t, f"a{n}", "u1", f"{n} {big}")
        react(client, t, f"a{n}", 1, "u1", "👍")
        notify(client, t, f"n{n}", "u1", ["u2"], body=big)
        act(client, t, f"act{n}", "u1", big)
        record(client, t, f"r{n}", "u1", "rec", url=f"https://cdn.example.com/{n}{'v' * 1400}.webm")
    whole = export(client, t, userIds=["u1"])
    assert whole["pageToken"] is None
    everything = [(i["type"], ident(i)) for i in whole["data"]]
    assert len(everything) == len(set(everything)) and {k for k, _ in everything} == set(KINDS)
    # By count: one record a page, across every kind boundary, and no empty page at the end.
    pages = every_page(client, t, userIds=["u1"], pageSize=1)
    assert [len(p) for p in pages] == [1] * len(everything)
    assert [(i["type"], ident(i)) for p in pages for i in p] == everything
    # By bytes: a 4 KiB budget cuts inside kinds; a page passes it only when it holds one record.
    with response_budget(live, 4096) as budget:
        pages = every_page(client, t, userIds=["u1"])
    assert [(i["type"], ident(i)) for p in pages for i in p] == everything
    assert len(pages) > len(KINDS)
    for page in pages:
        assert len(json.dumps(page, separators=(",", ":"), ensure_ascii=False).encode()) <= budget or len(page) == 1


def test_a_page_token_is_bound_to_its_users_and_organizations(client):
    t = populated(client)
    token = export(client, t, userIds=["u1"], pageSize=1)["pageToken"]
    # The page size may change between pages; the users and organizations may not.
    assert export(client, t, userIds=["u1"], pageSize=5, pageToken=token)["data"]
    for data in ({"userIds": ["u2"]}, {"userIds": ["u1", "u2"]}, {"userIds": ["u1"], "organizationIds": ["org"]}):
        err = error(post(client, EXPORT, {**data, "pageToken": token}, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["pageToken"]]


@pytest.mark.parametrize("data, path",
                         [({}, ["userIds"]), ({"userIds": []}, ["userIds"]), ({"userIds": "u1"}, ["userIds"]),
                          ({"userIds": [1]}, ["userIds", "0"]), ({"userIds": ["u1", "u1"]}, ["userIds"]),
                          ({"userIds": [f"u{n}" for n in range(101)]}, ["userIds"]),
                          ({"userIds": ["u1"], "organizationIds": []}, ["organizationIds"]),
                          ({"userIds": ["u1"], "organizationIds": [f"o{n}" for n in range(101)]}, ["organizationIds"]),
                          ({"userIds": ["u1"], "pageSize": 0}, ["pageSize"]),
                          ({"userIds": ["u1"], "pageSize": 1001}, ["pageSize"]),
                          ({"userIds": ["u1"], "pageSize": "10"}, ["pageSize"]),
                          ({"userIds": ["u1"], "pageToken": "not-a-token"}, ["pageToken"])])
def test_bad_input_is_invalid_argument(client, data, path):
    t = new_tenant(client)
    err = error(post(client, EXPORT, data, t.headers), "INVALID_ARGUMENT")
    assert path in issue_paths(err)


def test_it_answers_under_v1_and_needs_the_api_key(client):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    thread(client, t, "a1", "u1", "hi")
    assert [i["type"] for i in export(client, t, userIds=["u1"])["data"]] == ["comment"]
    response = post(client, "/v1/users/data/get", {"userIds": ["u1"]}, t.headers)
    assert [i["type"] for i in response.json()["result"]["data"]] == ["comment"]
    error(post(client, EXPORT, {"userIds": ["u1"]}, {}), "UNAUTHENTICATED")
