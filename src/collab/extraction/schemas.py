"""Request model of Extract Agents, and the shapes a model's answers must have."""

import base64
import binascii
import math
import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from collab.files import SUPPORTED_MIME_TYPES
from collab.kit.envelope import Model
from collab.kit.openapi import Doc

MAX_FILE_BYTES = 5 * 1024 * 1024
# Base64 of 5 MB plus room for line breaks: anything longer is refused before decoding.
MAX_BASE64_CHARS = math.ceil(MAX_FILE_BYTES / 3) * 4 * 103 // 100 + 64
_DATA_URL = re.compile(r"^data:[^,]{0,200};base64,", re.IGNORECASE)


def normalise_mime(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


class ExtractAgents(Model):
    fileBase64: str = Field(min_length=1, max_length=MAX_BASE64_CHARS)
    mimeType: str = Field(min_length=1, max_length=200)
    # Any string passes validation; an unknown provider then fails with INTERNAL (spec).
    provider: str = Field(None, max_length=100)
    fileName: str = Field(None, max_length=500)

    @field_validator("fileBase64")
    @classmethod
    def _base64(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Must not be empty or whitespace")
        text = "".join(_DATA_URL.sub("", value.strip()).split())
        text += "=" * (-len(text) % 4)
        try:
            content = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("Not valid base64") from None
        if len(content) > MAX_FILE_BYTES:
            raise ValueError(f"The decoded file is over {MAX_FILE_BYTES} bytes (5 MB)")
        if not content:
            raise ValueError("The decoded file is empty")
        return text  # normalised: no data-URL prefix, no whitespace, padded

    @field_validator("mimeType")
    @classmethod
    def _supported(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Must not be empty")
        if normalise_mime(value) not in SUPPORTED_MIME_TYPES:
            raise ValueError(f"Unsupported file type {value!r}; supported: {', '.join(sorted(SUPPORTED_MIME_TYPES))}")
        return normalise_mime(value)

    @field_validator("fileName")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return None if value is None else value.replace("\x00", "")

    def content(self) -> bytes:
        """The decoded file (validated above)."""
        return base64.b64decode(self.fileBase64)


# --- what the model must answer ------------------------------------------------------------------

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

# The types a user-context field may have (agents/create refuses any other): a model's other words map to them.
CONTEXT_FIELD_TYPES = ("string", "number", "boolean")
_NUMERIC = frozenset({"number", "integer", "int", "float", "decimal"})
_BOOLEAN = frozenset({"boolean", "bool"})


def context_type(value: str) -> str:
    """A model's type word as agents/create takes it: number or boolean when it says so, else string (text, date,
    url, list and the like are strings)."""
    word = value.strip().lower()
    return "number" if word in _NUMERIC else "boolean" if word in _BOOLEAN else "string"


class ContextField(BaseModel):
    id: str = Field(pattern=_ID.pattern)
    title: str = Field(min_length=1, max_length=200)
    type: Literal["string", "number", "boolean"]
    example: str | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _typed(cls, value: object) -> object:
        return context_type(value) if isinstance(value, str) else value


class DraftAgent(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(min_length=1, max_length=1000)
    prompt: str = Field(min_length=1, max_length=20_000)
    taskIds: list[int]
    userContextFields: list[ContextField] = []


class SkippedRef(BaseModel):
    taskId: int
    reason: str = Field(min_length=1, max_length=500)


class ChunkAnswer(BaseModel):
    agents: list[DraftAgent]
    skipped: list[SkippedRef] = []
    summary: str = ""


class MergeGroup(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(min_length=1, max_length=1000)
    prompt: str = Field(min_length=1, max_length=40_000)
    members: list[int]


class MergeAnswer(BaseModel):
    groups: list[MergeGroup]


# Response models (documentation and contract tests; see collab.kit.openapi).


class UserContextField(Doc):
    id: str
    title: str
    type: Literal["string", "number", "boolean"] = Field(description="As agents/create takes it.")
    example: str | None = Field(None, description="Absent when the model gave none.")


class AgentDraft(Doc):
    """An extracted agent draft."""

    name: str
    description: str
    prompt: str = Field(description="Consolidated QA instruction; maps to `instructions` of agent creation.")
    sourceTasks: list[str] = Field(description="The task texts grouped into this agent (provenance only).")
    userContextFields: list[UserContextField] | None = Field(None, description="Absent when the agent needs none.")


class SkippedTask(Doc):
    originalText: str
    reason: str


class ExtractionMemory(Doc):
    sourceId: str = Field(description="The workspace knowledge source the file was stored as.")


class ExtractionResult(Doc):
    agents: list[AgentDraft] = Field(description="At most 50.")
    summary: str
    skipped: list[SkippedTask]
    totalTasksParsed: int = Field(description="Checks found before grouping or skipping (also when agents are cut).")
    memory: ExtractionMemory


class Extraction(Doc):
    extractionResult: ExtractionResult
