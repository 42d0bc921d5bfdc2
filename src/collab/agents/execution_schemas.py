"""Request and response models of agent executions and analytics (Velt's `agents/execution/*`,
`agents/analytics/get`; ADR 0055). `execution/run` passes unknown keys through (ignored); its `aiConfig`, and
`execution/list` and `execution/count` as a whole, refuse them, as Velt's schemas do."""

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from collab.agents.schemas import Strict
from collab.kit.envelope import Model
from collab.kit.fields import Id
from collab.kit.openapi import Doc

STATUSES = ("running", "passed", "failed", "partial", "error", "skipped")
TERMINAL = STATUSES[1:]
SEVERITIES = ("critical", "high", "medium", "low", "info")
Provider = Literal["gemini", "claude", "openai"]
NonBlank = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"\S")]


def _web_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("url must be a valid http or https URL")
    return value


class RanBy(Model):
    userId: Id
    name: str = Field("", max_length=500)
    email: str = Field("", max_length=500)


class RunAiConfig(Strict):
    provider: Provider = None
    model: str = Field(None, min_length=1, max_length=200)
    defaultModels: dict[Provider,
                        Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(None, min_length=1)
    maxToolTurns: int = Field(None, ge=1, le=16)

    @model_validator(mode="after")
    def _something(self):
        if not self.model_fields_set:
            raise ValueError("aiConfig needs at least one of provider, model, defaultModels or maxToolTurns")
        return self


class RunExecution(Model):
    agentId: NonBlank
    url: Annotated[str, StringConstraints(min_length=1, max_length=4000), AfterValidator(_web_url)]
    crossPageExecute: bool = False
    maxUrlsToProcess: int = Field(50, ge=1)
    deviceType: Literal["mobile", "desktop"] = "desktop"
    organizationId: Id
    documentId: Id
    annotationVisibility: Literal["public", "private"] = "private"
    trigger: Literal["standalone", "workflow"] = "standalone"
    workflowExecutionId: str = Field(None, min_length=1, max_length=200)
    ranBy: RanBy = None
    userContext: dict[str, Any] = Field(None, max_length=100)
    aiConfig: RunAiConfig = None


class GetExecution(Model):
    executionId: NonBlank
    includeResults: bool = False


class ListExecutions(Strict):
    agentId: NonBlank = None
    organizationId: NonBlank = None
    documentId: NonBlank = None
    pageSize: int = Field(20, ge=1, le=100)
    pageToken: NonBlank = None

    @model_validator(mode="after")
    def _combination(self):
        agent, org, doc = (v is not None for v in (self.agentId, self.organizationId, self.documentId))
        if (org, doc) not in ((False, False), (True, True)) or not (agent or org):
            raise ValueError("Filter by { agentId }, { organizationId, documentId } or "
                             "{ agentId, organizationId, documentId }")
        return self


class CountExecutions(Strict):
    agentIds: NonBlank | Annotated[list[NonBlank], Field(min_length=1, max_length=200)] = None
    status: Literal[STATUSES] = None  # type: ignore[valid-type]

    def ids(self) -> list[str] | None:
        """The agent ids asked for, once each, in the order sent (a single id as a list of one)."""
        if self.agentIds is None:
            return None
        return list(dict.fromkeys([self.agentIds] if isinstance(self.agentIds, str) else self.agentIds))


class GetAnalytics(Model):
    agentId: NonBlank = None
    year: str = Field(None, max_length=4, pattern=r"^\d{4}$")
    month: str = Field(None, max_length=2, pattern=r"^(0[1-9]|1[0-2])$")
    model: str = Field(None, min_length=1, max_length=200)


# Response models (documentation and contract tests; see collab.kit.openapi).


class ExecutionStarted(Doc):
    executionId: str


class FetchedPage(Doc):
    url: str = Field(description="The URL that answered (after redirects).")
    status: int = Field(description="Its HTTP status.")
    bytes: int = Field(
        description="Bytes of the body read (the read stops past COLLAB_AGENT_EXECUTION_PAGE_MAX_BYTES).")
    title: str | None = Field(None, description="The page's <title>, at most 300 characters; absent when none.")
    excerpt: str | None = Field(
        None, description="The start of the page's text, at most 1,000 bytes of UTF-8; absent when it has none.")


class CrawlerResults(Doc):
    """Velt's crawlerResults: what the execution fetched (collab fetches the seed URL only)."""

    status: Literal["completed", "failed",
                    "skipped"] = Field(description="skipped when the agent's contextGathering reads no page.")
    totalUrlsFound: int
    pagesVisited: int
    duration: int = Field(description="Milliseconds the fetch took.")
    pages: list[FetchedPage]


class Execution(Doc):
    """One execution document, as Velt's get and list answer it (results apart)."""

    id: str
    agentId: str
    agentName: str
    agentVersion: int = Field(description="The agent's version at the start (pinned).")
    metadata: dict[str, str] = Field(description="{organizationId, documentId} as sent on run.")
    config: dict[str, Any] = Field(description="{seedUrl, crossPageExecute, maxUrlsToProcess, deviceType}.")
    status: Literal[STATUSES]  # type: ignore[valid-type]
    startedAt: int
    completedAt: int | None
    durationMs: int | None
    error: dict[str, Any] | None = Field(None, description="On `error`: {code, message, retryable, occurredAt}.")
    trigger: Literal["standalone", "workflow"]
    workflowExecutionId: str | None
    previousExecutionId: str | None
    ranBy: dict[str, Any] | None
    resultsSummary: dict[str, Any]
    crawlerResults: CrawlerResults | None = Field(None, description="Once the execution has ended (get only).")
    llmModel: str | None = Field(None, description="provider/model, once the model was called.")
    tokenUsage: dict[str, int]

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An execution as get and list show it."""
        request, completed = row["request"], row["completed_at"]
        record: dict[str, Any] = {
            "id": row["id"], "agentId": row["agent_id"], "agentName": row["agent_name"],
            "agentVersion": row["agent_version"],
            "metadata": {"organizationId": row["organization_id"], "documentId": row["document_id"]},
            "config": {k: request[k]
                       for k in ("seedUrl", "crossPageExecute", "maxUrlsToProcess", "deviceType")
                       }, "status": row["status"], "startedAt": row["started_at"], "completedAt": completed,
            "durationMs": None if completed is None else completed - row["started_at"]
        }
        if row["error"] is not None:
            record["error"] = row["error"]
        prompt, completion = int(row["prompt_tokens"]), int(row["completion_tokens"])
        record |= {
            "trigger": row["trigger"], "workflowExecutionId": row["workflow_execution_id"],
            "previousExecutionId": row["previous_execution_id"], "ranBy": row["ran_by"],
            "resultsSummary": row["results_summary"], "tokenUsage": {
                "promptTokens": prompt, "completionTokens": completion, "thoughtsTokens": 0,
                "totalTokens": prompt + completion
            }
        }
        if row.get("crawler_results") is not None:
            record["crawlerResults"] = row["crawler_results"]
        if row["llm_model"] is not None:
            record["llmModel"] = row["llm_model"]
        return record


class ExecutionFetched(Doc):
    execution: Execution
    results: list[dict[str, Any]] | None = Field(
        None, description="With includeResults: one row per URL, its findings under agentResult.findings.")


class ExecutionList(Doc):
    executions: list[Execution]
    nextPageToken: str | None = Field(None, description="Absent on the last page.")


class ExecutionCount(Doc):
    counts: dict[str, int] | None = Field(None, description="With agentIds: executions per agent id sent.")
    total: int | None = Field(None, description="Without agentIds: the workspace's executions.")


class AnalyticsAnswer(Doc):
    analytics: dict[str, Any] = Field(description="{tokenUsage: {allTime, yearly?, monthly?, byModel?}, "
                                      "executionCounts}.")
