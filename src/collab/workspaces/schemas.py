"""Request models of the workspace endpoints."""

import base64
import binascii
import re
from typing import Annotated, Any, Literal

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from pydantic import Field, field_validator, model_validator

from collab.events import CommentEvent, HuddleEvent
from collab.kit.envelope import Model
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules
from collab.llm.routing import SELF_HOSTED
from collab.workspaces import domains

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


# A domain as sent: a bare name or an origin URL (scheme, port, path are dropped when stored).
DomainText = Annotated[str, Field(max_length=2000)]


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


def _domains(values: list[str] | None) -> list[str] | None:
    """Each entry as Velt stores it (bare domain); the first bad one fails with its index in the message."""
    if values is None:
        return None
    out = []
    for i, raw in enumerate(values):
        try:
            out.append(domains.normalise(raw))
        except ValueError as exc:
            raise ValueError(f"Entry {i} ({raw[:100]!r}): {exc}") from None
    return out


class BasicWebhookServiceConfig(Model):
    """Velt's basic webhook service settings; an empty string clears a text field."""

    authToken: str = Field(None, max_length=500)
    rawNotificationUrl: str = Field(None, max_length=2000)
    processedNotificationUrl: str = Field(None, max_length=2000)
    encodeData: bool = None
    encryptData: bool = None
    publicKey: str = Field(None, max_length=20_000)
    enableDataProtection: bool = None
    # Velt's trigger names; names collab never emits are stored and simply never fire (ADR 0049).
    triggers: dict[str, bool] = Field(None, max_length=100)

    @field_validator("rawNotificationUrl", "processedNotificationUrl")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value and not re.match(r"^https?://\S+$", value):
            raise ValueError("Must be an http(s) URL")
        return value

    @field_validator("publicKey")
    @classmethod
    def _public_key(cls, value: str | None) -> str | None:
        return _rsa_public_key(value)

    @field_validator("triggers")
    @classmethod
    def _trigger_names(cls, value: dict[str, bool] | None) -> dict[str, bool] | None:
        if value is not None and any(not 0 < len(k) <= 100 for k in value):
            raise ValueError("Trigger names are 1-100 characters")
        return value


class BasicWebhookConfigUpdate(Model):
    useWebhookService: bool = None
    webhookServiceConfig: BasicWebhookServiceConfig = None

    @model_validator(mode="after")
    def _at_least_one(self):
        if not self.model_fields_set:
            raise ValueError("At least one of useWebhookService and webhookServiceConfig is required")
        return self


class CreateApiKey(Model):
    ownerEmail: str = Field(min_length=3, max_length=254)
    type: Literal["testing", "production"]
    apiKeyName: str = Field(None, min_length=1, max_length=200)
    createAuthToken: bool = True
    allowedDomains: list[DomainText] = Field(None, max_length=domains.MAX_PER_REQUEST)
    addLocalHostToAllowedDomains: bool = False
    useWebhookService: bool = None
    webhookServiceConfig: BasicWebhookServiceConfig = None
    # One deployment serves every key: a region is checked (Velt refuses an empty one) and otherwise ignored.
    persistenceDBRegion: str = Field(None, min_length=1, max_length=100)
    realtimeDBRegion: str = Field(None, min_length=1, max_length=100)

    _email = field_validator("ownerEmail")(_email)
    _name = field_validator("apiKeyName")(_not_blank)
    _allowed = field_validator("allowedDomains")(_domains)


class UpdateApiKey(Model):
    apiKey: str = Field(min_length=1, max_length=200)
    apiKeyName: str = Field(min_length=1, max_length=200)

    _name = field_validator("apiKeyName")(_not_blank)


class CopyApiKey(Model):
    sourceApiKey: str = Field(min_length=1, max_length=200)
    targetApiKey: str = Field(min_length=1, max_length=200)


class DomainList(Model):
    domains: list[DomainText] = Field(min_length=1, max_length=domains.MAX_PER_REQUEST)

    _domains = field_validator("domains")(_domains)


ModelProvider = Literal["openai", "anthropic", "gemini", "ollama", "openai-compatible"]


class ProviderKey(Model):
    """A cloud provider's key, or a model server the team runs (ADR 0061): its base URL, the model it answers with,
    and a key only where the server wants one."""

    provider: ModelProvider
    # A string sets the key; null removes it. A self-hosted server's key is optional (absent: none).
    customerApiKey: str | None = Field(None, min_length=8, max_length=1000)
    # Self-hosted only: a string sets the server (http or https); null removes the provider's entry.
    baseUrl: str | None = Field(None, min_length=8, max_length=2000)
    # Self-hosted only: the server's name for the model extraction, agents and memory use (Ask AI names its own).
    model: str | None = Field(None, min_length=1, max_length=200, pattern=r"^\S+$")

    @model_validator(mode="after")
    def _fits_the_provider(self):
        sent = self.model_fields_set
        if self.provider in SELF_HOSTED:
            if "baseUrl" not in sent:
                raise ValueError(f"baseUrl is required for {self.provider} (null removes it)")
            if self.baseUrl is None and (self.customerApiKey or self.model):
                raise ValueError("baseUrl null removes the entry; send no customerApiKey or model with it")
        else:
            if "customerApiKey" not in sent:
                raise ValueError("customerApiKey is required (null removes the key)")
            if sent & {"baseUrl", "model"}:
                raise ValueError(f"baseUrl and model are only for {' and '.join(sorted(SELF_HOSTED))}")
        return self


def _one_key_per_provider(v):
    # Values as sent (a dict) on the path where other fields failed, ProviderKey models once validated.
    entries = v.get("aiModelApiKey") or []
    providers = [e["provider"] if isinstance(e, dict) else e.provider for e in entries]
    if len(providers) != len(set(providers)):
        return Broken("aiModelApiKey", "aiModelApiKey names a provider more than once")
    return None


class ApiKeyConfigUpdate(Model):
    enableAdvancedQueries: bool = None
    aiModelApiKey: list[ProviderKey] = Field(None, max_length=5)
    embeddingModel: str = Field(
        None, min_length=1, max_length=200,
        description="The embedding model this key's judgment and knowledge search use (one of `embeddingModels`). "
        "Choosing another re-embeds the key's texts in the background; searches keep the old model until it is done "
        "(`embeddingModelSwitch`).")

    _rules = rules(rule("aiModelApiKey")(_one_key_per_provider))

    @model_validator(mode="after")
    def _at_least_one(self):
        # Model-level, and never hides another failure: a field that failed was provided.
        if not self.model_fields_set:
            raise ValueError("At least one field must be provided")
        return self


# RSA-OAEP-256 must wrap a 32-byte AES key (768 bits or fewer cannot), and under 2048 bits is too weak anyway.
MIN_PUBLIC_KEY_BITS, MAX_PUBLIC_KEY_BITS = 2048, 16384


def _rsa_public_key(value: str | None) -> str | None:
    """An empty string (unset) or a base64 DER SubjectPublicKeyInfo of an RSA key of 2048 to 16384 bits."""
    if value is None or value == "":
        return value
    try:
        key = serialization.load_der_public_key(base64.b64decode("".join(value.split()), validate=True))
    except (ValueError, TypeError, binascii.Error, UnsupportedAlgorithm):
        raise ValueError("Must be a base64 DER (SubjectPublicKeyInfo) RSA public key") from None
    if not isinstance(key, RSAPublicKey):
        raise ValueError("Must be an RSA public key")
    if not MIN_PUBLIC_KEY_BITS <= key.key_size <= MAX_PUBLIC_KEY_BITS:
        raise ValueError(f"Must be an RSA key of {MIN_PUBLIC_KEY_BITS} to {MAX_PUBLIC_KEY_BITS} bits")
    return value


class WebhookConfigUpdate(Model):
    isEnabled: bool = None
    encryptData: bool = None
    encodeData: bool = None
    publicKey: str = Field(None, max_length=20_000)
    enableDataProtection: bool = None

    @field_validator("publicKey")
    @classmethod
    def _public_key(cls, value: str | None) -> str | None:
        return _rsa_public_key(value)

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


# Response models (documentation and contract tests; see collab.kit.openapi).

ApiKeyType = Literal["testing", "production"]


class Owner(Doc):
    email: str
    id: str
    name: str
    avatar: str = Field(description="Empty string when no avatar was given.")


class ApiKeyEntry(Doc):
    apiKeyName: str
    id: str
    type: ApiKeyType

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An API key as its workspace lists it."""
        return {"apiKeyName": row["name"], "id": row["id"], "type": row["type"]}


class Workspace(Doc):
    id: str
    name: str
    owner: Owner
    authToken: str = Field(description="The workspace-level auth token (workspace auth).")
    apiKeyList: dict[str, ApiKeyEntry] = Field(description="Keyed by API key ID.")

    @staticmethod
    def wire(row: dict[str, Any], keys: list[dict[str, Any]], auth_token: str) -> dict[str, Any]:
        """The workspace object: its owner, its token (decrypted by the caller) and its API keys by id."""
        owner = {
            "email": row["owner_email"], "id": row["owner_id"], "name": row["owner_name"], "avatar": row["owner_avatar"]
        }
        keys_by_id = {k["id"]: ApiKeyEntry.wire(k) for k in keys}
        return {"id": row["id"], "name": row["name"], "owner": owner, "authToken": auth_token, "apiKeyList": keys_by_id}


class AuthToken(Doc):
    token: str
    name: str
    domains: list[str]


class AuthTokenReset(Doc):
    apiKey: str
    newAuthToken: AuthToken


class AuthTokens(Doc):
    apiKey: str
    authTokens: list[AuthToken]


class NewApiKey(Doc):
    apiKey: str = Field(description="ID of the new API key.")


class DomainsAdded(Doc):
    domainsAdded: list[str]
    skippedDomains: list[str] | None = Field(None, description="Those already allowed; absent when none.")


class DomainsRemoved(Doc):
    domainsRemoved: list[str]
    skippedDomains: list[str] | None = Field(None, description="Those not allowed before; absent when none.")


class AllowedDomains(Doc):
    allowedDomains: list[str] = Field(description="Bare domains; empty allows every origin.")


class ApiKeyCopied(Doc):
    """Velt's answer to a copy: an empty object."""


class WorkspaceAuthToken(Doc):
    authToken: str


class BasicWebhookServiceConfigOut(Doc):
    authToken: str = Field(description="Empty string when unset.")
    rawNotificationUrl: str = Field(description="Empty string when unset.")
    processedNotificationUrl: str = Field(description="Empty string when unset.")
    encodeData: bool | None = None
    encryptData: bool | None = None
    publicKey: str | None = None
    enableDataProtection: bool | None = None
    triggers: dict[str, bool] | None = None


class BasicWebhookConfig(Doc):
    useWebhookService: bool
    webhookServiceConfig: BasicWebhookServiceConfigOut


class ProviderKeyState(Doc):
    """A stored model-provider key, shown only by its last 4 characters."""

    provider: ModelProvider
    isSet: bool
    last4: str = Field(description="Of the key; empty for a self-hosted server without one.")
    keySet: bool | None = Field(None, description="Self-hosted: whether a key is stored (a server may want none).")
    baseUrlHost: str | None = Field(None, description="Self-hosted: the host (and port) of the stored base URL.")
    model: str | None = Field(None, description="Self-hosted: the model extraction, agents and memory use.")


class EmbeddingModelChoice(Doc):
    name: str
    dimensions: int
    role: str = Field(description="What the model is for (fast, accurate), or `registered` for one the operator added.")


class EmbeddingModelSwitch(Doc):
    model: str = Field(description="The model being filled in.")
    state: str = Field(description="running, stopped or finishing (its knowledge texts, then the switch).")
    judgmentsDone: int
    judgments: int
    startedAt: int = Field(description="Epoch milliseconds.")


class ApiKeyConfig(Doc):
    enableAdvancedQueries: bool
    aiModelApiKey: list[ProviderKeyState] = Field(description="Only the providers whose key is set.")
    embeddingModel: str | None = Field(description="The model search uses for this key (null before any is loaded).")
    embeddingModels: list[EmbeddingModelChoice] = Field(description="The models this key may choose.")
    embeddingModelSwitch: EmbeddingModelSwitch | None = Field(description="The switch under way, if any.")


class AdvancedWebhookConfig(Doc):
    isEnabled: bool
    encryptData: bool
    encodeData: bool
    publicKey: str = Field(description="Empty string when unset.")
    enableDataProtection: bool


class ActivityTriggersOut(Doc):
    comment: dict[CommentEvent, bool] | None = None


class ActivityServiceConfigOut(Doc):
    isEnabled: bool = Field(description="False when never set.")
    enabledTime: int | None = Field(None, description="Epoch milliseconds.")
    immutable: bool | None = None
    triggers: ActivityTriggersOut | None = None


class ActivityConfig(Doc):
    activityServiceConfig: ActivityServiceConfigOut


class DelayConfigOut(Doc):
    isEnabled: bool | None = None
    delaySeconds: int | None = None


class BatchScopeOut(Doc):
    isEnabled: bool | None = None
    batchWindowSeconds: int | None = None
    maxActivities: int | None = None


class BatchConfigOut(Doc):
    document: BatchScopeOut | None = None
    user: BatchScopeOut | None = None


class NotificationTriggersOut(Doc):
    comment: dict[CommentEvent, bool] | None = None
    huddle: dict[HuddleEvent, bool] | None = None


class NotificationServiceConfigOut(Doc):
    """The stored config: only what was written (seeding writes triggers only)."""

    triggers: NotificationTriggersOut | None = None
    delayConfig: DelayConfigOut | None = None
    batchConfig: BatchConfigOut | None = None


class NotificationConfig(Doc):
    """The config after an update: the stored values, nothing filled in."""

    useNotificationService: bool
    notificationServiceConfig: NotificationServiceConfigOut


class FullDelayConfig(Doc):
    isEnabled: bool
    delaySeconds: int


class FullBatchScope(Doc):
    isEnabled: bool
    batchWindowSeconds: int
    maxActivities: int


class FullBatchConfig(Doc):
    document: FullBatchScope
    user: FullBatchScope


class FullNotificationTriggers(Doc):
    comment: dict[CommentEvent, bool]
    huddle: dict[HuddleEvent, bool]


class FullNotificationServiceConfig(Doc):
    triggers: FullNotificationTriggers
    delayConfig: FullDelayConfig
    batchConfig: FullBatchConfig


class FullNotificationConfig(Doc):
    """The config with every unset field filled from the defaults."""

    useNotificationService: bool
    notificationServiceConfig: FullNotificationServiceConfig
