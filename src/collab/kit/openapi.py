"""Response models for the OpenAPI document: every route declares what its 200 and its errors carry.

These models document and test the wire (the contract tests and schemathesis validate real responses
against them); handlers still render their bodies with `ok`/`listed`/`raw`, so nothing is re-validated
on the hot path. They forbid unknown keys, so a field the docs do not name fails the contract tests.
A record's model also serialises it: its static `wire(row)` builds the plain dict a handler sends, and
tests/architecture/test_wire_models.py validates what each `wire` builds against its model.
"""

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from collab.kit.errors import HTTP_STATUS

T = TypeVar("T")


class Doc(BaseModel):
    """Base of every documented response object: closed (`additionalProperties: false`)."""

    model_config = ConfigDict(extra="forbid")


class Success(Doc, Generic[T]):
    status: Literal["success"]
    message: str
    data: T


class Answer(Doc, Generic[T]):
    """`{result: {status, message, data}}`."""

    result: Success[T]


class PageOf(Doc, Generic[T]):
    status: Literal["success"]
    message: str
    data: list[T]
    pageToken: str | None = Field(description="Pass back to get the next page; null on the last page.")


class Page(Doc, Generic[T]):
    """`{result: {status, message, data: [...], pageToken}}`."""

    result: PageOf[T]


class Bare(Doc):
    status: Literal["success"]
    message: str


class Acknowledged(Doc):
    """`{result: {status, message}}`: an operation with nothing to return."""

    result: Bare


class Issue(Doc):
    code: str
    path: list[str]
    message: str


class ItemOutcome(Doc):
    """One entry of a batch answer keyed by id."""

    success: bool
    id: str
    message: str
    code: Literal["already-exists", "internal"] | None = None


class IssueDetails(Doc):
    issues: list[Issue]


class RetryDetails(Doc):
    retryAfterSeconds: int


class Failure(Doc):
    status: Literal[tuple(HTTP_STATUS)]  # type: ignore[valid-type]
    message: str
    details: IssueDetails | RetryDetails | dict[str, ItemOutcome] | None = Field(
        None, description="issues (validation), retryAfterSeconds (rate limits), or per-item outcomes (Add Documents).")


class ErrorBody(Doc):
    """`{error: {status, message, details?}}`, the body of every failure."""

    error: Failure


_ERROR_TEXT = {
    400: "INVALID_ARGUMENT or FAILED_PRECONDITION", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "ALREADY_EXISTS", 413: "INVALID_ARGUMENT: request body too large",
    429: "RESOURCE_EXHAUSTED (rate limit; see Retry-After)", 500: "INTERNAL",
    503: "UNAVAILABLE: a dependency (database, queue) is down; retry", 504: "DEADLINE_EXCEEDED"
}
ERRORS: dict[int | str,
             dict[str,
                  Any]] = {status: {"model": ErrorBody, "description": text}
                           for status, text in _ERROR_TEXT.items()}


def answer(data: Any, status: int = 200) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route whose `result.data` is `data` (a model or type)."""
    return {status: {"model": Answer[data]}}


def page(record: Any) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a paged list of `record`."""
    return {200: {"model": Page[record]}}


def plain(model: type[BaseModel], status: int = 200) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a body the spec shapes itself (no `{result: {status, message, data}}`)."""
    return {status: {"model": model}}


ACKNOWLEDGED = plain(Acknowledged)
# `{id: {success, id, message}}`: the answer of batch calls keyed by the item's id.
BY_ID = answer(dict[str, ItemOutcome])
