"""Request models of judgment search and listing."""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, field_validator

from collab.kit.envelope import Model
from collab.kit.fields import Id
from collab.kit.openapi import Doc, PageOf
from collab.kit.validation import Broken, rule, rules

Decision = Literal["comment", "resolve", "approved", "rejected", "in_progress", "agree", "disagree", "endorse",
                   "document_approved", "document_rejected"]
JudgeType = Literal["human", "agent"]
OptionalId = Field(None, min_length=1, max_length=200)


def to_ms(value: str | int | float) -> int:
    """An ISO-8601 string or epoch milliseconds, as epoch milliseconds."""
    if isinstance(value, bool):
        raise ValueError("Expected an ISO-8601 string or epoch milliseconds")
    if isinstance(value, (int, float)):
        if not -(10**15) <= value <= 10**15:
            raise ValueError("Out of range for epoch milliseconds")
        return int(value)
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("Expected an ISO-8601 string or epoch milliseconds") from None
    if parsed.tzinfo is None:
        from datetime import timezone

        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


class DateRange(Model):
    start: Annotated[str, Field(max_length=64)] | int | float = None
    end: Annotated[str, Field(max_length=64)] | int | float = None

    @field_validator("start", "end")
    @classmethod
    def _when(cls, value):
        return None if value is None else to_ms(value)

    # Both fields validate (to epoch ms) before this runs: a rule never reads a field that failed.
    _rules = rules(
        rule("start", "end")(lambda v: (Broken("start", "start must not be after end") if v.get("start") is not None and
                                        v.get("end") is not None and v["start"] > v["end"] else None)))


class Filters(Model):
    decision: Decision = None
    judgeType: JudgeType = None
    contentType: str = Field(None, min_length=1, max_length=200)
    reviewerId: str = OptionalId
    annotationId: str = Field(None, min_length=1, max_length=500)
    dateRange: DateRange = None
    excludeDocumentIds: list[Id] = Field(None, min_length=1, max_length=20)

    @field_validator("excludeDocumentIds")
    @classmethod
    def _non_empty(cls, value):
        if value is not None and any(not v.strip() for v in value):
            raise ValueError("IDs must be non-empty")
        return value


class SearchJudgments(Model):
    query: str = Field(min_length=1, max_length=5000)
    embeddingType: Literal["review", "content"] = "review"
    scope: Literal["document", "organization", "apiKey"] = None
    organizationId: str = Field(None, min_length=1, max_length=200,
                                validation_alias=AliasChoices("organizationId", "orgId"))
    documentId: str = Field(None, min_length=1, max_length=200, validation_alias=AliasChoices("documentId", "docId"))
    limit: int = Field(10, ge=1, le=50)
    filters: Filters = None
    recencyDays: int = Field(None, ge=1, le=365)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Must not be empty")
        return value


class QueryJudgments(Model):
    organizationId: str = Field(None, min_length=1, max_length=200,
                                validation_alias=AliasChoices("organizationId", "orgId"))
    documentId: str = Field(None, min_length=1, max_length=200, validation_alias=AliasChoices("documentId", "docId"))
    decision: Decision = None
    judgeType: JudgeType = None
    contentType: str = Field(None, min_length=1, max_length=200)
    reviewerId: str = OptionalId
    annotationId: str = Field(None, min_length=1, max_length=500)
    pageSize: int = Field(50, ge=1, le=500)
    pageToken: str = Field(None, max_length=500)
    limit: int = Field(
        None, ge=1, le=500,
        description="Velt's name for pageSize, and how a Velt call is told apart: one that sends it is "
        "answered with Velt's `results` and `total` beside collab's `data` and `pageToken`.")

    _rules = rules(
        rule("limit", "pageSize")(lambda v: (Broken("limit", "limit cannot be combined with pageSize")
                                             if "limit" in v and "pageSize" in v else None)))

    @property
    def size(self) -> int:
        """The page size, by either name."""
        return self.limit if self.limit is not None else self.pageSize


def _bounds_in_order(v) -> Broken | None:
    low, high = v.get("timestampLowerBoundMs"), v.get("timestampUpperBoundMs")
    if low is not None and high is not None and low > high:
        return Broken("timestampLowerBoundMs", "timestampLowerBoundMs must not be after timestampUpperBoundMs")
    return None


def _this_key_only(v) -> list[Broken]:
    return [
        Broken(name, f"{name} is not supported: collab backfills the calling API key's judgments only")
        for name in ("storeDbId", "allApiKeysInStore", "migrateOldSdk") if v.get(name)
    ]


class BackfillJudgments(Model):
    resumeFrom: str = Field(None, min_length=1, max_length=200)
    batchSize: int = Field(200, ge=1, le=1000)
    timestampLowerBoundMs: int = Field(None, ge=0, le=10**15)
    timestampUpperBoundMs: int = Field(None, ge=0, le=10**15)
    force: bool = False
    # Velt's cross-tenant operator options: collab backfills the calling API key only (refused when asked for).
    storeDbId: str = Field(None, max_length=200)
    allApiKeysInStore: bool = False
    migrateOldSdk: bool = False

    _rules = rules(
        rule("timestampLowerBoundMs", "timestampUpperBoundMs")(_bounds_in_order),
        rule("storeDbId", "allApiKeysInStore", "migrateOldSdk")(_this_key_only))


# Response models (documentation and contract tests; see collab.kit.openapi).


class JudgmentUser(Doc):
    userId: str
    name: str | None = Field(None, description="Absent when the activity's actionUser had none.")


class JudgmentAgent(Doc):
    """The agent behind a decision: the keys of the activity's `entityData.agent`, values as the client sent them."""

    agentId: Any = Field(description="Null when the client sent none.")
    agentType: Any = Field(description="Null when the client sent none.")
    executionId: Any = Field(description="Null when the client sent none.")
    agentFields: Any = Field(description="Null when the client sent none.")


class Judgment(Doc):
    """A judgment record."""

    recordId: str
    reasoning: str
    decision: Decision
    confidence: float
    actionUser: JudgmentUser
    createdAt: int = Field(description="Epoch milliseconds.")
    similarity: float | None = Field(
        description="Cosine similarity to the query; 1.0 on the annotation and recency paths; null in listings.")
    scope: Literal["document", "organization", "apiKey"]
    agent: JudgmentAgent | None = Field(description="Null for a human decision.")


class JudgmentPageOf(PageOf[Judgment]):
    results: list[Judgment] | None = Field(
        None, description="Present when the call sent `limit` (Velt's form): the same records as `data`.")
    total: int | None = Field(None, description="Present with `results`: how many records it holds.")


class JudgmentPage(Doc):
    """collab's page of judgments, with Velt's `{results, total}` beside it for a call in Velt's form."""

    result: JudgmentPageOf


class JudgmentSearch(Doc):
    results: list[Judgment]
    totalInScope: int = Field(description="How many records `results` holds (after filtering; at most `limit`).")
    searchLatencyMs: float = Field(description="Milliseconds.")


class SearchAnswer(Doc):
    """`{result: {results, totalInScope, searchLatencyMs}}`: no status or message (spec)."""

    result: JudgmentSearch


class Backfilled(Doc):
    processed: int = Field(description="Activities of this batch read and derived again.")
    judgments: int = Field(description="Judgments they are now (the rest are not review decisions).")
    embedded: int = Field(description="Vectors written (texts that changed, or all with `force`).")
    resumeFrom: str | None = Field(description="Pass as `resumeFrom` for the next batch; null when done.")
    done: bool
