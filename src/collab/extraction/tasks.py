"""Jobs of extraction: the extraction job (decode → task list → grouped by the model → validated → capped →
persisted), and the retention cron that drops uploaded bytes past COLLAB_KNOWLEDGE_SOURCE_RETENTION_DAYS."""

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from pydantic import BaseModel

from collab import prompts
from collab.config import Settings
from collab.extraction import pipeline
from collab.extraction import repository as repo
from collab.extraction.schemas import ChunkAnswer, MergeAnswer
from collab.files import Decoded, DecodeError, decode
from collab.kit import usage as counters  # `usage` names the platform-key quota here
from collab.kit.auth import Tenant
from collab.kit.errors import ApiError
from collab.kit.jobs import job, past
from collab.kit.services import Services
from collab.llm import answers, quota
from collab.llm.client import LlmError, complete, messages_for, response_format
from collab.llm.routing import EXTRACTION_PROVIDERS as PROVIDERS
from collab.llm.routing import Route, small
from collab.workspaces import ai
from collab.workspaces.model_servers import ModelAccess

log = logging.getLogger("collab.extraction")
A = TypeVar("A", bound=BaseModel)
_RETENTION_BATCH = 500  # rows per transaction: a first run over a large backlog holds no long locks


class Failure(Exception):
    """An extraction that cannot succeed; `code` is the error code the API answers with, `message` its text
    (written for tenants: no provider or driver text)."""

    def __init__(self, code: str, message: str, *, retry_after_s: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s

    def api_error(self) -> ApiError:
        """The answer to the API for this failure (a quota's wait also in details and Retry-After)."""
        if self.retry_after_s is None:
            return ApiError(self.code, self.message)
        return ApiError(self.code, self.message, details={"retryAfterSeconds": self.retry_after_s},
                        headers={"Retry-After": str(self.retry_after_s)})


class Usage:
    """A workspace's platform-key quota during one extraction: every model call is counted, and once the day's
    totals are spent no further call starts (RESOURCE_EXHAUSTED mid-way)."""

    def __init__(self, svc: Services, workspace_id: str):
        self.svc, self.workspace_id = svc, workspace_id
        self.spent = False

    def check(self) -> None:
        """Refuse to start a model call once the quota is spent."""
        if self.spent:
            retry_after = quota.seconds_to_next_day(self.svc.clock())
            raise Failure("RESOURCE_EXHAUSTED", quota.SPENT, retry_after_s=retry_after)

    async def count(self, tokens: int) -> None:
        """Count one call that reached the provider (a failed one with no tokens)."""
        calls, total = await quota.record(self.svc, workspace_id=self.workspace_id, calls=1, tokens=tokens)
        self.spent = self.spent or quota.spent(self.svc.settings, calls=calls, tokens=total)


class _Call:
    """What every model call of one extraction shares: route, key, endpoint, deadline, token counts."""

    def __init__(self, settings: Settings, route: Route, access: ModelAccess, deadline: float,
                 usage: Usage | None = None):
        self.settings, self.route, self.access, self.deadline, self.usage = settings, route, access, deadline, usage
        self.tokens = {"prompt": 0, "completion": 0}
        self.calls = 0
        self.failed_answers = 0
        # (prompt name, user message as sent, answer text): what `collab eval --record` stores.
        self.transcript: list[tuple[str, str, str]] = []

    async def ask(self, prompt: prompts.Prompt, shape: type[A], **values: Any) -> A:
        """One structured answer; a malformed answer is sent back for repair once, then reported."""
        settings = self.settings
        system, user = prompt.render(small=small(settings, self.route), **values)
        messages = messages_for(self.route, system=system, user=user)
        structure = response_format(self.access.structured, name=prompt.name, schema=prompt.schema)
        for attempt in (1, 2):
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise Failure("DEADLINE_EXCEEDED", "Extraction exceeded its processing budget.")
            if self.usage is not None:
                self.usage.check()
            try:
                completion = await complete(self.route, messages=messages, api_key=self.access.key,
                                            api_base=self.access.base_url, timeout_s=left,
                                            attempts=settings.llm_attempts, backoff_s=settings.llm_retry_backoff_s,
                                            response_format=structure)
            except LlmError as exc:
                if self.usage is not None:
                    await self.usage.count(0)  # it reached (or may have reached) the provider: it counts
                if exc.kind == "timeout" and self.deadline - time.monotonic() <= 0:
                    raise Failure("DEADLINE_EXCEEDED", "Extraction exceeded its processing budget.") from None
                raise Failure("INTERNAL", f"Ingest failed: {exc.message}") from None
            self.calls += 1
            if self.usage is not None:
                await self.usage.count(completion.prompt_tokens + completion.completion_tokens)
            self.tokens["prompt"] += completion.prompt_tokens
            self.tokens["completion"] += completion.completion_tokens
            self.transcript.append((prompt.name, messages[-1]["content"], completion.text))
            try:
                return answers.parse(completion.text, shape)
            except answers.AnswerError as exc:
                self.failed_answers += 1
                log.warning("malformed %s answer (attempt %d): %s", prompt.name, attempt, exc)
                if attempt == 2:
                    raise Failure("INTERNAL", "The model's answer was malformed after a retry.") from None
                messages = messages + [{"role": "assistant", "content": completion.text[:20_000]}, {
                    "role": "user", "content": f"That answer is invalid ({exc})."
                    " Answer again with JSON only, following the schema exactly."
                }]
        raise AssertionError("unreachable")


async def _provider_access(svc: Services, tenant: Tenant, provider: str) -> ModelAccess:
    """How to call the provider, and whether it is the platform's own (then the quota applies)."""
    try:
        return await ai.provider_access(svc, tenant, provider)
    except ApiError as exc:  # extraction answers each of these as INTERNAL (the spec's code for it)
        raise Failure("INTERNAL", exc.message) from None


async def _platform_usage(svc: Services, workspace_id: str) -> Usage:
    """The usage counter of a workspace's platform-key calls; RESOURCE_EXHAUSTED when today's quota is spent."""
    retry_after = await quota.exhausted(svc, workspace_id=workspace_id)
    if retry_after is not None:
        raise Failure("RESOURCE_EXHAUSTED", quota.SPENT, retry_after_s=retry_after)
    return Usage(svc, workspace_id)


# Decodes wait on a child process (up to the decode budget each): threads of their own, so that they never fill
# the loop's default executor that other work of the process uses. One per extraction slot is enough.
_decoders: ThreadPoolExecutor | None = None


def _decode_threads(settings: Settings) -> ThreadPoolExecutor:
    global _decoders
    if _decoders is None:
        _decoders = ThreadPoolExecutor(max_workers=settings.worker_extraction_max_jobs, thread_name_prefix="decode")
    return _decoders


async def _decode(settings: Settings, content: bytes, mime_type: str, file_name: str | None):
    try:
        return await asyncio.get_running_loop().run_in_executor(_decode_threads(settings),
                                                                lambda: decode(content, mime_type, file_name=file_name))
    except DecodeError as exc:
        code = "INVALID_ARGUMENT" if exc.kind in ("limits", "unsupported") else "INTERNAL"
        raise Failure(code, exc.message) from None


@dataclass
class Outcome:
    """A finished extraction: the spec's result plus what was decoded and how the model was used."""

    result: dict[str, Any]
    decoded: Decoded
    model: str
    call: "_Call"


async def run(settings: Settings, *, content: bytes, mime_type: str, file_name: str | None, provider: str,
              access: ModelAccess, source_id: str, usage: Usage | None = None) -> Outcome:
    """The whole pipeline for one file, given how to call the provider (no database: the eval runs it too)."""
    deadline = time.monotonic() + settings.extraction_timeout_s - 1
    decoded = await _decode(settings, content, mime_type, file_name)
    extract = prompts.get("extract_agents", settings.prompts_dir)
    try:
        route = ai.route_for(extract, provider, access)
    except ApiError as exc:
        raise Failure("INTERNAL", exc.message) from None
    call = _Call(settings, route, access, deadline, usage)
    parts = pipeline.chunk(decoded.tasks, max_chars=settings.extraction_chunk_chars,
                           max_tasks=settings.extraction_chunk_tasks)
    label = file_name or "the file"
    gate = asyncio.Semaphore(settings.extraction_concurrency)

    async def one(part):
        async with gate:
            answer = await call.ask(extract, ChunkAnswer, file_name=label, task_count=len(part),
                                    tasks=pipeline.task_lines(part))
            return part, answer

    calls = [asyncio.ensure_future(one(part)) for part in parts]
    try:
        answers = await asyncio.gather(*calls)
    except BaseException:
        # One chunk failed (the deadline, the quota, the provider): the others stop too, no call is left running.
        for task in calls:
            task.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        raise
    agents, skipped = pipeline.assemble(answers)
    if len(parts) > 1 and len(agents) > 1:
        merge = prompts.get("merge_agents", settings.prompts_dir)
        try:
            grouped = await call.ask(merge, MergeAnswer, agent_count=len(agents), agents=pipeline.merge_lines(agents))
            agents = pipeline.apply_merge(agents, grouped)
        except Failure as exc:
            if exc.code in ("DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"):
                raise
            log.warning("merge call failed, merging by name instead: %s", exc.message)
            agents = pipeline.merge_by_name(agents)
    summary = answers[0][1].summary if len(answers) == 1 else ""
    result = pipeline.result(
        agents=agents, tasks=decoded.tasks, skipped_ids=skipped,
        decoder_skipped=[{"originalText": s.originalText, "reason": s.reason} for s in decoded.skipped],
        model_summary=summary, file_label=label, source_id=source_id)
    log.info("extracted %d agents from %d tasks in %d call(s)", len(result["agents"]), len(decoded.tasks), call.calls,
             extra={"tokens": call.tokens})
    return Outcome(result, decoded, route.name, call)


@job(lane="extraction", awaited=True, timeout=past("extraction_timeout_s"), max_tries=2)
async def extract_agents(ctx: dict, *, source_id: str, provider: str) -> dict[str, Any]:
    """Turn a stored upload into draft agents; idempotent (a finished source returns its result)."""
    svc: Services = ctx["svc"]
    async with svc.pool.connection() as conn:
        row = await repo.get_source(conn, source_id=source_id)
    if row is None:
        raise ApiError("INTERNAL", "The uploaded file was not found.")
    if row["status"] == "ready":
        return {"extractionResult": row["result"]}
    try:
        if provider not in PROVIDERS:
            raise Failure("INTERNAL", f"Unknown provider '{provider}'.")
        if row["content"] is None:
            raise Failure("INTERNAL", "The uploaded file is no longer stored (retention); upload it again.")
        tenant = Tenant(api_key_id=row["api_key_id"], workspace_id=row["workspace_id"])
        access = await _provider_access(svc, tenant, provider)
        usage = await _platform_usage(svc, row["workspace_id"]) if access.platform else None
        outcome = await run(svc.settings, content=bytes(row["content"]), mime_type=row["mime_type"],
                            file_name=row["file_name"], provider=provider, access=access, source_id=source_id,
                            usage=usage)
    except Failure as exc:
        async with svc.pool.connection() as conn:
            await repo.mark_failed(conn, source_id=source_id, error=f"{exc.code}: {exc.message}")
        raise exc.api_error() from None
    decoded = outcome.decoded
    tasks = [{"text": t.text, "category": t.category, "source": t.source} for t in decoded.tasks]
    async with svc.pool.connection() as conn:
        await repo.mark_ready(conn, source_id=source_id, canonical_text=decoded.canonical_text, tasks=tasks,
                              result=outcome.result, model=outcome.model)
    counters.count(svc, "extractions", workspace_id=row["workspace_id"], label=provider)
    return {"extractionResult": outcome.result}


async def drop_old_content(ctx: dict) -> int:
    """Drop the bytes of sources uploaded more than the retention ago; how many were dropped (worker cron)."""
    svc: Services = ctx["svc"]
    days = svc.settings.knowledge_source_retention_days
    if not days:
        return 0
    before = datetime.fromtimestamp(svc.clock(), tz=timezone.utc) - timedelta(days=days)
    dropped = 0
    while True:
        async with svc.pool.connection() as conn:
            async with conn.transaction():
                count = await repo.drop_old_content(conn, before=before, limit=_RETENTION_BATCH)
        dropped += count
        if count < _RETENTION_BATCH:
            break
    if dropped:
        log.info("dropped the stored bytes of %d knowledge source(s) older than %d days", dropped, days)
    return dropped
