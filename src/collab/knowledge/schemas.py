"""Request models of the knowledge operations (Velt rejects unknown keys on them) and their documented answers."""

import math
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from collab.files.common import MAX_CANONICAL_CHARS
from collab.kit.envelope import Model
from collab.kit.openapi import Doc

MAX_INLINE_BYTES = 5 * 1024 * 1024  # Velt's 5,242,880
MAX_REF_BYTES = 30 * 1024 * 1024  # Velt's 31,457,280
# Base64 of 5 MB plus room for line breaks: anything longer is refused before decoding.
MAX_BASE64_CHARS = math.ceil(MAX_INLINE_BYTES / 3) * 4 * 103 // 100 + 64
ID = 200
SCOPE_ID = 256
SourceId = Annotated[str, Field(min_length=1, max_length=ID)]


class Closed(Model):
    """A request block Velt validates strictly: unknown keys are refused (INVALID_ARGUMENT)."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)


class InlineFile(Closed):
    base64: str = Field(min_length=1, max_length=MAX_BASE64_CHARS)
    mimeType: str = Field(min_length=1, max_length=200)
    fileName: str = Field(min_length=1, max_length=255)
    fileSize: int = Field(ge=1, le=MAX_INLINE_BYTES)


class IngestKnowledge(Closed):
    source: Literal["inline", "fileRef"]
    file: InlineFile | None = None
    fileRef: str | None = Field(None, min_length=1, max_length=300)
    mimeType: str | None = Field(None, min_length=1, max_length=200)
    organizationId: str | None = Field(None, min_length=1, max_length=SCOPE_ID)
    documentId: str | None = Field(None, min_length=1, max_length=SCOPE_ID)


class UploadUrl(Closed):
    mimeType: str = Field(min_length=1, max_length=200)
    fileSize: int = Field(ge=1, le=MAX_REF_BYTES)
    fileName: str | None = Field(None, min_length=1, max_length=255)
    organizationId: str | None = Field(None, min_length=1, max_length=SCOPE_ID)
    documentId: str | None = Field(None, min_length=1, max_length=SCOPE_ID)


class SourceRef(Closed):
    sourceId: str = Field(min_length=1, max_length=ID)


class UpdateKnowledge(Closed):
    sourceId: str = Field(min_length=1, max_length=ID)
    newContent: str = Field(min_length=1, max_length=MAX_CANONICAL_CHARS)


class SearchKnowledge(Closed):
    query: str = Field(min_length=1, max_length=2000)
    sourceId: SourceId | Annotated[list[SourceId], Field(min_length=2, max_length=30)] | None = None
    limit: int = Field(10, ge=1, le=50)
    includeRules: bool = False


class ListKnowledge(Closed):
    """No fields: send an empty object."""


# Response models (documentation and contract tests; see collab.kit.openapi).


class Ingested(Doc):
    status: Literal["processing"]
    sourceId: str
    message: str


class IngestAnswer(Doc):
    result: Ingested


class SourceMetadata(Doc):
    usedRawFallback: bool = Field(description="Present (true) when the converter fell back to the raw text.")


class IngestStatus(Doc):
    status: Literal["processing", "completed", "failed"]
    sourceId: str
    startedAt: int | None = None
    updatedAt: int | None = None
    mimeType: str | None = None
    dedupOf: str | None = None
    failureReason: str | None = None
    extractedRulesCount: int | None = Field(None, description="Only when completed.")
    chunkCount: int | None = Field(None, description="Only when completed.")
    originalDownloadUrl: str | None = Field(None, description="Signed, 15 minutes; only when completed.")
    canonicalMdDownloadUrl: str | None = Field(None, description="Signed, 15 minutes; only when completed.")
    metadata: SourceMetadata | None = None


class StatusAnswer(Doc):
    result: IngestStatus


class KnowledgeSource(Doc):
    id: str
    sourceType: Literal["upload", "extraction"] = Field(
        description="`upload` (memory/knowledge/ingest) or `extraction` (the file of an agents/extract call).")
    fileName: str | None
    uploadedAt: int
    updatedAt: int
    mimeType: str | None = None
    embeddingStatus: Literal["processing", "completed", "failed"]
    ruleCount: int
    chunkCount: int
    version: int
    ruleBased: bool
    sizeBytes: int
    organizationId: str | None = None
    documentId: str | None = None
    failureReason: str | None = None
    dedupOf: str | None = None
    sha256: str | None = None
    metadata: SourceMetadata | None = None
    originalDownloadUrl: str | None = Field(None, description="Signed, 15 minutes; empty when it cannot be minted.")
    canonicalMdDownloadUrl: str | None = Field(None, description="Signed, 15 minutes; empty when it cannot be minted.")


class ListAnswer(Doc):
    result: list[KnowledgeSource]


class SearchHit(Doc):
    kind: Literal["chunk", "rule"] | None = Field(None, description="Only with includeRules.")
    ruleId: str | None = None
    sourceId: str | None = None
    text: str
    score: float | None = Field(None,
                                description="Cosine distance, lower is more relevant; absent on recency fallback.")
    category: str | None = None


class SearchResult(Doc):
    results: list[SearchHit]
    recordsSearched: int


class SearchAnswer(Doc):
    result: SearchResult


class Rule(Doc):
    id: str
    content: str
    category: str | None
    index: int


class RulesAnswer(Doc):
    result: list[Rule]


class RuleDiff(Doc):
    added: list[str]
    removed: list[str]
    unchanged: int


class Updated(Doc):
    diff: RuleDiff
    newVersion: int


class UpdateAnswer(Doc):
    result: Updated


class Deleted(Doc):
    status: Literal["deleted"]
    sourceId: str
    deletedChunks: int
    deletedRules: int


class DeleteAnswer(Doc):
    result: Deleted


class DownloadAnswer(Doc):
    result: str | None = Field(description="The canonical markdown, or null (unknown, processing or none).")


class UploadSlot(Doc):
    uploadUrl: str = Field(description="PUT the raw bytes here with the same Content-Type; served by this service.")
    fileRef: str = Field(description="collab://uploads/<id>: pass it to memory/knowledge/ingest.")
    expiresAt: int


class UploadUrlAnswer(Doc):
    result: UploadSlot
