"""Comment threads over HTTP: add (idempotent), get with every filter and paging, update, delete, comments,
reactions, read marks and unread counts, limits, bad input, and another tenant's ids."""

from concurrent.futures import ThreadPoolExecutor

from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

BASE = "/v2/commentannotations"


def thread(text="First", user="u1", **more):
    return {"commentData": [{"commentText": text, "from": {"userId": user, "name": user.upper()}}], **more}


def add(client, t, *threads, org="org", doc="doc", **more):
    return result(
        post(client, f"{BASE}/add",
             {"organizationId": org, "documentId": doc, "commentAnnotations": list(threads), **more}, t.headers))


def get(client, t, org="org", **filters):
    return result(post(client, f"{BASE}/get", {"organizationId": org, **filters}, t.headers))


def setup(client):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc", "doc2")
    return t


def test_add_then_get_shows_the_thread_in_velt_shapes(client, clock):
    t = setup(client)
    out = add(
        client, t,
        thread("Is the price right?", annotationId="a1", location={"id": "loc1"},
               targetElement={"elementId": "e1", "targetText": "Only $5"}, priority={"id": "high"},
               assignedTo={"userId": "u2"}, context={"page": 3}))
    assert out == {
        "a1": {"success": True, "id": "a1", "message": "Annotation added.", "annotationId": "a1", "commentIds": [1]}
    }
    (ann, ) = get(client, t, documentId="doc")
    assert ann["annotationId"] == "a1" and ann["documentId"] == "doc" and ann["organizationId"] == "org"
    assert ann["status"] == {"id": "open", "type": "default"}
    assert ann["priority"] == {"id": "high"} and ann["assignedTo"] == {"userId": "u2"}
    assert ann["from"] == {"userId": "u1", "name": "U1"} and ann["visibility"] == {"type": "public"}
    assert ann["targetElement"] == {"elementId": "e1", "targetText": "Only $5"} and ann["context"] == {"page": 3}
    assert ann["createdAt"] == ann["lastUpdated"] == 1_800_000_000_000
    (comment, ) = ann["comments"]
    assert comment == {
        "commentId": 1, "commentText": "Is the price right?", "from": {"userId": "u1", "name": "U1"},
        "createdAt": 1_800_000_000_000, "lastUpdated": 1_800_000_000_000, "isEdited": False, "taggedUserContacts": [],
        "reactions": [], "attachments": []
    }


def test_add_is_idempotent_with_a_supplied_id_and_generates_ids_otherwise(client):
    t = setup(client)
    add(client, t, thread(annotationId="a1"))
    again = add(client, t, thread("Different text", annotationId="a1"))
    assert again["a1"]["success"] is True and again["a1"]["message"] == "Annotation already exists."
    (ann, ) = get(client, t, annotationIds=["a1"])
    assert [c["commentText"] for c in ann["comments"]] == ["First"]
    # The same id in another document of the organization is refused, item by item.
    other = add(client, t, thread(annotationId="a1"), doc="doc2")
    assert other["a1"]["success"] is False
    generated = add(client, t, thread(), thread())
    assert len(generated) == 2 and all(k.startswith("ann_") and v["success"] for k, v in generated.items())


def test_concurrent_adds_with_one_id_store_one_thread(client):
    t = setup(client)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: add(client, t, thread(annotationId="same")), range(6)))
    assert all(a["same"]["success"] for a in answers)
    (ann, ) = get(client, t)
    assert len(ann["comments"]) == 1


def test_get_filters(client, clock):
    t = setup(client)
    add(client, t, thread("one", "u1", annotationId="a1", location={"id": "L1"}, assignedTo={"userId": "x"}))
    clock["now"] += 1
    add(client, t, thread("two", "u2", annotationId="a2", status={"id": "in_progress"}))
    clock["now"] += 1
    add(
        client, t, {
            "annotationId": "a3", "commentData": [{
                "commentText": "hey @m", "from": {"userId": "u3"}, "taggedUserContacts": [{"userId": "m"}]
            }]
        }, doc="doc2")
    ids = lambda rows: [r["annotationId"] for r in rows]  # noqa: E731
    assert ids(get(client, t)) == ["a3", "a2", "a1"]
    assert ids(get(client, t, order="asc")) == ["a1", "a2", "a3"]
    assert ids(get(client, t, documentId="doc")) == ["a2", "a1"]
    assert ids(get(client, t, documentIds=["doc2"])) == ["a3"]
    assert ids(get(client, t, locationIds=["L1"])) == ["a1"]
    assert ids(get(client, t, userIds=["u2"])) == ["a2"]
    assert ids(get(client, t, mentionedUserIds=["m"])) == ["a3"]
    assert ids(get(client, t, assignedToUserIds=["x"])) == ["a1"]
    assert ids(get(client, t, statusIds=["in_progress"])) == ["a2"]
    assert ids(get(client, t, createdAfter=1_800_000_001_000)) == ["a3", "a2"]
    assert ids(get(client, t, createdBefore=1_800_000_000_000)) == ["a1"]
    assert ids(get(client, t, updatedAfter=1_800_000_002_000, updatedBefore=1_800_000_002_000)) == ["a3"]
    grouped = get(client, t, groupByDocumentId=True)
    assert {d: ids(v) for d, v in grouped.items()} == {"doc": ["a2", "a1"], "doc2": ["a3"]}


def test_get_pages_with_a_token(client, clock):
    t = setup(client)
    for n in range(5):
        clock["now"] += 1
        add(client, t, thread(annotationId=f"a{n}"))
    seen, token = [], None
    while True:
        body = post(client, f"{BASE}/get",
                    {"organizationId": "org", "pageSize": 2, **({"pageToken": token} if token else {})},
                    t.headers).json()["result"]
        seen += [a["annotationId"] for a in body["data"]]
        token = body["pageToken"]
        if token is None:
            break
    assert seen == ["a4", "a3", "a2", "a1", "a0"]
    bad = post(client, f"{BASE}/get", {"organizationId": "org", "pageToken": "forged"}, t.headers)
    assert issue_paths(error(bad, "INVALID_ARGUMENT")) == [["pageToken"]]


def test_update_status_priority_assignee_and_resolve(client, clock):
    t = setup(client)
    add(client, t, thread(annotationId="a1"))
    clock["now"] += 5
    done = result(
        post(
            client, f"{BASE}/update", {
                "organizationId": "org", "documentId": "doc", "annotationIds": ["a1", "nope"],
                "actionUser": {"userId": "rev"}, "updatedData": {
                    "status": {"id": "resolved"}, "priority": {"id": "low"}, "assignedTo": {"userId": "u9"}
                }
            }, t.headers))
    assert done["a1"]["success"] is True and done["nope"] == {
        "success": False, "id": "nope", "message": "Annotation does not exist."
    }
    (ann, ) = get(client, t)
    assert ann["status"] == {"id": "resolved", "type": "terminal"} and ann["resolvedByUserId"] == "rev"
    assert ann["priority"] == {"id": "low"} and ann["assignedTo"] == {"userId": "u9"}
    assert ann["lastUpdated"] == ann["createdAt"] + 5000
    assert [a["annotationId"] for a in get(client, t, resolvedBy="rev")] == ["a1"]
    # Reopen.
    result(
        post(
            client, f"{BASE}/update", {
                "organizationId": "org", "documentId": "doc", "annotationIds": ["a1"],
                "updatedData": {"status": {"id": "open"}}
            }, t.headers))
    (ann, ) = get(client, t)
    assert ann["status"]["id"] == "open" and "resolvedByUserId" not in ann


def test_update_users_rewrites_identities(client):
    t = setup(client)
    add(
        client, t, {
            "annotationId": "a1", "assignedTo": {"userId": "old"}, "commentData": [{
                "commentText": "x", "from": {"userId": "old", "name": "Old"}, "taggedUserContacts": [{"userId": "old"}]
            }]
        })
    result(
        post(
            client, f"{BASE}/comments/reactions/add", {
                "organizationId": "org", "documentId": "doc", "annotationId": "a1", "commentId": 1, "reaction": "👍",
                "userId": "old"
            }, t.headers))
    out = result(
        post(
            client, f"{BASE}/update", {
                "organizationId": "org", "documentId": "doc",
                "updateUsers": [{"from": {"userId": "old"}, "to": {"userId": "new", "name": "New"}}]
            }, t.headers))
    assert out["old"]["success"] is True
    (ann, ) = get(client, t)
    assert ann["from"] == {"userId": "new", "name": "New"} and ann["assignedTo"]["userId"] == "new"
    (c, ) = ann["comments"]
    assert c["from"]["userId"] == "new" and c["taggedUserContacts"][0]["userId"] == "new"
    assert c["reactions"] == [{"reaction": "👍", "userIds": ["new"]}]
    assert get(client, t, userIds=["old"]) == []


def test_update_users_stays_inside_the_document_and_threads_named(client):
    t = setup(client)
    for doc, ids in (("doc", ["a1", "a2"]), ("doc2", ["b1"])):
        add(client, t, *(thread(user="old", annotationId=i) for i in ids), doc=doc)
        for i in ids:
            result(
                post(
                    client, f"{BASE}/comments/reactions/add", {
                        "organizationId": "org", "documentId": doc, "annotationId": i, "commentId": 1, "reaction": "👍",
                        "userId": "old"
                    }, t.headers))
    rename = {"updateUsers": [{"from": {"userId": "old"}, "to": {"userId": "new"}}]}
    result(
        post(client, f"{BASE}/update",
             {"organizationId": "org", "documentId": "doc", "annotationIds": ["a1"], **rename}, t.headers))

    def authors():
        return {
            a["annotationId"]: (a["from"]["userId"], a["comments"][0]["from"]["userId"],
                                a["comments"][0]["reactions"][0]["userIds"])
            for a in get(client, t)
        }

    assert authors() == {"a1": ("new", "new", ["new"]), "a2": ("old", "old", ["old"]), "b1": ("old", "old", ["old"])}
    result(post(client, f"{BASE}/update", {"organizationId": "org", "documentId": "doc", **rename}, t.headers))
    assert authors() == {"a1": ("new", "new", ["new"]), "a2": ("new", "new", ["new"]), "b1": ("old", "old", ["old"])}


def test_delete_threads_by_id_and_whole_document(client):
    t = setup(client)
    add(client, t, thread(annotationId="a1"), thread(annotationId="a2"), thread(annotationId="a3"))
    out = result(
        post(client, f"{BASE}/delete", {"organizationId": "org", "documentId": "doc", "annotationIds": ["a1", "zz"]},
             t.headers))
    assert out["a1"]["success"] is True and out["zz"]["success"] is False
    out = result(post(client, f"{BASE}/delete", {"organizationId": "org", "documentId": "doc"}, t.headers))
    assert set(out) == {"a2", "a3"}
    assert get(client, t) == []


def test_comments_add_get_update_delete(client, clock):
    t = setup(client)
    add(client, t, thread(annotationId="a1"))
    where = {"organizationId": "org", "documentId": "doc", "annotationId": "a1"}
    out = result(
        post(
            client, f"{BASE}/comments/add", {
                **where, "commentData": [{
                    "commentText": "reply", "from": {"userId": "u2"},
                    "attachments": [{"url": "https://x/y.png", "name": "y"}]
                }]
            }, t.headers))
    assert out == {"2": {"success": True, "id": "2", "message": "Comment added."}}
    clock["now"] += 7
    out = result(
        post(client, f"{BASE}/comments/update",
             {**where, "commentIds": [2, 9], "updatedData": {"commentText": "edited"}}, t.headers))
    assert out["2"]["success"] is True and out["9"]["success"] is False
    (c, ) = result(post(client, f"{BASE}/comments/get", {**where, "commentIds": [2]}, t.headers))
    assert c["commentText"] == "edited" and c["isEdited"] is True
    assert c["createdAt"] == 1_800_000_000_000 and c["lastUpdated"] == 1_800_000_007_000
    assert c["attachments"] == [{"url": "https://x/y.png", "name": "y"}]
    every = result(post(client, f"{BASE}/comments/get", where, t.headers))
    assert [x["commentId"] for x in every] == [1, 2]
    out = result(post(client, f"{BASE}/comments/delete", {**where, "commentIds": [1]}, t.headers))
    assert out["1"]["success"] is True
    assert [x["commentId"] for x in result(post(client, f"{BASE}/comments/get", where, t.headers))] == [2]
    missing = post(client, f"{BASE}/comments/get", {**where, "annotationId": "nope"}, t.headers)
    error(missing, "NOT_FOUND")


def test_reactions_add_and_delete(client):
    t = setup(client)
    add(client, t, thread(annotationId="a1"))
    where = {"organizationId": "org", "documentId": "doc", "annotationId": "a1", "commentId": 1}
    for user in ("u1", "u2"):
        assert (result(
            post(client, f"{BASE}/comments/reactions/add", {**where, "reaction": "👍", "userId": user},
                 t.headers))["success"] is True)
    again = result(post(client, f"{BASE}/comments/reactions/add", {**where, "reaction": "👍", "userId": "u1"},
                        t.headers))
    assert again["success"] is False
    result(post(client, f"{BASE}/comments/reactions/add", {**where, "reaction": "heart", "userId": "u1"}, t.headers))
    (ann, ) = get(client, t)
    assert ann["comments"][0]["reactions"] == [{"reaction": "👍", "userIds": ["u1", "u2"]},
                                               {"reaction": "heart", "userIds": ["u1"]}]
    result(post(client, f"{BASE}/comments/reactions/delete", {**where, "reaction": "👍", "userId": "u1"}, t.headers))
    (ann, ) = get(client, t)
    assert ann["comments"][0]["reactions"][0] == {"reaction": "👍", "userIds": ["u2"]}
    error(
        post(client, f"{BASE}/comments/reactions/add", {**where, "commentId": 99, "reaction": "x", "userId": "u"},
             t.headers), "NOT_FOUND")


def test_unread_counts_move_with_read_marks(client, clock):
    t = setup(client)
    add(client, t, thread("hi", "author", annotationId="a1"), thread("mine", "reader", annotationId="a2"))

    def count():
        body = {"organizationId": "org", "userId": "reader", "documentIds": ["doc", "doc2"]}
        return result(post(client, f"{BASE}/count/get", body, t.headers))

    assert count() == {
        "doc": {"total": 2, "unread": 1, "unreadComments": 1}, "doc2": {"total": 0, "unread": 0, "unreadComments": 0}
    }
    clock["now"] += 1
    marked = result(
        post(client, f"{BASE}/read/update", {"organizationId": "org", "documentId": "doc", "userId": "reader"},
             t.headers))
    assert set(marked) == {"a1", "a2"}
    assert count()["doc"] == {"total": 2, "unread": 0, "unreadComments": 0}
    clock["now"] += 1
    result(
        post(
            client, f"{BASE}/comments/add", {
                "organizationId": "org", "documentId": "doc", "annotationId": "a2",
                "commentData": [{"commentText": "r", "from": {"userId": "x"}}]
            }, t.headers))
    assert count()["doc"] == {"total": 2, "unread": 1, "unreadComments": 1}
    result(
        post(client, f"{BASE}/read/update",
             {"organizationId": "org", "documentId": "doc", "userId": "reader", "annotationIds": ["a2"]}, t.headers))
    assert count()["doc"]["unread"] == 0


def test_private_threads_reach_only_their_users_in_get_and_count(client):
    t = setup(client)
    add(client, t, thread(annotationId="pub"),
        thread(annotationId="priv", visibility={"type": "restricted", "userIds": ["friend"]}))
    ids = lambda user: sorted(a["annotationId"] for a in get(client, t, userId=user))  # noqa: E731
    assert ids("stranger") == ["pub"]
    assert ids("friend") == ["priv", "pub"] and ids("u1") == ["priv", "pub"]
    assert len(get(client, t)) == 2  # the server (no userId) sees everything
    (priv, ) = get(client, t, annotationIds=["priv"])
    assert priv["visibility"] == {"type": "restricted", "userIds": ["friend"]}
    count = result(post(client, f"{BASE}/count/get", {"organizationId": "org", "userId": "stranger"}, t.headers))
    assert count == {"doc": {"total": 1, "unread": 1, "unreadComments": 1}}


def test_limits_and_bad_input_are_clear_errors(client, tune):
    t = setup(client)
    long = post(client, f"{BASE}/add",
                {"organizationId": "org", "documentId": "doc", "commentAnnotations": [thread("x" * 20_001)]}, t.headers)
    assert issue_paths(error(long,
                             "INVALID_ARGUMENT")) == [["commentAnnotations", "0", "commentData", "0", "commentText"]]
    many = {"commentText": "x", "from": {"userId": "u"}, "attachments": [{"url": "u"}] * 21}
    bad = post(client, f"{BASE}/add",
               {"organizationId": "org", "documentId": "doc", "commentAnnotations": [{"commentData": [many]}]},
               t.headers)
    assert issue_paths(error(bad,
                             "INVALID_ARGUMENT")) == [["commentAnnotations", "0", "commentData", "0", "attachments"]]
    tagged = {
        "commentText": "x", "from": {"userId": "u"}, "taggedUserContacts": [{"userId": f"u{i}"} for i in range(51)]
    }
    bad = post(client, f"{BASE}/add",
               {"organizationId": "org", "documentId": "doc", "commentAnnotations": [{"commentData": [tagged]}]},
               t.headers)
    error(bad, "INVALID_ARGUMENT")
    error(
        post(client, f"{BASE}/add", {
            "organizationId": "org", "documentId": "doc", "commentAnnotations": [{"status": {"id": "done"}, **thread()}]
        }, t.headers), "INVALID_ARGUMENT")
    error(post(client, f"{BASE}/get", {"organizationId": "org", "documentId": "d", "documentIds": ["e"]}, t.headers),
          "INVALID_ARGUMENT")
    error(
        post(client, f"{BASE}/update", {"organizationId": "org", "documentId": "doc", "annotationIds": ["a"]},
             t.headers), "INVALID_ARGUMENT")
    tune(comments_max_per_thread=3)
    add(client, t, {"annotationId": "full", "commentData": [{"commentText": "x", "from": {"userId": "u"}}] * 3})
    over = post(
        client, f"{BASE}/comments/add", {
            "organizationId": "org", "documentId": "doc", "annotationId": "full",
            "commentData": [{"commentText": "x", "from": {"userId": "u"}}]
        }, t.headers)
    err = error(over, "INVALID_ARGUMENT")
    assert "at most 3 comments" in err["message"] and issue_paths(err) == [["commentData"]]
    over = post(
        client, f"{BASE}/add", {
            "organizationId": "org", "documentId": "doc",
            "commentAnnotations": [{"commentData": [{"commentText": "x", "from": {"userId": "u"}}] * 4}]
        }, t.headers)
    assert issue_paths(error(over, "INVALID_ARGUMENT")) == [["commentAnnotations", "0", "commentData"]]


def test_missing_organization_or_document_and_create_flags(client):
    t = new_tenant(client)
    error(
        post(client, f"{BASE}/add", {"organizationId": "o", "documentId": "d", "commentAnnotations": [thread()]},
             t.headers), "NOT_FOUND")
    add(client, t, thread(annotationId="a1"), org="o", doc="d", createOrganization=True, createDocument=True)
    assert [a["annotationId"] for a in get(client, t, org="o")] == ["a1"]
    add_organization(client, t, "o2")
    error(
        post(client, f"{BASE}/add", {"organizationId": "o2", "documentId": "d", "commentAnnotations": [thread()]},
             t.headers), "NOT_FOUND")


def test_another_tenants_ids_answer_like_ids_that_never_existed(client):
    a, b = setup(client), setup(client)
    add(client, a, thread("secret", annotationId="a1"))
    assert get(client, b, annotationIds=["a1"]) == []
    where = {"organizationId": "org", "documentId": "doc", "annotationId": "a1"}
    assert error(post(client, f"{BASE}/comments/get", where, b.headers), "NOT_FOUND") == error(
        post(client, f"{BASE}/comments/get", {**where, "annotationId": "never"}, b.headers), "NOT_FOUND")
    out = result(
        post(client, f"{BASE}/delete", {"organizationId": "org", "documentId": "doc", "annotationIds": ["a1"]},
             b.headers))
    assert out["a1"]["success"] is False
    # B may even use the same annotation id for a thread of its own.
    assert add(client, b, thread(annotationId="a1"))["a1"]["message"] == "Annotation added."
    (mine, ) = get(client, a)
    assert mine["comments"][0]["commentText"] == "secret"


def test_a_disabled_organization_refuses_writes_but_reads(client):
    t = setup(client)
    add(client, t, thread(annotationId="a1"))
    result(
        post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["org"], "disabled": True},
             t.headers))
    error(
        post(client, f"{BASE}/add", {"organizationId": "org", "documentId": "doc", "commentAnnotations": [thread()]},
             t.headers), "PERMISSION_DENIED")
    error(
        post(
            client, f"{BASE}/comments/add", {
                "organizationId": "org", "documentId": "doc", "annotationId": "a1",
                "commentData": [{"commentText": "x", "from": {"userId": "u"}}]
            }, t.headers), "PERMISSION_DENIED")
    assert len(get(client, t)) == 1


def test_verify_user_permissions_editors_write_viewers_react(client):
    t = setup(client)
    result(
        post(
            client, "/v2/users/add", {
                "organizationId": "org", "users": [{"userId": "ed", "accessRole": "editor"},
                                                   {"userId": "vi", "accessRole": "viewer"}]
            }, t.headers))
    ok = add(client, t, thread(user="ed", annotationId="a1"), verifyUserPermissions=True)
    assert ok["a1"]["success"] is True
    denied = post(
        client, f"{BASE}/add", {
            "organizationId": "org", "documentId": "doc", "verifyUserPermissions": True,
            "commentAnnotations": [thread(user="vi")]
        }, t.headers)
    assert "vi" in error(denied, "PERMISSION_DENIED")["message"]
    stranger = post(
        client, f"{BASE}/add", {
            "organizationId": "org", "documentId": "doc", "verifyUserPermissions": True,
            "commentAnnotations": [thread(user="nobody")]
        }, t.headers)
    error(stranger, "PERMISSION_DENIED")
    react = {
        "organizationId": "org", "documentId": "doc", "annotationId": "a1", "commentId": 1, "reaction": "👍",
        "verifyUserPermissions": True
    }
    assert result(post(client, f"{BASE}/comments/reactions/add", {**react, "userId": "vi"}, t.headers))["success"]
    error(post(client, f"{BASE}/comments/reactions/add", {**react, "userId": "nobody"}, t.headers), "PERMISSION_DENIED")


def test_v1_answers_like_v2(client):
    t = setup(client)
    add(client, t, thread(annotationId="a1"))
    body = {"organizationId": "org"}
    assert (post(client, "/v1/commentannotations/get", body,
                 t.headers).json() == post(client, f"{BASE}/get", body, t.headers).json())
