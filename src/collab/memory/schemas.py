"""Request and response models of memory ask and suggest (Velt's v2/memory/ask and v2/memory/suggest)."""

from typing import Literal

from pydantic import AliasChoices, Field, field_validator

from collab.judgments.schemas import Filters, SearchJudgments
from collab.kit.envelope import Model
from collab.kit.openapi import Doc

Scope = Literal["document", "organization", "apiKey"]
OrganizationId = Field(None, min_length=1, max_length=200, validation_alias=AliasChoices("organizationId", "orgId"))
DocumentId = Field(None, min_length=1, max_length=200, validation_alias=AliasChoices("documentId", "docId"))


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("Must not be empty")
    return value


class AskMemory(Model):
    question: str = Field(min_length=1, max_length=5000)
    organizationId: str = OrganizationId
    documentId: str = DocumentId
    filters: Filters = None
    recencyDays: int = Field(None, ge=1, le=365)

    _question = field_validator("question")(_not_blank)

    def search(self, *, limit: int) -> SearchJudgments:
        """The judgment search that retrieves this question's records (search's scope rules and filters)."""
        fields = self.model_dump(exclude_none=True, exclude={"question"})
        return SearchJudgments.model_validate({**fields, "query": self.question, "limit": limit})


class SuggestDecision(Model):
    query: str = Field(min_length=1, max_length=5000)
    organizationId: str = OrganizationId
    documentId: str = DocumentId

    _query = field_validator("query")(_not_blank)


# Response models (documentation and contract tests; see collab.kit.openapi).


class Citation(Doc):
    recordId: str = Field(description="A judgment's `recordId`, or a knowledge source's id, among the records shown "
                          "to the model (citations of anything else are dropped).")
    snippet: str = Field(description="The cited text: the model's quote when the record holds it, else the record's "
                         "opening words.")


class Answer(Doc):
    answer: str = Field(description="The grounded answer; empty when nothing relevant was found.")
    citations: list[Citation]
    confidence: float = Field(description="0 to 1; 0 when the answer is empty.")
    recordsSearched: int = Field(description="How many judgment records were put in front of the model.")


class AskAnswer(Doc):
    """`{result: {answer, citations, confidence, recordsSearched}}`: no status or message (Velt)."""

    result: Answer


class Suggestion(Doc):
    recommendation: Literal["approve", "reject"]
    confidence: float = Field(description="0 to 1: the side's similarity-weighted share, times its support.")
    basedOn: int = Field(description="How many judgments support this recommendation.")
    scope: Scope
    scopeLabel: Literal["This document", "This organization", "All content"]
    topReasons: list[str] = Field(description="At most 3 reasons, phrased from the supporting judgments.")
    uniqueReviewers: int = Field(description="How many distinct reviewers made the supporting judgments.")
    caveats: list[str]


class Suggestions(Doc):
    primary: Suggestion | None = Field(description="Null when fewer than 2 judgments support the leading decision.")
    conflict: Suggestion | None = Field(description="The other side, when each side has 2 or more judgments.")


class SuggestAnswer(Doc):
    """`{result: {primary, conflict}}`: no status or message (Velt)."""

    result: Suggestions
