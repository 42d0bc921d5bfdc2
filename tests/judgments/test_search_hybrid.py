"""Hybrid search (identifiers, a repeated text first), full pages in a tiny organization past the exact threshold, bound
page tokens."""

import pytest

from support.factories import add_activities, judged
from support.helpers import enable_activities, error, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")  # derives judgments, embeds or searches (conftest.py)

SEARCH = "/v2/memory/search"


def add(client, t, activities, **where):
    return result(add_activities(client, t, *activities, **where))


def ids(client, t, **data):
    response = post(client, SEARCH, data, t.headers)
    assert response.status_code == 200, response.text
    return [r["recordId"] for r in response.json()["result"]["results"]]


def test_an_exact_identifier_is_found_though_the_vector_ranks_it_low(client, live):
    t = new_tenant(client)
    enable_activities(client, t)
    notes = [
        judged(f"n{i}", f"Security exception SEC-{4400 + i} was reviewed: access logging is missing.")
        for i in range(20)
    ]
    notes.append(judged("target", "Approved once the vendor showed the retention policy; see SEC-4471."))
    add(client, t, notes)
    settle_jobs(live, t)
    settings = live.svc.settings
    try:
        settings.search_lexical_weight = 0  # vector only: the many look-alike tickets crowd it out
        assert "target" not in ids(client, t, query="SEC-4471 security exception", limit=3)
    finally:
        settings.search_lexical_weight = 1.0
    assert "target" in ids(client, t, query="SEC-4471 security exception", limit=3)
    found = post(client, SEARCH, {"query": "SEC-4471", "limit": 1}, t.headers).json()["result"]["results"][0]
    assert found["recordId"] == "target" and -1 <= found["similarity"] <= 1  # still the cosine


# Near-duplicates: each pair shares most of its words, and for some the model puts the other one first when the
# reasoning is searched without its decision ("Missing alt text" is nearer "approved: Missing alt text was added"
# than "rejected: Missing alt text").
NEAR = [("good", "approve", "Looks good."), ("good-but", "reject", "Looks good, but the footer link is broken."),
        ("ret", "add", "Retention is 30 days."), ("ret-not", "reject", "Retention is 30 days, not 90."),
        ("alt", "reject", "Missing alt text"), ("alt-added", "approve", "Missing alt text was added"),
        ("ship", "approve", "Ship it"), ("ship-after", "add", "Ship it after the freeze")]
DECISIONS = {"approve": "approved", "reject": "rejected", "add": "comment"}


def test_a_judgment_searched_by_its_own_text_comes_first_in_every_scope(client, live):
    t = new_tenant(client)
    enable_activities(client, t)
    for org, doc in (("org1", "doc1"), ("org1", "doc2"), ("org2", "doc1")):  # each pair in three places
        add(client, t, [
            judged(f"{record_id}-{org}-{doc}", reasoning, action=f"comment_annotation.{action}")
            for record_id, action, reasoning in NEAR
        ], org=org, doc=doc)
    settle_jobs(live, t)
    for record_id, action, reasoning in NEAR:
        # As the reviewer wrote it, with its spacing and case changed, and as it is stored ("rejected: ...").
        for query in (reasoning, f"  {reasoning.upper()}\n", f"{DECISIONS[action]}: {reasoning}"):
            for scope, where in ((("org2", "doc1"), {}), (("org1", "doc2"), {"organizationId": "org1"}),
                                 (("org1", "doc1"), {"organizationId": "org1", "documentId": "doc1"})):
                found = ids(client, t, query=query, limit=3, **where)
                # Tenant-wide the three copies tie on text: the newest (added last) leads.
                assert found[0].startswith(f"{record_id}-"), (query, where, found)
                assert found[0] == f"{record_id}-{scope[0]}-{scope[1]}", (query, where, found)


def test_its_own_text_leads_even_where_its_vector_says_otherwise(client, live, db):
    # Prose (no lexical arm) whose stored vector no longer matches its text: an approximate index, half
    # precision or another build of the model drift it. Here it is the vector of an unrelated judgment, so by
    # meaning the near-duplicate wins; by text it is the one that was searched.
    t = new_tenant(client)
    enable_activities(client, t)
    target = ("The vendor's SOC 2 report expired in March, so the renewal stays blocked until the auditors send the "
              "new one and security has read its exceptions section.")
    twin = ("The vendor's SOC 2 report expired in March; the renewal is approved anyway because the auditors sent "
            "a bridge letter and security read its exceptions section.")
    add(client, t, [
        judged("target", target),
        judged("twin", twin, action="comment_annotation.approve"),
        judged("other", "The hero image on the pricing page is blurry on retina screens; re-export it at 2x.")
    ])
    settle_jobs(live, t)
    db.execute(
        "update judgment_embeddings e set embedding = o.embedding from judgment_embeddings o "
        "where e.api_key_id = %(key)s and e.judgment_id = 'target' and o.api_key_id = %(key)s "
        "and o.judgment_id = 'other' and o.kind = e.kind and o.model = e.model", {"key": t.api_key})
    for query in (target, f"rejected: {target}", target.replace(" ", "  ").lower()):
        assert ids(client, t, query=query, limit=2) == ["target", "twin"]
        assert ids(client, t, query=query, limit=2, organizationId="org1", documentId="doc1") == ["target", "twin"]
    assert ids(client, t, query=twin, limit=1) == ["twin"]


def test_a_tiny_organization_in_a_large_table_gets_full_pages(client, live, db):
    t = new_tenant(client)
    enable_activities(client, t)
    model = db.execute("select name, dimensions from embedding_models where active").fetchone()
    # 30 rows of 6,000 (0.5%), above a lowered exact threshold: HNSW with a narrow beam, which only fills the
    # page when the scan goes on past the beam (pgvector 0.8's iterative scans); pgvector 0.6 filtered after it.
    db.execute(
        """
        with ids as (select g, 't' || g as id, case when g <= 30 then 'tiny' else 'big' end as org
                     from generate_series(1, 6000) g),
        a as (insert into activities (api_key_id, id, organization_id, document_id, feature_type, action_type,
                                      action_user, "timestamp")
              select %(key)s, id, org, 'doc1', 'comment', 'comment.add', '{"userId": "x"}', g from ids
              returning id, organization_id),
        j as (insert into judgments (api_key_id, id, organization_id, document_id, decision, judge_type, reasoning,
                                     confidence, action_user, created_at)
              select %(key)s, id, organization_id, 'doc1', 'comment', 'human', 'note ' || id, 1, '{"userId": "x"}', 1
              from a returning id, organization_id)
        insert into judgment_embeddings (api_key_id, judgment_id, kind, model, content_hash, organization_id,
                                         document_id, embedding)
        select %(key)s, id, 'review', %(model)s, 'h', organization_id, 'doc1',
               (select array_agg(random() - 0.5)::vector from generate_series(1, %(dims)s) where j.id is not null)
        from j
        """, {"key": t.api_key, "model": model["name"], "dims": model["dimensions"]})
    settings = live.svc.settings
    settings.search_exact_threshold, settings.search_ef_search_max = 20, 40
    try:
        for query in ("pricing page review", "contrast of the buttons", "legal disclaimer"):
            found = ids(client, t, query=query, organizationId="tiny", limit=10)
            assert len(found) == 10 and all(int(i[1:]) <= 30 for i in found)
            assert len(ids(client, t, query=query, organizationId="tiny", limit=50)) == 30
    finally:
        settings.search_exact_threshold, settings.search_ef_search_max = 20_000, 1000


def test_a_judgments_page_token_only_continues_its_own_filters(client, live):
    t = new_tenant(client)
    enable_activities(client, t)
    add(client, t,
        [judged(f"r{i}", f"note {i}")
         for i in range(4)] + [judged(f"a{i}", f"ok {i}", action="comment_annotation.approve") for i in range(4)])
    settle_jobs(live, t)
    path = "/v2/memory/judgments/query"
    first = post(client, path, {"decision": "rejected", "pageSize": 2}, t.headers).json()["result"]
    assert len(first["data"]) == 2 and first["pageToken"]
    rest = post(client, path, {"decision": "rejected", "pageSize": 2, "pageToken": first["pageToken"]}, t.headers)
    assert {r["recordId"] for r in first["data"] + rest.json()["result"]["data"]} == {f"r{i}" for i in range(4)}
    for other in ({"decision": "approved"}, {}, {"decision": "rejected", "organizationId": "org1"}):
        response = post(client, path, {**other, "pageSize": 2, "pageToken": first["pageToken"]}, t.headers)
        assert error(response, "INVALID_ARGUMENT")["details"]["issues"][0]["path"] == ["pageToken"]


def test_a_megabytes_long_reasoning_is_derived_and_searchable_with_its_batch(client, live):
    t = new_tenant(client)
    enable_activities(client, t)
    # ~2 MB of distinct words: their lexemes pass tsvector's 1 MiB limit, which once failed the whole batch.
    words = " ".join(f"w{i:06d}" for i in range(260_000))
    add(client, t, [
        judged("long", f"Rejected after the audit: {words}"),
        judged("ticket", "Approved once the vendor showed the retention policy; see SEC-5001.", target="ann2"),
        judged("alt", "The hero image has no alt text, screen readers skip it.", target="ann3")
    ])
    settle_jobs(live, t)
    assert ids(client, t, query="w000042", limit=1) == ["long"]
    assert ids(client, t, query="SEC-5001", limit=1) == ["ticket"]
    assert "alt" in ids(client, t, query="missing alt text on the hero image", limit=2)


def test_the_lexical_arm_ranks_only_its_first_matches(client, live):
    t = new_tenant(client)
    enable_activities(client, t)
    add(client, t, [judged(f"m{i}", f"Checked against control A.12.4 on page {i}.") for i in range(8)])
    settle_jobs(live, t)
    settings = live.svc.settings
    try:
        settings.search_vector_weight = 0  # the lexical ranking alone
        assert len(ids(client, t, query="A.12.4", limit=10)) == 8
        settings.search_lexical_candidates = 3  # a word this common: only the first 3 matches are ranked
        assert len(ids(client, t, query="A.12.4", limit=10)) == 3
    finally:
        settings.search_vector_weight, settings.search_lexical_candidates = 1.0, 1000


def test_a_stored_text_the_query_repeats_comes_first(client, live, db):
    t = new_tenant(client)
    enable_activities(client, t)
    reasoning = "The retry limit of 300 requests per minute is too low for the nightly batch importer; raise it."
    # Shorter texts sharing the identifier rank above it lexically (by term density); the near-duplicate is also
    # second by vector, so by ranks alone (1/62 + 1/61 against 1/61 + 1/63) it would win.
    add(client, t, [
        judged("long", reasoning),
        judged("near", "Retry limit of 300 requests per minute is too low."),
        judged("other", "Ticket 300 about the importer needs a follow-up review next week.")
    ])
    settle_jobs(live, t)
    decision = db.execute("select decision from judgments where api_key_id = %s and id = 'long'",
                          (t.api_key, )).fetchone()
    exact = f"{decision['decision']}: {reasoning}"  # the text that was embedded
    assert ids(client, t, query=exact, limit=3)[0] == "long"
    assert ids(client, t, query="300", limit=1) != ["long"]  # by the identifier alone, the lexical order stands
