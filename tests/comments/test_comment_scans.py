"""Bounded scans of comment reads (issue #34, part of item 9): count/get counts at most
COLLAB_COMMENTS_COUNT_MAX_THREADS threads and says so rather than scanning an organization's every thread; thread
pages are read in index order, for one document and for a whole organization, both ways."""

import json

from support.helpers import add_organization, error, issue_paths, new_tenant, post, result

BASE = "/v2/commentannotations"


def _threads(client, t, document, count, prefix):
    threads = [{"annotationId": f"{prefix}{n}", "commentData": [{"commentText": "hi", "from": {"userId": "ed"}}]}
               for n in range(count)]
    result(
        post(client, f"{BASE}/add", {"organizationId": "org", "documentId": document, "commentAnnotations": threads},
             t.headers))


def test_count_reads_at_most_the_configured_threads(client, tune):
    t = new_tenant(client)
    add_organization(client, t, "org", "small", "large")
    _threads(client, t, "small", 2, "s")
    _threads(client, t, "large", 3, "l")
    tune(comments_count_max_threads=4)
    whole = post(client, f"{BASE}/count/get", {"organizationId": "org", "userId": "jo"}, t.headers)
    refused = error(whole, "INVALID_ARGUMENT", 400)
    assert issue_paths(refused) == [["documentIds"]] and "at most 4" in refused["message"]
    named = {"organizationId": "org", "userId": "jo", "documentIds": ["small", "large"]}
    refused = error(post(client, f"{BASE}/count/get", named, t.headers), "INVALID_ARGUMENT")
    assert "fewer documents" in refused["message"]
    counted = result(post(client, f"{BASE}/count/get", {**named, "documentIds": ["small"]}, t.headers))
    assert counted == {"small": {"total": 2, "unread": 2, "unreadComments": 2}}
    tune(comments_count_max_threads=5)
    assert (result(post(client, f"{BASE}/count/get", {"organizationId": "org", "userId": "jo"},
                        t.headers))["large"]["total"] == 3)


def _plan(db, t, **where):
    """The plan Postgres makes for a thread page of this tenant (sorts and scans off where an index can serve)."""
    from collab.comments.repository import plan_query  # the statement the service runs

    params = (dict(api_key_id=t.api_key, organization_id="org", document_id=None, document_ids=None, folder_id=None,
                   annotation_ids=None, location_ids=None, user_ids=None, assigned_ids=None, status_ids=None,
                   resolved_by=None, mentioned_ids=None, created_after=None, created_before=None, updated_after=None,
                   updated_before=None, viewer=None, after_ts=None, after_id=None, limit=101, rows=1000, agent_id=None,
                   execution_id=None, agent_type=None, agent_source=None, agent_suggestions=False, agent_comments=False)
              | where)
    query = plan_query(params.pop("desc", True)).as_string(db)
    db.execute("set enable_seqscan = off")
    db.execute("set enable_sort = off")  # a full Sort left in the plan means no index can give the order
    try:
        (plan, ) = db.execute("explain (format json) " + query, params).fetchone().values()
    finally:
        db.execute("reset enable_seqscan")
        db.execute("reset enable_sort")
    return json.dumps(plan)


def test_thread_pages_are_read_in_index_order(client, db):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc", "other")
    _threads(client, t, "doc", 3, "d")
    _threads(client, t, "other", 2, "o")
    for where in ({}, {"desc": False}, {"document_id": "doc"},
                  {"document_id": "doc", "desc": False, "after_ts": 0, "after_id": ""}):
        plan = _plan(db, t, **where)
        assert '"Node Type": "Sort"' not in plan, (where, plan)
        assert "comment_annotations_updated_idx" in plan or "comment_annotations_document_idx" in plan
    # And the pages themselves, over HTTP, in that order both ways.
    newest = result(post(client, f"{BASE}/get", {"organizationId": "org", "pageSize": 2}, t.headers))
    oldest = result(post(client, f"{BASE}/get", {"organizationId": "org", "order": "asc", "pageSize": 2}, t.headers))
    assert [a["annotationId"] for a in newest] != [a["annotationId"] for a in oldest]
