"""Request models of advanced webhooks (Svix-shaped endpoints, plus messages)."""

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field

from collab.events import CommentEvent, HuddleEvent, OtherEvent
from collab.kit import safety
from collab.kit.envelope import Model
from collab.kit.fields import Id
from collab.kit.openapi import Doc
from collab.webhooks.payload import iso

EventType = Literal[CommentEvent, HuddleEvent, OtherEvent]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)


def _http_url(url: str) -> str:
    # The sender's own parser: a URL it would refuse or crash on is refused here (the address check is the service's).
    try:
        safety.parse(url)
    except safety.Refused as exc:
        raise ValueError(str(exc)) from None
    return url


Url = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_http_url)]
Uid = Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.-]+$")]
Channel = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:#-]+$")]
FilterTypes = Annotated[list[EventType], Field(min_length=1, max_length=len(EVENT_TYPES))]
Channels = Annotated[list[Channel], Field(min_length=1, max_length=10)]
Metadata = Annotated[dict[str, Annotated[str, Field(max_length=1000)]], Field(max_length=50)]
RateLimit = Annotated[int, Field(ge=1, le=65535)]


class CreateEndpoint(Model):
    url: Url
    description: str = Field("", max_length=2000)
    filterTypes: FilterTypes | None = None
    channels: Channels | None = None
    disabled: bool = False
    rateLimit: RateLimit | None = None
    uid: Uid | None = None
    metadata: Metadata = Field(default_factory=dict)


class UpdateEndpoint(Model):
    """Only the sent fields change; null clears filterTypes, channels, rateLimit and uid."""

    endpointId: Id
    url: Url = None
    description: str = Field(None, max_length=2000)
    filterTypes: FilterTypes | None = None
    channels: Channels | None = None
    disabled: bool = None
    rateLimit: RateLimit | None = None
    uid: Uid | None = None
    metadata: Metadata = None


class EndpointRef(Model):
    endpointId: Id


class ListEndpoints(Model):
    limit: int = Field(50, ge=1, le=250)
    iterator: str = Field(None, max_length=1000)


class ListMessages(Model):
    endpointId: Id = None
    limit: int = Field(50, ge=1, le=250)
    iterator: str = Field(None, max_length=1000)


class RetryMessage(Model):
    messageId: Id
    endpointId: Id


# Response models (documentation and contract tests; see collab.kit.openapi).


class WebhookEndpoint(Doc):
    """A webhook endpoint as Svix shapes it (plus disabledReason); never its secret."""

    id: str
    url: str
    description: str
    filterTypes: list[EventType] | None = Field(description="Null: every event type.")
    channels: list[str] | None = Field(description="Null: every channel.")
    disabled: bool
    disabledReason: str | None = Field(description="Why the service disabled the endpoint; null otherwise.")
    rateLimit: int | None = Field(description="Deliveries per second; null: unlimited.")
    uid: str | None
    metadata: dict[str, str] = Field(description="Client-supplied, stored and returned as is.")
    version: Literal[1]
    createdAt: str = Field(description="ISO 8601, UTC.")
    updatedAt: str = Field(description="ISO 8601, UTC.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An endpoint as Svix shapes it (plus disabledReason); the secret is never part of it."""
        return {
            "id": row["id"], "url": row["url"], "description": row["description"], "filterTypes": row["filter_types"],
            "channels": row["channels"], "disabled": row["disabled"], "disabledReason": row["disabled_reason"],
            "rateLimit": row["rate_limit"], "uid": row["uid"], "metadata": row["metadata"], "version": 1,
            "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])
        }


class WebhookEndpointPage(Doc):
    data: list[WebhookEndpoint]
    iterator: str | None = Field(description="Pass back to get the next page; null when there is none.")
    prevIterator: str | None = Field(description="Pass back to get the previous page; null when there is none.")
    done: bool


class WebhookEndpointDeleted(Doc):
    id: str
    deleted: Literal[True]


class WebhookEndpointSecret(Doc):
    key: str = Field(description="The signing secret, `whsec_...`.")


class WebhookAttempt(Doc):
    endpointId: str
    attempt: int = Field(description="1 for the first attempt.")
    statusCode: int | None = Field(description="The endpoint's HTTP status; null when no answer came.")
    at: str = Field(description="ISO 8601, UTC.")
    durationMs: int
    response: str | None = Field(description="The start of the endpoint's answer; null when no answer came.")
    error: str | None


class WebhookMessage(Doc):
    id: str
    eventType: EventType
    timestamp: str = Field(description="ISO 8601, UTC.")
    status: Literal["pending", "succeeded",
                    "failed"] = Field(description="failed if any delivery failed, pending while any is under way.")
    attempts: list[WebhookAttempt]
    nextAttemptAt: str | None = Field(None, description="ISO 8601, UTC; present while a retry is scheduled.")
    error: str | None = Field(None, description="Why the body could not be made; absent otherwise.")


class WebhookMessagePage(Doc):
    messages: list[WebhookMessage]
    iterator: str | None = Field(description="Pass back to get the next page; null on the last page.")
    done: bool


class WebhookRetryQueued(Doc):
    messageId: str
    endpointId: str
    status: Literal["queued"]
