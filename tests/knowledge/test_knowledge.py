"""memory/knowledge/*: ingest → status → search → update → delete through velt-py, the signed upload and
download URLs, the rules by the model, tenant isolation, bad input, and what agent executions are given."""

import base64
import json
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from velt_py.models.memory import (
    DeleteKnowledgeRequest,
    DownloadCanonicalMarkdownRequest,
    GetIngestStatusRequest,
    GetUploadUrlRequest,
    IngestKnowledgeRequest,
    ListExtractedRulesRequest,
    ListKnowledgeSourcesRequest,
    SearchKnowledgeRequest,
    UpdateKnowledgeRequest,
)

from collab.knowledge import retrieval
from collab.knowledge.reembed import reembed_knowledge
from collab.knowledge.tasks import knowledge_sweep
from support.embedders import Counting
from support.helpers import error, issue_paths, new_tenant, post, result, settle_jobs

pytestmark = pytest.mark.usefixtures("embedding_model")
K = "/v2/memory/knowledge"
GUIDE = b"""# Brand Guidelines

## Claims
- Medical claims must cite a peer-reviewed source.
- Never promise a cure.

## Images
- All images must be WEBP, at most 1200 pixels wide.
- Ensure every image has alt text.
"""
PROSE = b"""Our audience is enterprise buyers in regulated industries.

They read long documents carefully and prefer plain words to slogans. The company was founded in 1999."""


@pytest.fixture(autouse=True)
def served_here(tune, live):
    """The signed URLs point at the test's service."""
    tune(public_url=live.url)


def inline(data: bytes, mime: str = "text/markdown", name: str = "guide.md", **more):
    return {
        "source": "inline",
        "file": {"base64": base64.b64encode(data).decode(), "mimeType": mime, "fileName": name,
                 "fileSize": len(data)}, **more
    }


def ingest(client, t, data: bytes = GUIDE, **more) -> str:
    answer = res(post(client, f"{K}/ingest", inline(data, **more), t.headers))
    assert answer["status"] == "processing" and answer["message"] == "Knowledge ingestion task enqueued."
    return answer["sourceId"]


def res(response: httpx.Response):
    """The `result` of a knowledge answer (Velt's `{result: ...}`, without status and message)."""
    assert response.status_code == 200, response.text
    return response.json()["result"]


def call(client, t, op: str, **data):
    return post(client, f"{K}/{op}", data, t.headers)


def test_a_source_through_velt_py(client, sdk, live):
    t = new_tenant(client)
    memory = sdk(t).api.memory
    started = memory.ingestKnowledge(IngestKnowledgeRequest(**inline(GUIDE)))["result"]
    source = started["sourceId"]
    assert memory.getIngestStatus(GetIngestStatusRequest(sourceId=source))["result"]["status"] == "processing"
    settle_jobs(live, t)
    status = memory.getIngestStatus(GetIngestStatusRequest(sourceId=source))["result"]
    assert status["status"] == "completed" and status["mimeType"] == "text/markdown"
    assert status["extractedRulesCount"] == 4 and status["chunkCount"] >= 1
    canonical = httpx.get(status["canonicalMdDownloadUrl"])
    assert canonical.status_code == 200 and "Never promise a cure." in canonical.text
    assert httpx.get(status["originalDownloadUrl"]).content == GUIDE

    listed = memory.listKnowledgeSources(ListKnowledgeSourcesRequest())["result"]
    assert [(s["id"], s["fileName"], s["embeddingStatus"], s["ruleCount"])
            for s in listed] == [(source, "guide.md", "completed", 4)]
    rules = memory.listExtractedRules(ListExtractedRulesRequest(sourceId=source))["result"]
    assert [(r["content"], r["category"], r["index"])
            for r in rules][:2] == [("Medical claims must cite a peer-reviewed source.", "Claims", 0),
                                    ("Never promise a cure.", "Claims", 1)]
    found = memory.searchKnowledge(SearchKnowledgeRequest(query="image file format and width", limit=3))["result"]
    assert found["recordsSearched"] == len(found["results"]) >= 1
    assert set(found["results"][0]) == {"sourceId", "text", "score"} and found["results"][0]["sourceId"] == source
    both = memory.searchKnowledge(
        SearchKnowledgeRequest(query="image file format and width", includeRules=True, limit=2))["result"]
    assert both["results"][0]["kind"] == "rule" and "WEBP" in both["results"][0]["text"]
    assert both["results"][0]["category"] == "Images" and both["recordsSearched"] == 2
    assert memory.downloadCanonicalMarkdown(
        DownloadCanonicalMarkdownRequest(sourceId=source))["result"].startswith("# Brand Guidelines")

    updated = memory.updateKnowledge(
        UpdateKnowledgeRequest(
            sourceId=source, newContent="# Brand Guidelines v2\n\n- Never promise a cure\n"
            "- Prices must include tax.\n- Ensure every image has alt text.\n"))["result"]
    assert updated == {
        "diff": {
            "added": ["Prices must include tax."], "removed": [
                "Medical claims must cite a peer-reviewed source.", "All images must be WEBP, at most 1200 pixels wide."
            ], "unchanged": 2
        }, "newVersion": 2
    }
    assert "Prices must include tax." in memory.downloadCanonicalMarkdown(
        DownloadCanonicalMarkdownRequest(sourceId=source))["result"]

    deleted = memory.deleteKnowledge(DeleteKnowledgeRequest(sourceId=source))["result"]
    assert deleted["status"] == "deleted" and deleted["deletedRules"] == 3 and deleted["deletedChunks"] >= 1
    assert memory.listKnowledgeSources(ListKnowledgeSourcesRequest())["result"] == []
    assert memory.getIngestStatus(GetIngestStatusRequest(sourceId=source))["error"]["status"] == "NOT_FOUND"
    assert memory.searchKnowledge(SearchKnowledgeRequest(query="images"))["result"]["results"] == []
    # The download URLs of a deleted source open nothing.
    assert httpx.get(status["canonicalMdDownloadUrl"]).status_code == 403

    # By reference: upload URL, PUT, ingest once.
    slot = memory.getUploadUrl(
        GetUploadUrlRequest(mimeType="text/plain", fileSize=len(PROSE), fileName="brief.txt",
                            organizationId="org1"))["result"]
    assert slot["fileRef"].startswith("collab://uploads/") and slot["expiresAt"] > 0
    put = httpx.put(slot["uploadUrl"], content=PROSE, headers={"Content-Type": "text/plain"})
    assert put.status_code == 200
    by_ref = memory.ingestKnowledge(
        IngestKnowledgeRequest(source="fileRef", fileRef=slot["fileRef"], mimeType="text/plain",
                               organizationId="org1"))["result"]
    again = memory.ingestKnowledge(
        IngestKnowledgeRequest(source="fileRef", fileRef=slot["fileRef"], mimeType="text/plain", organizationId="org1"))
    assert again["error"]["status"] == "FAILED_PRECONDITION"
    settle_jobs(live, t)
    prose = memory.getIngestStatus(GetIngestStatusRequest(sourceId=by_ref["sourceId"]))["result"]
    assert prose["status"] == "completed" and prose["extractedRulesCount"] == 0
    refused = memory.updateKnowledge(UpdateKnowledgeRequest(sourceId=by_ref["sourceId"], newContent="- Must x"))
    assert refused["error"] == {
        "status": "FAILED_PRECONDITION", "message": "Version diff is only supported for rule-based knowledge sources."
    }


def test_rules_by_the_model(client, live, llm):
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-knowledge"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    llm.responder = lambda provider, body: json.dumps({
        "rules": [{"content": "Cite a peer-reviewed source for every medical claim.", "category": "Claims"},
                  {"content": "Cite a peer-reviewed source for every medical claim", "category": "Claims"}]
    })
    source = ingest(client, t)
    settle_jobs(live, t)
    rules = res(call(client, t, "rules", sourceId=source))
    assert [r["content"] for r in rules] == ["Cite a peer-reviewed source for every medical claim."]
    sent = llm.of("openai")[-1]["json"]["messages"][-1]["content"]
    assert "(Claims) Never promise a cure." in sent
    assert llm.of("openai")[-1]["headers"]["authorization"] == "Bearer sk-openai-knowledge"


def test_bad_input_answers_with_paths_relative_to_data(client):
    t = new_tenant(client)
    wrong = inline(GUIDE, mime="application/pdf", name="guide.pdf")
    assert issue_paths(error(post(client, f"{K}/ingest", wrong, t.headers),
                             "INVALID_ARGUMENT")) == [["file", "mimeType"]]
    assert issue_paths(error(call(client, t, "ingest", source="inline"), "INVALID_ARGUMENT")) == [["file"]]
    assert issue_paths(error(call(client, t, "ingest", source="fileRef"), "INVALID_ARGUMENT")) == [["fileRef"],
                                                                                                   ["mimeType"]]
    assert issue_paths(error(post(client, f"{K}/ingest", inline(GUIDE, documentId="d"), t.headers),
                             "INVALID_ARGUMENT")) == [["documentId"]]
    docx = inline(b"PK\x03\x04", mime="application/msword", name="x.doc")
    assert issue_paths(error(post(client, f"{K}/ingest", docx, t.headers),
                             "INVALID_ARGUMENT")) == [["file", "mimeType"]]
    not_utf8 = inline(b"caf\xe9 must be", mime="text/plain", name="x.txt")
    error(post(client, f"{K}/ingest", not_utf8, t.headers), "INVALID_ARGUMENT")
    assert ["includeRules"
            ] in issue_paths(error(call(client, t, "search", query="q", includeRules="true"), "INVALID_ARGUMENT"))
    assert ["organizationId"
            ] in issue_paths(error(call(client, t, "search", query="q", organizationId="o"), "INVALID_ARGUMENT"))
    assert ["sourceId"] in issue_paths(error(call(client, t, "delete", sourceID="x"), "INVALID_ARGUMENT"))
    assert ["limit"] in issue_paths(error(call(client, t, "search", query="q", limit=51), "INVALID_ARGUMENT"))
    assert ["fileSize"] in issue_paths(
        error(call(client, t, "upload-url", mimeType="text/plain", fileSize=31_457_281), "INVALID_ARGUMENT"))
    assert ["newContent"
            ] in issue_paths(error(call(client, t, "update", sourceId="s", newContent=""), "INVALID_ARGUMENT"))
    assert error(call(client, t, "update", sourceId="src_missing", newContent="x"), "NOT_FOUND")
    assert res(call(client, t, "download", sourceId="src_missing")) is None
    # Sources of other keys, unknown ones and a list of them narrow a search to nothing.
    assert res(call(client, t, "search", query="q", sourceId=["a", "b"]))["results"] == []


def test_upload_urls_refuse_without_their_signature(client, live):
    t = new_tenant(client)
    slot = res(call(client, t, "upload-url", mimeType="text/plain", fileSize=10))
    tampered = slot["uploadUrl"][:-3] + ("AAA" if not slot["uploadUrl"].endswith("AAA") else "BBB")
    assert httpx.put(tampered, content=b"hello", headers={"Content-Type": "text/plain"}).status_code == 403
    assert httpx.put(slot["uploadUrl"], content=b"hello", headers={"Content-Type": "text/csv"}).status_code == 403
    assert httpx.get(live.url + "/knowledge/files/x.y").status_code == 403
    # Never uploaded: the ref cannot be ingested yet; another tenant's ref is refused as not theirs.
    never = error(call(client, t, "ingest", source="fileRef", fileRef=slot["fileRef"], mimeType="text/plain"),
                  "FAILED_PRECONDITION")
    assert "never uploaded" in never["message"]
    other = new_tenant(client)
    error(call(client, other, "ingest", source="fileRef", fileRef=slot["fileRef"], mimeType="text/plain"),
          "PERMISSION_DENIED")
    error(
        call(client, t, "ingest", source="fileRef", fileRef=slot["fileRef"], mimeType="text/plain", organizationId="o"),
        "PERMISSION_DENIED")


def test_uploaded_bytes_never_ingested_are_dropped_after_their_url(client, live, clock, db):
    t = new_tenant(client)
    clock["now"] = datetime.now(timezone.utc).timestamp()
    slot = res(call(client, t, "upload-url", mimeType="text/plain", fileSize=len(PROSE)))
    assert httpx.put(slot["uploadUrl"], content=PROSE, headers={"Content-Type": "text/plain"}).status_code == 200
    upload_id = slot["fileRef"].rsplit("/", 1)[-1]
    live.run(knowledge_sweep({"svc": live.svc}))
    assert db.execute("select count(*) as n from knowledge_uploads where id = %s", (upload_id, )).fetchone()["n"] == 1
    clock["now"] += 2 * 86_400 + 900  # a day past the URL's expiry
    live.run(knowledge_sweep({"svc": live.svc}))
    assert db.execute("select count(*) as n from knowledge_uploads where id = %s", (upload_id, )).fetchone()["n"] == 0
    # Removed, the ref reads as any ref that is not the workspace's.
    gone = error(call(client, t, "ingest", source="fileRef", fileRef=slot["fileRef"], mimeType="text/plain"),
                 "PERMISSION_DENIED")
    assert gone["message"] == "The fileRef does not belong to this workspace (or expired more than a day ago)."


def test_tenants_see_only_their_own_sources(client, live):
    a, b = new_tenant(client), new_tenant(client)
    source = ingest(client, a)
    settle_jobs(live, a)
    for op in ("ingest-status", "rules", "delete", "update"):
        error(call(client, b, op, sourceId=source, **({"newContent": "- Must x"} if op == "update" else {})),
              "NOT_FOUND")
    assert res(call(client, b, "download", sourceId=source)) is None
    assert res(call(client, b, "list")) == []
    assert res(call(client, b, "search", query="images", sourceId=source))["results"] == []
    assert res(call(client, b, "search", query="images", includeRules=True))["results"] == []
    assert res(call(client, a, "ingest-status", sourceId=source))["status"] == "completed"


def test_extraction_files_are_listed_as_sources(client, live, llm):
    from collab.testing import fake_models

    llm.responder = fake_models.answer
    t = new_tenant(client)
    body = {"aiModelApiKey": [{"provider": "openai", "customerApiKey": "sk-openai-x"}]}
    result(post(client, "/v2/workspace/apikeyconfig/update", body, t.headers))
    csv = b"Category,Check\nClaims,Every price claim states whether tax is included\n"
    extracted = result(
        post(
            client, "/v2/agents/extract", {
                "fileBase64": base64.b64encode(csv).decode(), "mimeType": "text/csv", "provider": "openai",
                "fileName": "checks.csv"
            }, t.headers))["extractionResult"]
    source = extracted["memory"]["sourceId"]
    listed = res(call(client, t, "list"))
    assert [(s["id"], s["sourceType"], s["embeddingStatus"], s["fileName"])
            for s in listed] == [(source, "extraction", "completed", "checks.csv")]
    assert "price claim" in res(call(client, t, "download", sourceId=source))


def test_retrieval_and_agent_context(client, live):
    t = new_tenant(client)
    key_wide = ingest(client, t)
    scoped = ingest(client, t, data=b"# Org rules\n\n- Headlines must be in sentence case.\n- Never use all caps.\n",
                    organizationId="org1", documentId="doc1")
    settle_jobs(live, t)

    async def read(org, doc):
        async with live.svc.pool.connection() as conn:
            return await retrieval.rules(conn, api_key_id=t.api_key, organization_id=org, document_id=doc, limit=50)

    assert {r["sourceId"] for r in live.run(read(None, None), timeout=30)} == {key_wide}
    assert {r["sourceId"] for r in live.run(read("org1", "doc1"), timeout=30)} == {key_wide, scoped}
    assert {r["sourceId"] for r in live.run(read("org1", "doc2"), timeout=30)} == {key_wide}
    ctx = {"svc": live.svc}
    found = live.run(
        retrieval.passages(ctx, api_key_id=t.api_key, query="headline capitalisation", organization_id="org1",
                           document_id="doc1", limit=5), timeout=60)
    assert found[0]["sourceId"] == scoped and set(found[0]) == {"sourceId", "chunkId", "fileName", "text", "similarity"}
    assert all(r["sourceId"] != scoped for r in live.run(
        retrieval.passages(ctx, api_key_id=t.api_key, query="headline", organization_id=None, document_id=None,
                           limit=5), timeout=60))

    async def since(when):
        async with live.svc.pool.connection() as conn:
            return await retrieval.updated_since(conn, api_key_id=t.api_key, since=when)

    now = datetime.now(timezone.utc)
    assert live.run(since(now - timedelta(hours=48)), timeout=30) is True
    assert live.run(since(now + timedelta(hours=1)), timeout=30) is False


def test_agent_prompt_gets_the_scope_rules():
    from collab.agents.runner import with_knowledge

    rules = [{"text": "Never promise a cure.", "category": "Claims"}, {"text": "Use WEBP.", "category": None}]
    assert with_knowledge("Check claims.", rules) == ("Check claims.\n\nWorkspace knowledge rules that also apply to "
                                                      "this content:\n- Never promise a cure. [Claims]\n- Use WEBP.")
    assert with_knowledge("Check claims.", []) == "Check claims."


def test_reembed_gives_chunks_and_rules_the_new_models_vectors(client, live, db):
    t = new_tenant(client)
    ingest(client, t)
    settle_jobs(live, t)
    model = Counting(f"copy-{datetime.now().timestamp():.0f}")
    db.execute("insert into embedding_models (name, source, dimensions) values (%s, 'default', 384)", (model.name, ))
    counts = live.run(reembed_knowledge(live.svc, model, batch_size=2, only=t.api_key))
    stored = {
        table: db.execute(f"select count(*) as n from {table} where api_key_id = %s and model = %s",
                          (t.api_key, model.name)).fetchone()["n"]
        for table in ("knowledge_chunk_embeddings", "knowledge_rule_embeddings")
    }
    assert stored["knowledge_rule_embeddings"] == 4 and stored["knowledge_chunk_embeddings"] >= 1
    assert counts == {"embedded": sum(stored.values()), "skipped": 0} and "Never promise a cure." in model.seen
    # Resumed or run again: nothing is embedded twice.
    assert live.run(reembed_knowledge(live.svc, model,
                                      only=t.api_key)) == {"embedded": 0, "skipped": sum(stored.values())}


def test_a_key_holds_a_bounded_amount_of_knowledge(client, live, tune):
    t = new_tenant(client)
    ingest(client, t)
    settle_jobs(live, t)
    tune(knowledge_max_key_chunks=1)
    full = error(post(client, f"{K}/ingest", inline(PROSE, name="more.md"), t.headers), "RESOURCE_EXHAUSTED")
    assert full["message"] == "This API key's knowledge sources hold the most text allowed; delete some."
    ingest(client, new_tenant(client))  # another key is not held back


def test_an_ingest_no_try_can_finish_ends_failed_and_can_be_deleted(client, live, db):
    t = new_tenant(client)
    lost, recent = ingest(client, t), ingest(client, t, PROSE, name="notes.md")
    settle_jobs(live, t)
    # As if the worker holding each had died: one long ago, one just now.
    db.execute(
        "update knowledge_sources set status = 'processing', updated_at = now() - interval '1 hour' "
        "where id = %s", (lost, ))
    db.execute("update knowledge_sources set status = 'processing' where id = %s", (recent, ))
    live.run(knowledge_sweep({"svc": live.svc}))
    status = res(call(client, t, "ingest-status", sourceId=lost))
    assert (status["status"], status["failureReason"]) == ("failed", "cloud-tasks-enqueue-failed")
    assert res(call(client, t, "ingest-status", sourceId=recent))["status"] == "processing"
    res(call(client, t, "delete", sourceId=lost))
    assert error(call(client, t, "ingest-status", sourceId=lost), "NOT_FOUND")
