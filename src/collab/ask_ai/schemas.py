"""Request model of Ask AI."""

from typing import Literal

from pydantic import Field, field_validator

from collab.kit.envelope import Model
from collab.kit.openapi import Doc


class AskAi(Model):
    model: str = Field(min_length=1, max_length=200)
    prompt: str = Field(min_length=1, max_length=20_000)
    text: str = Field(min_length=1, max_length=100_000)

    @field_validator("model", "prompt", "text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Must not be empty")
        return value.replace("\x00", "")


# Response models (documentation and contract tests; see collab.kit.openapi).


class Rewritten(Doc):
    success: Literal[True]
    text: str = Field(description="The model's answer.")


class NotConfigured(Doc):
    success: Literal[False]
    error: str = Field(description="Why no answer: no API key is configured for the model's provider.")


class AskAiAnswer(Doc):
    """`{result: {success: true, text}}`, or `{result: {success: false, error}}` when the provider has no key."""

    result: Rewritten | NotConfigured
