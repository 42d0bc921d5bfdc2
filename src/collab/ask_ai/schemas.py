"""Request model of Ask AI."""

from pydantic import Field, field_validator

from collab.kit.envelope import Model


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
