"""Jobs of agents: an execution's run (gather, ask the model, write its findings as suggestions, finish) on the ai
lane, and the sweep that ends executions left `running` past their time budget (ADR 0055)."""

import asyncio
import hashlib
import logging
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

import orjson

from collab.agents import execution_repository as xrepo
from collab.agents import runner
from collab.agents.prompt_tools import agent_prompt_tool  # noqa: F401 (declared there: the prompt tools' job)
from collab.comments import service as comments
from collab.comments.schemas import MAX_FIELD_BYTES, MAX_THREADS_PER_CALL, AddAnnotations, DeleteAnnotations, json_size
from collab.crdt import service as crdt
from collab.crdt.schemas import GetCrdt
from collab.kit import ratelimit
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.jobs import PermanentError, job, lane, past, transaction
from collab.kit.jobs.fencing import Fenced
from collab.kit.services import Services
from collab.knowledge import retrieval as knowledge
from collab.llm import quota
from collab.workspaces import ai
from collab.workspaces.model_servers import ModelAccess

log = logging.getLogger("collab.agents")
SWEEP_GRACE_S = 60  # past the budget: the job's own timeout (budget + 15 s) has fired by then


def _error(code: str, message: str, now: int, *, retryable: bool = False) -> dict[str, Any]:
    return {"code": code, "message": message, "retryable": retryable, "occurredAt": now}


def _url_hash(url: str) -> str:
    return hashlib.md5(url.encode(), usedforsecurity=False).hexdigest()


class _Run:
    """One try of one execution: its row, tenant and the model calls it counted."""

    def __init__(self, svc: Services, tenant: Tenant, row: dict[str, Any]):
        self.svc, self.tenant, self.row = svc, tenant, row
        self.url: str = row["request"]["seedUrl"]
        self.platform = False
        self.llm_model: str | None = None
        self.pages: list[dict[str, Any]] = []  # what each page fetch got (crawlerResults.pages)
        self.crawl: str = "skipped"  # skipped (no page asked for), completed or failed
        self.crawl_started = svc.now_ms()
        self.crawl_ms = 0

    def crawler_results(self) -> dict[str, Any]:
        """Velt's crawlerResults of this run (one page: the seed URL), with what the fetch got."""
        return {
            "status": self.crawl, "totalUrlsFound": 0 if self.crawl == "skipped" else 1,
            "pagesVisited": len(self.pages), "duration": self.crawl_ms, "pages": self.pages
        }

    async def _access(self, provider: str) -> ModelAccess:
        try:
            found = await ai.provider_access(self.svc, self.tenant, provider)
        except ApiError as exc:
            raise runner.Failure("LLM_ERROR", exc.message) from None
        self.platform = found.platform
        return found

    async def _before_call(self) -> None:
        if self.platform and await quota.exhausted(self.svc, workspace_id=self.tenant.workspace_id) is not None:
            raise runner.Failure("LLM_RATE_LIMITED", quota.SPENT, retryable=True)

    async def _after_call(self, prompt_tokens: int, completion_tokens: int) -> None:
        assert self.llm_model is not None
        async with self.svc.pool.connection() as conn:
            await xrepo.record_usage(conn, api_key_id=self.tenant.api_key_id, id=self.row["id"],
                                     llm_model=self.llm_model, prompt_tokens=prompt_tokens,
                                     completion_tokens=completion_tokens)
        if self.platform:
            await quota.record(self.svc, workspace_id=self.tenant.workspace_id, calls=1,
                               tokens=prompt_tokens + completion_tokens)

    async def _document(self) -> list[tuple[str, Any]]:
        """The document's stored editors' content (their first page), by editor id."""
        query = GetCrdt(organizationId=self.row["organization_id"], documentId=self.row["document_id"])
        try:
            records, _ = await crdt.get(self.svc, tenant=self.tenant, data=query)
        except ApiError as exc:
            raise runner.Failure("CONTEXT_GATHERING_ERROR", f"The document's content cannot be read: {exc.message}")
        return [(r["id"], r["data"]) for r in (_loads(x) for x in records)]

    async def review(self) -> runner.Review:
        """Gather what the agent's contextGathering asks for and ask the model about it."""
        settings, behaviour, request = self.svc.settings, self.row["behaviour"], self.row["request"]
        page = None
        if runner.wants_page(behaviour):
            self.crawl, self.crawl_started = "failed", self.svc.now_ms()
            try:
                fetched = await runner.fetch_page(settings, self.url)
            except runner.Failure as exc:
                self.crawl_ms = self.svc.now_ms() - self.crawl_started
                if exc.fetched is not None:
                    self.pages.append(exc.fetched)
                raise
            self.pages.append(fetched.fetched)
            self.crawl, page = "completed", fetched.text
            self.crawl_ms = self.svc.now_ms() - self.crawl_started
        context = runner.context_json(request.get("userContext") or {})
        content = runner.content_of(page=page, document=await self._document(), context=context)
        ai_config = request.get("aiConfig")
        access = await self._access(runner.provider_of(settings, behaviour=behaviour, ai_config=ai_config))
        provider, route = runner.route_for(settings, behaviour=behaviour, ai_config=ai_config, configured=access.model)
        self.llm_model = f"{provider}/{route.model}"
        async with self.svc.pool.connection() as conn:
            known = await knowledge.rules(conn, api_key_id=self.tenant.api_key_id,
                                          organization_id=self.row["organization_id"],
                                          document_id=self.row["document_id"], limit=runner.KNOWLEDGE_RULES)
        instructions = runner.with_knowledge(behaviour.get("instructions") or "", known)
        return await runner.review(settings, route=route, access=access, instructions=instructions,
                                   user_context=context, url=self.url, content=content, before_call=self._before_call,
                                   after_call=self._after_call)

    async def suggest(self, findings: list[runner.Finding]) -> list[str]:
        """Replace the agent's earlier suggestions for this URL on the document by these findings; their ids."""
        row, scope = self.row, {"organizationId": self.row["organization_id"], "documentId": self.row["document_id"]}
        try:
            await comments.delete(
                self.svc, tenant=self.tenant,
                data=DeleteAnnotations.model_validate({**scope, "agentId": row["agent_id"], "agentUrls": [self.url]}))
            ids = [f"{row['id']}-{n}" for n in range(1, len(findings) + 1)]
            threads = [self._thread(i, n, f) for n, (i, f) in enumerate(zip(ids, findings), 1)]
            for start in range(0, len(threads), MAX_THREADS_PER_CALL):
                batch = AddAnnotations.model_validate(
                    {**scope, "commentAnnotations": threads[start:start + MAX_THREADS_PER_CALL]})
                await comments.add(self.svc, tenant=self.tenant, data=batch)
        except ApiError as exc:
            raise runner.Failure("POST_PROCESS_ERROR", f"The suggestions could not be written: {exc.message}")
        return ids

    def _thread(self, annotation_id: str, n: int, finding: runner.Finding) -> dict[str, Any]:
        row = self.row
        reason = {
            "findingId": f"finding-{n}", "title": finding.title, "description": finding.description,
            "severity": finding.severity, "confidence": finding.confidence, "source": "instructions"
        }
        # Velt's agent block (agentType and agentSource as Velt names a workspace's own agent run by the service),
        # with the finding as its `reason`; the finding's fields stay at the top too, where clients read them.
        agent = {
            "agentId": row["agent_id"], "agentName": row["agent_name"], "agentType": "custom", "agentSource": "velt",
            "executionId": row["id"], "url": self.url, "findingId": f"finding-{n}", "type": "suggestion",
            "sourceType": "agent", "severity": finding.severity, "targetText": finding.targetText,
            "suggestion": finding.suggestion, "confidence": finding.confidence, "reason": reason
        }
        _fit(agent)
        text = f"{finding.title}\n\n{finding.description}"
        if finding.suggestion:
            text += f"\n\nSuggestion: {finding.suggestion}"
        return {
            "annotationId": annotation_id, "type": "suggestion", "context": {
                "type": "suggestion", "sourceType": "agent", "agentId": row["agent_id"], "executionId": row["id"]
            }, "commentData": [{
                "commentText": text[:20_000], "from": {"userId": row["agent_id"], "name": row["agent_name"][:500]},
                "agent": agent
            }]
        }


def _fit(agent: dict[str, Any]) -> None:
    """Cut the reason's description (the comment's text holds it whole) until the block is within the byte cap of a
    comment's agent block."""
    over = json_size(agent) - MAX_FIELD_BYTES
    if over > 0:
        text = agent["reason"]["description"].encode()
        agent["reason"]["description"] = text[:max(0, len(text) - over - 8)].decode(errors="ignore")


def _loads(record: Any) -> dict[str, Any]:
    """A rendered record (an orjson fragment, as pages hold them) as a dict."""
    return orjson.loads(orjson.dumps(record)) if isinstance(record, orjson.Fragment) else record


def _results(run: _Run, review: runner.Review | None, findings: list[runner.Finding], ids: list[str], now: int,
             error: str | None) -> list[dict[str, Any]]:
    """The per-URL results (one URL: the seed), as Velt's includeResults shows them."""
    row = run.row
    out = [{
        "id": f"finding-{n}", "title": f.title, "description": f.description, "severity": f.severity,
        "targetText": f.targetText, "occurrence": 1, "sourceUrl": run.url, "suggestion": f.suggestion,
        "isPageLevel": f.targetText == "", "confidence": f.confidence, "commentId": i, "source": "instructions"
    } for n, (f, i) in enumerate(zip(findings, ids), 1)]
    return [{
        "id": _url_hash(run.url), "url": run.url, "urlHash": _url_hash(run.url), "agentId": row["agent_id"],
        "agentName": row["agent_name"], "agentResult": {
            "status": "failed" if error else "completed", "agentId": row["agent_id"], "agentName": row["agent_name"],
            "summary": review.summary if review else None, "issueCount": len(out), "findingsCount": len(out),
            "findings": out, "error": error
        }, "findingCount": len(out), "processedAt": now
    }]


def _summary(findings: list[runner.Finding], created: int, *, url: str, error: str | None, text: str) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "totalFindings": len(findings), "totalAnnotationsCreated": created, "urlsProcessed": 1,
        "urlsWithFindings": 1 if findings else 0, "issuesCreated": len(findings), "summary": text
    }
    if error:
        summary |= {"urlsErrored": 1, "erroredUrls": [{"url": url, "message": error}]}
    if findings:
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        summary["severityCounts"] = counts
        summary["findings"] = [{
            "title": f.title, "description": f.description, "severity": f.severity, "sourceUrl": url, "url": url
        } for f in findings]
    return summary


async def _finish(run: _Run, *, status: str, summary: dict[str, Any], results: list[dict[str, Any]] | None,
                  error: dict[str, Any] | None) -> None:
    async with transaction(run.svc.pool, run.svc.redis) as tx:
        await xrepo.finish_execution(tx.conn, api_key_id=run.tenant.api_key_id, id=run.row["id"], status=status,
                                     now=run.svc.now_ms(), results_summary=summary, results=results, error=error,
                                     crawler_results=run.crawler_results())


# A run waiting for its workspace's AI slot is queued again after this many seconds, doubling to the most; the
# wait is off the lane (no slot held) and each wait is a job of its own (no try of the execution's is used).
SLOT_WAIT_FIRST_S = 0.5
SLOT_WAIT_MAX_S = 5.0


async def _wait_for_slot(svc: Services, *, api_key_id: str, execution_id: str, workspace_id: str,
                         waits: int) -> dict[str, Any]:
    """Queue the execution's run again a little later, as a new job (its row marked unsent, so that should the
    deferred send below fail, the outbox sweep sends it)."""
    async with transaction(svc.pool, None) as tx:
        job_id = await tx.enqueue("run_agent_execution", api_key_id=api_key_id, execution_id=execution_id,
                                  workspace_id=workspace_id, waits=waits + 1)
    delay = min(SLOT_WAIT_MAX_S, SLOT_WAIT_FIRST_S * 2**waits)
    assert svc.redis is not None  # a worker has its Redis (the slot could not be taken without it)
    await svc.redis.enqueue_job("run_agent_execution", job_id, _job_id=job_id,
                                _queue_name=lane("run_agent_execution").queue, _defer_by=timedelta(seconds=delay))
    return {"status": "waiting", "next": job_id}


@job(lane="ai", timeout=past("agent_execution_timeout_s", 15), max_tries=1)
async def run_agent_execution(ctx: dict, *, api_key_id: str, execution_id: str, workspace_id: str,
                              waits: int = 0) -> dict | None:
    """Run one execution to its terminal status: passed (no findings), failed (findings) or error (with a reason).

    It runs holding one of its workspace's AI slots (those of Ask AI and memory); when none is free it is queued
    again a little later (`waits` so far) instead of holding a lane slot while it waits."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        row = await xrepo.get_execution(conn, api_key_id=api_key_id, id=execution_id)
    if row is None or row["status"] != "running":
        return None
    run = _Run(svc, Tenant(api_key_id=api_key_id, workspace_id=workspace_id), row)
    settings = svc.settings
    budget = settings.agent_execution_timeout_s
    # From the execution's start, as the sweep counts it: time queued (and waiting for a slot) is spent too, so the
    # sweep never ends a run that is still going (and could let a second one write beside it).
    left = budget - (svc.now_ms() - row["started_at"]) / 1000
    async with AsyncExitStack() as held:
        if left > 0:
            try:
                await held.enter_async_context(
                    ratelimit.concurrency(svc.redis, bucket=f"ai:{workspace_id}", limit=settings.ai_max_concurrency,
                                          ttl_s=int(budget) + 30, message="busy"))
            except ApiError:
                return await _wait_for_slot(svc, api_key_id=api_key_id, execution_id=execution_id,
                                            workspace_id=workspace_id, waits=waits)
        return await _run(run, left=left, budget=budget, waited=waits > 0)


async def _run(run: _Run, *, left: float, budget: float, waited: bool) -> dict[str, Any]:
    svc, execution_id = run.svc, run.row["id"]
    try:
        if left <= 0:
            raise TimeoutError()
        async with asyncio.timeout(left):
            review = await run.review()
            findings = runner.ranked(review.findings)
            ids = await run.suggest(findings)
    except runner.Failure as exc:
        await _fail(run, exc.code, exc.message, retryable=exc.retryable)
        return {"status": "error"}
    except TimeoutError:
        message = f"The execution exceeded its time budget of {budget:g} s."
        if waited and left <= 0:
            message = (f"The execution exceeded its time budget of {budget:g} s waiting for one of its workspace's "
                       "AI slots (its other AI requests held them all).")
        await _fail(run, "TIMEOUT", message, retryable=True)
        return {"status": "error"}
    except Fenced:
        raise
    except Exception as exc:
        log.exception("agent execution %s failed", execution_id)
        await _fail(run, "INTERNAL", "The execution failed because of an internal error.")
        raise PermanentError("The execution failed because of an internal error.") from exc
    status = "failed" if findings else "passed"
    text = (f"Found {len(findings)} issue(s) on 1 page. {len(ids)} annotation(s) created."
            if findings else "Found no issues on 1 page.")
    await _finish(run, status=status, summary=_summary(findings, len(ids), url=run.url, error=None, text=text),
                  results=_results(run, review, findings, ids, svc.now_ms(), None), error=None)
    return {"status": status}


async def _fail(run: _Run, code: str, message: str, *, retryable: bool = False) -> None:
    now = run.svc.now_ms()
    await _finish(run, status="error", summary=_summary([], 0, url=run.url, error=message, text=message),
                  results=_results(run, None, [], [], now, message), error=_error(code, message, now,
                                                                                  retryable=retryable))


async def sweep_executions(ctx: dict) -> int:
    """End as `error` the executions still running a minute past their time budget; how many (worker cron)."""
    svc: Services = ctx["svc"]
    budget = svc.settings.agent_execution_timeout_s
    now = svc.now_ms()
    message = f"The execution exceeded its time budget of {budget:g} s (its run was lost)."
    async with svc.pool.connection() as conn:
        ended = await xrepo.sweep_overdue(conn, before=now - int((budget + SWEEP_GRACE_S) * 1000), now=now,
                                          error=_error("TIMEOUT", message, now, retryable=True), message=message)
    if ended:
        log.warning("ended %d agent execution(s) left running past their budget", len(ended))
    return len(ended)
