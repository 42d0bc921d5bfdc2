"""Request models of the workspace endpoints."""

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from collab.events import CommentEvent, HuddleEvent
from collab.kit.envelope import Model

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")


def _email(value: str) -> str:
    value = value.strip()
    if not _EMAIL.match(value):
        raise ValueError("Invalid email address")
    return value


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("Must not be empty")
    return value


class CreateWorkspace(Model):
    ownerEmail: str = Field(min_length=3, max_length=254)
    name: str = Field(None, min_length=1, max_length=200)
    workspaceName: str = Field(None, min_length=1, max_length=200)
    avatar: str = Field(None, max_length=2000)

    _email = field_validator("ownerEmail")(_email)
    _names = field_validator("name", "workspaceName")(_not_blank)

    @field_validator("avatar")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://\S+$", value):
            raise ValueError("Must be an http(s) URL")
        return value


class ApiKeyRef(Model):
    apiKey: str = Field(min_length=1, max_length=200)


class CreateApiKey(Model):
    ownerEmail: str = Field(min_length=3, max_length=254)
    type: Literal["testing", "production"]
    apiKeyName: str = Field(None, min_length=1, max_length=200)
    createAuthToken: bool = True

    _email = field_validator("ownerEmail")(_email)
    _name = field_validator("apiKeyName")(_not_blank)


class ProviderKey(Model):
    provider: Literal["openai", "anthropic", "gemini"]
    # A string sets the key; null removes it.
    customerApiKey: str | None = Field(min_length=8, max_length=1000)


class ApiKeyConfigUpdate(Model):
    enableAdvancedQueries: bool = None
    aiModelApiKey: list[ProviderKey] = Field(None, max_length=3)

    @model_validator(mode="after")
    def _at_least_one(self):
        if not self.model_fields_set:
            raise ValueError("At least one field must be provided")
        providers = [entry.provider for entry in self.aiModelApiKey or []]
        if len(providers) != len(set(providers)):
            raise ValueError("aiModelApiKey names a provider more than once")
        return self


class WebhookConfigUpdate(Model):
    isEnabled: bool = None
    encryptData: bool = None
    encodeData: bool = None
    publicKey: str = Field(None, max_length=20_000)
    enableDataProtection: bool = None

    @model_validator(mode="after")
    def _at_least_one(self):
        if not self.model_fields_set:
            raise ValueError("At least one field must be provided")
        return self


class ActivityTriggers(Model):
    comment: dict[CommentEvent, bool] = None


class ActivityServiceConfig(Model):
    isEnabled: bool = None
    enabledTime: int = Field(None, ge=0, le=10**14)
    immutable: bool = None
    triggers: ActivityTriggers = None

    @model_validator(mode="after")
    def _at_least_one(self):
        if not self.model_fields_set:
            raise ValueError("At least one field must be provided")
        return self


class ActivityConfigUpdate(Model):
    activityServiceConfig: ActivityServiceConfig


class DelayConfig(Model):
    isEnabled: bool = None
    delaySeconds: int = Field(None, ge=10, le=15_552_000)


class BatchScope(Model):
    isEnabled: bool = None
    batchWindowSeconds: int = Field(None, ge=10, le=604_800)
    maxActivities: int = Field(None, ge=2, le=50)


class BatchConfig(Model):
    document: BatchScope = None
    user: BatchScope = None


class NotificationTriggers(Model):
    comment: dict[CommentEvent, bool] = None
    huddle: dict[HuddleEvent, bool] = None


class NotificationServiceConfig(Model):
    triggers: NotificationTriggers = None
    delayConfig: DelayConfig = None
    batchConfig: BatchConfig = None


class NotificationConfigUpdate(Model):
    useNotificationService: bool = None
    notificationServiceConfig: NotificationServiceConfig = None

    @model_validator(mode="after")
    def _at_least_one(self):
        if not self.model_fields_set:
            raise ValueError("At least one of useNotificationService and notificationServiceConfig is required")
        return self
