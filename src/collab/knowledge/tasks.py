"""Jobs of knowledge sources: the ingest (decode → canonical markdown → chunks → embeddings → rules by the model),
the update of a rule-based source (a new version and its rule diff), and the search of chunks and rules."""

import asyncio
import json
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from redis.exceptions import RedisError

from collab.embeddings import registry
from collab.embeddings.batching import encode_query
from collab.embeddings.model import Embedder, content_hash
from collab.files import DecodeError, Limits, decode
from collab.files.common import cap_canonical, decode_bytes
from collab.files.sandbox import run_child
from collab.judgments import repository as judgments_repo
from collab.judgments.tasks import model_row, named, tenant_embedder
from collab.kit.auth import Tenant
from collab.kit.crypto import new_id
from collab.kit.errors import ApiError, invalid, issue, not_found
from collab.kit.jobs import job, lane, past, transaction
from collab.kit.ratelimit import concurrency
from collab.kit.services import Services
from collab.knowledge import pipeline
from collab.knowledge import repository as repo
from collab.knowledge.bounds import BUSY, slot_bucket
from collab.knowledge.reembed import reembed_knowledge
from collab.knowledge.schemas import MAX_REF_BYTES, SearchKnowledge
from collab.workspaces import ai

log = logging.getLogger("collab.knowledge")
PROMPT = "knowledge_rules"
INGEST_TRIES = 3
VERSIONS_KEPT = 10  # a source's latest versions kept (the rule diff needs only the current one)
# An ingested upload slot (no bytes) is kept this long, so that a second ingest of its ref is refused as such.
INGESTED_KEPT = timedelta(days=30)
# Threads of their own: decodes wait on a child process, encodes take every core; neither may fill the loop's
# default executor or queue behind judgments' bulk encodes.
_DECODE = ThreadPoolExecutor(max_workers=2, thread_name_prefix="knowledge-decode")
_ENCODE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowledge-encode")
# The pure steps over a source's markdown run in a child of their own, under the decoders' caps (files/sandbox.py).
STEPS_CHILD = Path(__file__).with_name("_steps_child.py")
STEPS_LIMITS = Limits()
# Texts per encode: the embedding budget is checked between batches, and concurrent ingests take turns.
ENCODE_BATCH = 64
# An ingest that finds its workspace's extraction slots taken runs again after this long (doubling, at most
# DEFER_MAX_S), as a fresh job: it spends no try and holds no lane slot while it waits.
DEFER_S = 1.0
DEFER_MAX_S = 30.0


class RuleDraft(BaseModel):
    content: str = Field(min_length=1, max_length=pipeline.MAX_RULE_CHARS)
    category: str | None = Field(None, max_length=pipeline.MAX_CATEGORY_CHARS)


class RulesAnswer(BaseModel):
    rules: list[RuleDraft]


class Failed(Exception):
    """An ingest that cannot succeed: `reason` is one of Velt's documented failureReason values."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


def _failed_reason(mime_type: str) -> str:
    return "pdf-llm-conversion-failed" if mime_type == pipeline.PDF else "unsupported-mime-detected-post-validation"


async def _decode(settings, content: bytes, mime_type: str, file_name: str | None) -> tuple[str, bool]:
    """(canonical markdown, whether the converter fell back to the raw text) of a file."""
    loop = asyncio.get_running_loop()
    limits = Limits(max_bytes=MAX_REF_BYTES)

    def markdown() -> str:
        decoded = decode(content, mime_type, file_name=file_name, limits=limits)
        return cap_canonical(pipeline.canonical_markdown(decoded, mime_type))

    try:
        return await loop.run_in_executor(_DECODE, markdown), False
    except DecodeError as exc:
        if mime_type in (pipeline.TEXT, pipeline.MARKDOWN, pipeline.CSV) and exc.kind == "unreadable":
            # Prose with no list items (or a table without one): the text itself is the source's content.
            try:
                text, _ = await loop.run_in_executor(_DECODE, decode_bytes, content)
            except DecodeError:
                pass
            else:
                if text.strip():
                    return cap_canonical(text.strip() + "\n"), True
        raise Failed(_failed_reason(mime_type), exc.message) from None


@dataclass
class Steps:
    """What the pure steps make of a source's markdown: its chunks, its candidate rule lines, its list lines."""

    chunks: list[str]
    found: list[pipeline.Candidate]
    items: int


def _run_steps(payload: bytes) -> Steps:
    limits = STEPS_LIMITS
    output = run_child(
        str(STEPS_CHILD),
        [str(limits.text_memory_bytes), str(math.ceil(limits.text_timeout_s) + 1)], payload,
        timeout_s=limits.text_timeout_s, what="source's text")
    try:
        answer = json.loads(output)
        return Steps(
            chunks=[str(c) for c in answer["chunks"]],
            found=[pipeline.Candidate(str(t), c if isinstance(c, str) else None) for t, c in answer["candidates"]],
            items=int(answer["items"]))
    except (ValueError, TypeError, KeyError) as exc:
        raise DecodeError("unreadable", "the source's text could not be split into passages") from exc


async def steps(settings, markdown: str, *, with_chunks: bool) -> Steps:
    """Chunks and candidate rule lines of tenant markdown, computed in a sandboxed child (a CPU and wall-clock limit)
    off the event loop: DecodeError when the child cannot finish."""
    payload = json.dumps({
        "markdown": markdown, "max_chars": settings.knowledge_chunk_chars, "max_chunks": settings.knowledge_max_chunks,
        "chunks": with_chunks
    }).encode()
    return await asyncio.get_running_loop().run_in_executor(_DECODE, _run_steps, payload)


class TooSlow(Exception):
    """The embedding of one ingest or update ran past its budget (`knowledge_embed_timeout_s`)."""


async def _encode(embedder: Embedder, texts: list[str], *, deadline: float) -> list[list[float]]:
    """The texts' vectors, a batch at a time on the encode thread; TooSlow once the deadline has passed."""
    loop = asyncio.get_running_loop()
    vectors: list[list[float]] = []
    for start in range(0, len(texts), ENCODE_BATCH):
        if time.monotonic() > deadline:
            raise TooSlow(f"embedding stopped after {len(vectors)} of {len(texts)} texts")
        vectors += await loop.run_in_executor(_ENCODE, embedder.encode, texts[start:start + ENCODE_BATCH])
    return vectors


async def _model_rules(svc: Services, tenant: Tenant, *, file_name: str,
                       found: list[pipeline.Candidate]) -> list[dict[str, Any]] | None:
    """The rules the model writes from the candidate lines; None when no model can be asked (no key, the quota,
    a provider failure, a malformed answer after one repair), so that the caller keeps the lines themselves."""
    settings = svc.settings
    lines = "\n".join(f"({c.category or '-'}) {c.text}" for c in found[:settings.knowledge_max_rules])
    try:
        answer = await ai.structured(
            svc, tenant=tenant, provider=settings.extraction_default_provider, prompt_name=PROMPT, shape=RulesAnswer,
            timeout_s=settings.llm_call_timeout_s, variables={
                "file_name": file_name, "lines": lines, "rule_count": min(len(found), settings.knowledge_max_rules)
            })
    except (ApiError, ai.Malformed) as exc:
        log.warning("rule extraction by the model failed, keeping the rule lines: %s", exc)
        return None
    return [{"content": r.content.strip(), "category": (r.category or "").strip() or None} for r in answer.rules
            if r.content.strip()]


async def extract_rules(svc: Services, tenant: Tenant, *, file_name: str,
                        found: list[pipeline.Candidate]) -> list[dict[str, Any]]:
    """The rules of a rule-based source's candidate lines (by the model, else the lines), capped in count and bytes,
    without repeats."""
    if not found:
        return []
    drafted = await _model_rules(svc, tenant, file_name=file_name, found=found)
    if drafted is None:
        drafted = [{"content": c.text, "category": c.category} for c in found]
    rules, seen = [], set()
    for rule in drafted:
        key = pipeline.normalise(rule["content"])
        if key and key not in seen:
            seen.add(key)
            rules.append({"content": rule["content"][:pipeline.MAX_RULE_CHARS], "category": rule["category"]})
    return rules[:svc.settings.knowledge_max_rules]


async def _vectors(embedder: Embedder, items: list[dict[str, Any]], field: str, *, deadline: float) -> None:
    """Give each item its text hash and vector (encoded in batches, until the deadline)."""
    vectors = await _encode(embedder, [i[field] for i in items], deadline=deadline)
    for item, vector in zip(items, vectors):
        item["hash"] = content_hash(item[field])
        item["vector"] = vector


@job(lane="extraction", timeout=past("knowledge_timeout_s"), max_tries=INGEST_TRIES)
async def ingest_knowledge(ctx: dict, *, api_key_id: str, source_id: str, waits: int = 0) -> dict[str, Any]:
    """Turn a stored upload into a completed source (or a failed one with its reason); idempotent. It runs in one
    of the workspace's extraction slots, and waits for one as a deferred job of its own, never on a lane slot."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        row = await repo.source_content(conn, api_key_id=api_key_id, source_id=source_id)
    if row is None or row["status"] != "processing":
        return {"status": row["status"] if row else "deleted"}
    settings = svc.settings
    held = AsyncExitStack()
    try:
        await held.enter_async_context(
            concurrency(svc.redis, bucket=slot_bucket(row["workspace_id"]),
                        limit=settings.extraction_max_concurrency_per_workspace,
                        ttl_s=int(settings.knowledge_timeout_s) + 30, message=BUSY))
    except ApiError as exc:
        if exc.code != "RESOURCE_EXHAUSTED":
            raise
        return await _defer(svc, api_key_id=api_key_id, source_id=source_id, waits=waits)
    async with held:
        return await _ingest(ctx, svc, api_key_id=api_key_id, source_id=source_id, row=row)


async def _defer(svc: Services, *, api_key_id: str, source_id: str, waits: int) -> dict[str, Any]:
    """Queue the ingest again as a fresh job due after a while (this try ends: no try spent, no slot held)."""
    delay = min(DEFER_MAX_S, DEFER_S * 2**min(waits, 8))
    # Unsent on commit (no queue given): sent below with its delay, else by the job sweep.
    async with transaction(svc.pool, None) as tx:
        await repo.touch_source(tx.conn, source_id=source_id)  # a waiting ingest is not a lost one
        job_id = await tx.enqueue("ingest_knowledge", api_key_id=api_key_id, source_id=source_id, waits=waits + 1)
    if svc.redis is not None:
        try:
            await svc.redis.enqueue_job("ingest_knowledge", job_id, _job_id=job_id,
                                        _queue_name=lane("ingest_knowledge").queue, _defer_by=timedelta(seconds=delay))
        except (RedisError, OSError) as exc:
            log.warning("deferred ingest %s not queued, left for the sweep: %s", job_id, exc)
    log.info("knowledge ingest %s waits %.0f s for a slot of its workspace", source_id, delay)
    return {"status": "deferred", "job": job_id, "delayS": delay}


async def _ingest(ctx: dict, svc: Services, *, api_key_id: str, source_id: str, row: dict[str, Any]) -> dict[str, Any]:
    tenant = Tenant(api_key_id=api_key_id, workspace_id=row["workspace_id"])
    started = time.monotonic()
    try:
        if row["content"] is None:
            raise Failed("storage-upload-failed", "The uploaded bytes are no longer stored.")
        markdown, raw = await _decode(svc.settings, bytes(row["content"]), row["mime_type"], row["file_name"])
        try:
            found = await steps(svc.settings, markdown, with_chunks=True)
        except DecodeError as exc:
            raise Failed(_failed_reason(row["mime_type"]), exc.message) from None
        chunks = [{"id": new_id("chk_"), "text": t} for t in found.chunks]
        ruled = pipeline.ruled(len(found.found), found.items)
        rules = await extract_rules(svc, tenant, file_name=row["file_name"] or "the file",
                                    found=found.found) if ruled else []
        for rule in rules:
            rule["id"] = new_id("rule_")
        deadline = time.monotonic() + svc.settings.knowledge_embed_timeout_s
        try:
            embedder = await tenant_embedder(ctx, api_key_id)
            await _vectors(embedder, chunks, "text", deadline=deadline)
            await _vectors(embedder, rules, "content", deadline=deadline)
        except TooSlow as exc:
            log.warning("embedding a knowledge source ran past its budget: %s", exc)
            raise Failed(
                "embedding-failed", f"Embedding took longer than "
                f"{svc.settings.knowledge_embed_timeout_s:g} s; split the file.") from None
        except Exception as exc:  # a model that cannot load or encode: the documented embedding-failed
            log.exception("embedding a knowledge source failed")
            raise Failed("embedding-failed", f"Embedding failed: {type(exc).__name__}") from None
    except Failed as exc:
        async with svc.pool.connection() as conn:
            await repo.mark_failed(conn, source_id=source_id, reason=exc.reason, error=exc.message)
        return {"status": "failed", "reason": exc.reason}
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            await repo.replace_chunks(conn, api_key_id=api_key_id, source_id=source_id, chunks=chunks,
                                      model=embedder.name)
            await repo.replace_rules(conn, api_key_id=api_key_id, source_id=source_id, version=1, rules=rules,
                                     model=embedder.name)
            await repo.insert_version(conn, api_key_id=api_key_id, source_id=source_id, version=1,
                                      canonical_text=markdown, rule_count=len(rules))
            await repo.mark_ready(conn, source_id=source_id, canonical_text=markdown, rule_based=ruled,
                                  used_raw_fallback=raw)
    log.info("knowledge source ingested: %d chunks, %d rules in %.1f s", len(chunks), len(rules),
             time.monotonic() - started)
    return {"status": "completed", "chunks": len(chunks), "rules": len(rules)}


@job(lane="extraction", awaited=True, timeout=past("knowledge_timeout_s"))
async def update_knowledge(ctx: dict, *, api_key_id: str, workspace_id: str, source_id: str,
                           content: str) -> dict[str, Any]:
    """A rule-based source's new version: its markdown replaced, rules extracted again and embedded, the diff (the
    caller holds one of the workspace's extraction slots while it waits)."""
    svc: Services = ctx["svc"]
    tenant = Tenant(api_key_id=api_key_id, workspace_id=workspace_id)
    markdown = cap_canonical(content.strip() + "\n")
    async with svc.pool.connection() as conn:
        source = await repo.get_source(conn, api_key_id=api_key_id, source_id=source_id)
        if source is None:
            raise not_found("knowledge_source")
        old = [r["content"] for r in await repo.current_rules(conn, api_key_id=api_key_id, source_id=source_id)]
    try:
        found = await steps(svc.settings, markdown, with_chunks=False)
    except DecodeError as exc:
        raise invalid(f"newContent cannot be read: {exc.message}.",
                      [issue(["newContent"], "Cannot be read within the limits")]) from None
    rules = await extract_rules(svc, tenant, file_name=source["file_name"] or "the file", found=found.found)
    for rule in rules:
        rule["id"] = new_id("rule_")
    embedder = await tenant_embedder(ctx, api_key_id)
    try:
        await _vectors(embedder, rules, "content", deadline=time.monotonic() + svc.settings.knowledge_embed_timeout_s)
    except TooSlow:
        raise ApiError("DEADLINE_EXCEEDED", "Embedding the new rules took too long; retry later.") from None
    async with svc.pool.connection() as conn:
        async with conn.transaction():
            version = await repo.bump_version(conn, api_key_id=api_key_id, source_id=source_id, canonical_text=markdown)
            if version is None:  # deleted while its rules were drafted
                raise not_found("knowledge_source")
            await repo.replace_rules(conn, api_key_id=api_key_id, source_id=source_id, version=version, rules=rules,
                                     model=embedder.name)
            await repo.insert_version(conn, api_key_id=api_key_id, source_id=source_id, version=version,
                                      canonical_text=markdown, rule_count=len(rules))
            await repo.prune_versions(conn, source_id=source_id, version=version, kept=VERSIONS_KEPT)
    return {"diff": pipeline.diff(old, [r["content"] for r in rules]), "newVersion": version}


def _hit(row: dict[str, Any], kind: str | None) -> dict[str, Any]:
    hit: dict[str, Any] = {}
    if kind is not None:
        hit["kind"] = kind
    if kind == "rule":
        hit["ruleId"] = row["id"]
    hit["sourceId"] = row["source_id"]
    hit["text"] = row["text"] if kind != "rule" else row["content"]
    if row.get("distance") is not None:
        hit["score"] = round(float(row["distance"]), 6)
    if kind == "rule" and row.get("category"):
        hit["category"] = row["category"]
    return hit


@job(lane="search", awaited=True, timeout=past("search_timeout_s"))
async def search_knowledge(ctx: dict, *, api_key_id: str, data: dict) -> dict[str, Any]:
    """Chunks (and with includeRules, rules) nearest the query under the active model; by recency when the query
    cannot be embedded."""
    svc: Services = ctx["svc"]
    request = SearchKnowledge.model_validate(data)
    narrow = [request.sourceId] if isinstance(request.sourceId, str) else request.sourceId
    if narrow is not None:
        narrow = list(dict.fromkeys(narrow))
    limit = request.limit
    vector: list[float] | None = None
    try:
        embedder = await tenant_embedder(ctx, api_key_id)
        vector = await encode_query(embedder, request.query)
    except Exception:  # documented: the search never fails on embedding, it answers by recency
        log.exception("knowledge search could not embed its query; answering by recency")
    kind_chunk = "chunk" if request.includeRules else None
    async with svc.pool.connection() as conn:
        if vector is not None:
            chunks = await repo.search_chunks(conn, api_key_id=api_key_id, model=embedder.name, vector=vector,
                                              source_ids=narrow, limit=limit)
        else:
            chunks = await repo.recent_chunks(conn, api_key_id=api_key_id, source_ids=narrow, limit=limit)
        hits = [_hit(r, kind_chunk) for r in chunks]
        if request.includeRules:
            if vector is not None:
                rules = await repo.search_rules(conn, api_key_id=api_key_id, model=embedder.name, vector=vector,
                                                source_ids=narrow, limit=limit)
            else:
                rules = await repo.recent_rules(conn, api_key_id=api_key_id, source_ids=narrow, limit=limit)
            hits += [_hit(r, "rule") for r in rules]
            # Ascending distance; recency hits (no score) last, in their order.
            hits.sort(key=lambda h: (h.get("score") is None, h.get("score") or 0.0))
    hits = hits[:limit]
    return {"results": hits, "recordsSearched": len(hits)}


async def knowledge_sweep(ctx: dict) -> int:
    """Delete upload slots past use (their bytes with them) and fail ingests no try can still finish; how many
    rows changed (worker cron)."""
    svc: Services = ctx["svc"]
    now = datetime.fromtimestamp(svc.clock(), tz=timezone.utc)
    # Every try (timeout, a margin, the backoff) could have ended by then.
    lost = now - timedelta(seconds=INGEST_TRIES * (svc.settings.knowledge_timeout_s + 30))
    async with svc.pool.connection() as conn:
        changed = await repo.fail_lost_ingests(conn, before=lost)
    while True:
        async with svc.pool.connection() as conn:
            async with conn.transaction():
                count = await repo.drop_old_uploads(conn, now=now, ingested_before=now - INGESTED_KEPT, limit=500)
        changed += count
        if count < 500:
            return changed


# The end of a re-embed (judgments/tasks.py reembed_range queues it after the last range; ADR 0062): here, above
# judgments, because it embeds knowledge too.
@job(timeout=3600, max_tries=5)
async def reembed_finish(ctx: dict, *, run_id: str, api_key_id: str | None = None) -> dict[str, Any]:
    """A re-embed's judgments are done: its knowledge texts too, then (when asked) the switch, atomically."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        run = await judgments_repo.get_run(conn, run_id=run_id)
    if run is None or run["state"] != "finishing":
        return {"state": run["state"] if run else None}
    row = await model_row(svc, run["model"])
    embedder = await named(svc, row["name"], row["source"])
    knowledge = await reembed_knowledge(svc, embedder, batch_size=run["batch_size"], only=run["api_key_id"])
    if run["activate"]:
        await registry.build_indexes(svc.pool, model=row["name"], dimensions=row["dimensions"])
    async with transaction(svc.pool, svc.redis) as tx:
        if run["api_key_id"] is not None:
            if run["activate"]:
                await registry.set_key_model(tx.conn, api_key_id=run["api_key_id"], model=row["name"])
            else:
                await registry.set_key_next(tx.conn, api_key_id=run["api_key_id"], model=None)
        else:
            await registry.set_filling(tx.conn, model=row["name"], filling=False)
            if run["activate"]:
                await registry.activate(tx.conn, model=row["name"])
        await judgments_repo.set_run_state(tx.conn, run_id=run_id, state="done", knowledge=knowledge["embedded"])
    # Knowledge ingested while the first pass ran (it is embedded with the key's model only): a second pass, which
    # encodes only what the first did not see.
    later = await reembed_knowledge(svc, embedder, batch_size=run["batch_size"], only=run["api_key_id"])
    knowledge["embedded"] += later["embedded"]
    log.info("re-embed %s with %s done%s", run_id, row["name"], " and activated" if run["activate"] else "")
    return {"state": "done", "knowledge": knowledge["embedded"], "activated": run["activate"]}
