"""Comment sizes (issue #34, item 3): every free-form field, each comment and each thread has a byte cap, refused as
INVALID_ARGUMENT naming the field with nothing written; reads stay within COLLAB_MAX_RESPONSE_BYTES, a thread too
large for a page of its own is paged inside (the review's 14.5 MiB answers under a 4 MiB budget)."""

import json

from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

BASE = "/v2/commentannotations"
DOC = {"organizationId": "org", "documentId": "doc"}
KIB = 1024


def _setup(client):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    return t


def _thread(annotation_id, *comments, **fields):
    comments = list(comments) or [{"commentText": "hi", "from": {"userId": "ed"}}]
    return {"annotationId": annotation_id, "commentData": comments, **fields}


def _add(client, t, *threads):
    return post(client, f"{BASE}/add", {**DOC, "commentAnnotations": list(threads)}, t.headers)


def _held(db, t):
    return db.execute(
        "select (select count(*) from comment_annotations where api_key_id = %(k)s) as threads,"
        " (select count(*) from comments where api_key_id = %(k)s) as comments", {"k": t.api_key}).fetchone()


def test_free_form_fields_comments_and_threads_have_byte_caps(client, db, tune):
    t = _setup(client)
    blob = "x" * (16 * KIB)  # with its key and quotes, just over 16 KiB of JSON
    over = [
        (_thread("a", context={"b": blob}), ["commentAnnotations", "0", "context"]),
        (_thread("a", location={"b": blob}), ["commentAnnotations", "0", "location"]),
        (_thread("a", assignedTo={"userId": "al", "bio": blob}), ["commentAnnotations", "0", "assignedTo"]),
        (_thread("a", {"from": {"userId": "ed", "bio": blob}}), ["commentAnnotations", "0", "commentData", "0",
                                                                 "from"]),
        (_thread("a", {"from": {"userId": "ed"}, "agent": {"b": blob}}),
         ["commentAnnotations", "0", "commentData", "0", "agent"]),
        (_thread("a", {"from": {"userId": "ed"}, "attachments": [{"url": "u", "extra": blob}]}),
         ["commentAnnotations", "0", "commentData", "0", "attachments", "0"]),
        (_thread("a", {
            "from": {"userId": "ed"}, "taggedUserContacts": [{"userId": "jo", "contact": {"userId": "jo", "bio": blob}}]
        }), ["commentAnnotations", "0", "commentData", "0", "taggedUserContacts", "0", "contact"]),
        # 20,000 characters of text and of html are within their own caps, but 3 bytes each in UTF-8: 120 KB.
        (_thread("a", {"from": {"userId": "ed"}, "commentText": "€" * 20_000, "commentHtml": "€" * 20_000}),
         ["commentAnnotations", "0", "commentData", "0"])
    ]
    for body, path in over:
        refused = error(_add(client, t, body, _thread("fine")), "INVALID_ARGUMENT", 400)
        assert issue_paths(refused) == [path], refused
        assert refused["details"]["issues"][0]["code"] == "too_big"
    assert _held(db, t) == {"threads": 0, "comments": 0}  # nothing half-written, the valid thread beside it neither

    # An edit may not make a comment pass 64 KiB with what it already holds (text, context, user keys). (Not an agent
    # block: a first comment's is the thread's too, and would count twice in the thread's bytes below.)
    big = {
        "from": {"userId": "ed", "bio": "y" * 15_000}, "context": {"notes": "z" * 15_000}, "commentText": "t" * 20_000
    }
    result(_add(client, t, _thread("a1", big)))
    edit = post(client, f"{BASE}/comments/update",
                {**DOC, "annotationId": "a1", "commentIds": [1], "updatedData": {"commentHtml": "h" * 20_000}},
                t.headers)
    assert issue_paths(error(edit, "INVALID_ARGUMENT", 400)) == [["updatedData"]]
    (kept, ) = result(post(client, f"{BASE}/comments/get", {**DOC, "annotationId": "a1"}, t.headers))
    assert "commentHtml" not in kept and not kept["isEdited"]

    # A thread holds at most COLLAB_COMMENTS_MAX_THREAD_BYTES: new threads, new comments and grown fields alike.
    tune(comments_max_thread_bytes=120_000)
    reply = {"from": {"userId": "ed"}, "commentText": "r" * 20_000, "commentHtml": "r" * 20_000}
    refused = error(_add(client, t, _thread("a2", *[reply] * 5)), "INVALID_ARGUMENT", 400)
    assert issue_paths(refused) == [["commentAnnotations", "0"]] and "120000 bytes" in refused["message"]
    result(post(client, f"{BASE}/comments/add", {**DOC, "annotationId": "a1", "commentData": [reply]}, t.headers))
    refused = post(client, f"{BASE}/comments/add", {**DOC, "annotationId": "a1", "commentData": [reply]}, t.headers)
    assert issue_paths(error(refused, "INVALID_ARGUMENT", 400)) == [["commentData"]]
    grown = post(client, f"{BASE}/update",
                 {**DOC, "annotationIds": ["a1"], "updatedData": {"context": {"c": "c" * 16_000}}}, t.headers)
    assert issue_paths(error(grown, "INVALID_ARGUMENT", 400)) == [["updatedData"]]
    (thread, ) = result(post(client, f"{BASE}/get", {"organizationId": "org", "annotationIds": ["a1"]}, t.headers))
    assert "context" not in thread and [c["commentId"] for c in thread["comments"]] == [1, 2]
    assert _held(db, t) == {"threads": 1, "comments": 2}


def _pages(client, t, path, body):
    """Every page of a list, each checked against the budget on the wire."""
    pages = []
    while True:
        response = post(client, path, body, t.headers)
        assert len(response.content) <= BUDGET + 512, len(response.content)  # the envelope around data
        page = response.json()["result"]
        pages.append(page["data"])
        if not page["pageToken"]:
            return pages
        body = {**body, "pageToken": page["pageToken"]}


BUDGET = 64 * KIB


def test_reads_stay_within_the_response_budget_and_page_inside_a_thread(client, tune):
    t = _setup(client)
    tune(max_response_bytes=BUDGET)
    comment = lambda n: {"from": {"userId": "ed"}, "commentText": f"{n} " + "w" * 10_000}  # noqa: E731
    result(_add(client, t, _thread("big", *[comment(n) for n in range(20)])))  # ~200 KB: no page holds it whole
    # The thread comes with the comments that fit, and says where the rest is.
    (first, ) = _pages(client, t, f"{BASE}/get", {"organizationId": "org", "annotationIds": ["big"]})
    (thread, ) = first
    shown = [c["commentId"] for c in thread["comments"]]
    assert 0 < len(shown) < 20 and thread["commentsPageToken"]
    rest = _pages(client, t, f"{BASE}/comments/get",
                  {**DOC, "annotationId": "big", "pageToken": thread["commentsPageToken"]})
    assert len(rest) >= 2  # paged inside the thread too
    assert shown + [c["commentId"] for page in rest for c in page] == list(range(1, 21))
    # comments/get from the start pages the same way; a page size still caps the count.
    pages = _pages(client, t, f"{BASE}/comments/get", {**DOC, "annotationId": "big"})
    assert [c["commentId"] for page in pages for c in page] == list(range(1, 21))
    some = {**DOC, "annotationId": "big", "commentIds": [2, 5, 9], "pageSize": 2}
    assert [len(p) for p in _pages(client, t, f"{BASE}/comments/get", some)] == [2, 1]
    # Threads that fit come whole, as many as the budget takes, the page token going on after the last.
    for n in range(4):
        result(_add(client, t, _thread(f"t{n}", *[comment(n) for n in range(2)])))
    pages = _pages(client, t, f"{BASE}/get", {"organizationId": "org", "order": "asc"})
    threads = [a for page in pages for a in page]
    assert [a["annotationId"] for a in threads] == ["big", "t0", "t1", "t2", "t3"]
    assert all(len(a["comments"]) == 2 and "commentsPageToken" not in a for a in threads[1:])
    assert max(len(page) for page in pages) > 1


def test_user_data_export_pages_comments_by_bytes(client, tune):
    t = _setup(client)
    tune(max_response_bytes=BUDGET)
    result(_add(client, t, _thread("big", *[{"from": {"userId": "ed"}, "commentText": "v" * 12_000}] * 12)))
    pages = _pages(client, t, "/v2/users/data/get", {"userIds": ["ed"]})
    comments = [r for page in pages for r in page if r["type"] == "comment"]
    assert len(pages) > 2 and [r["record"]["comment"]["commentId"] for r in comments] == list(range(1, 13))
    assert json.dumps(pages).count('"type": "comment"') == 12


def _reaction_sizes(db, t):
    """Each comment's stored reaction share beside the one its reactions make now."""
    return db.execute(
        "select c.id, c.reaction_bytes as kept, coalesce((select sum(comment_reaction_bytes(r.reaction, r.user_id))"
        " from comment_reactions r where r.api_key_id = c.api_key_id and r.organization_id = c.organization_id"
        " and r.annotation_id = c.annotation_id and r.comment_id = c.id), 0) as made"
        " from comments c where c.api_key_id = %(k)s order by c.id", {"k": t.api_key}).fetchall()


def test_a_comments_size_follows_every_change_of_its_reactions(client, db, live):
    """Reactions count in a comment's stored size whatever statement changes them: a reaction added or taken back,
    a user renamed over a reaction the new id had made already, a user's data deleted."""
    from support.helpers import settle_jobs

    t = _setup(client)
    result(
        _add(
            client, t,
            _thread("a1", {"commentText": "x", "from": {"userId": "ed"}},
                    {"commentText": "y", "from": {"userId": "ed"}})))
    where = {**DOC, "annotationId": "a1"}
    steps = [(1, "👍", "old"), (1, "🎉", "old"), (1, "👍", "new"), (2, "👍", "old"), (2, "x" * 60, "gone")]
    for comment, reaction, user in steps:
        result(
            post(client, f"{BASE}/comments/reactions/add",
                 {**where, "commentId": comment, "reaction": reaction, "userId": user}, t.headers))
    result(
        post(client, f"{BASE}/comments/reactions/delete", {**where, "commentId": 1, "reaction": "🎉", "userId": "old"},
             t.headers))
    rename = {"updateUsers": [{"from": {"userId": "old"}, "to": {"userId": "new"}}]}
    result(post(client, f"{BASE}/update", {**DOC, **rename}, t.headers))
    assert (post(client, "/v2/users/data/delete", {"userIds": ["gone"], "organizationIds": ["org"]},
                 t.headers).status_code == 202)
    settle_jobs(live, t)
    sizes = _reaction_sizes(db, t)
    assert [s["kept"] for s in sizes] == [s["made"] for s in sizes] and all(s["kept"] > 0 for s in sizes)
