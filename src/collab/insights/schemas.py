"""Request models of memory insights (stats, patterns, profiles, alerts) and their documented answers."""

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from collab.kit.envelope import Model, dumps
from collab.kit.openapi import Doc

AlertType = Literal["anomaly", "configuration_drift", "emerging_standard", "standards_drift"]
Severity = Literal["high", "medium", "low"]
# Client keys inside an alert config beyond the documented four: stored and returned as sent, within these bounds.
CONFIG_MAX_KEYS = 50
CONFIG_MAX_BYTES = 16_384


class GetProfile(Model):
    targetUserId: str = Field(None, min_length=1, max_length=200)


class AlertRef(Model):
    alertId: str = Field(min_length=1, max_length=200)


class DismissUser(Model):
    uid: str = Field(max_length=200)


class DismissAlert(AlertRef):
    user: DismissUser = None


class AlertConfigIn(Model):
    """`{enabled?, maxAlertsPerWeek?, enabledAlertTypes?, severityThreshold?}`; other keys are kept as sent."""

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)
    enabled: bool = None
    maxAlertsPerWeek: int = Field(None, ge=0, le=2**53 - 1)
    # Unrecognised alert types are accepted and stored (Velt's docs).
    enabledAlertTypes: list[Annotated[str, Field(max_length=100)]] = Field(None, max_length=20)
    severityThreshold: Severity = None

    @model_validator(mode="after")
    def _bounded(self):
        extra = self.model_extra or {}
        if len(extra) > CONFIG_MAX_KEYS:
            raise ValueError(f"config holds at most {CONFIG_MAX_KEYS} keys")
        if len(dumps(self.model_dump(exclude_unset=True))) > CONFIG_MAX_BYTES:
            raise ValueError(f"config is at most {CONFIG_MAX_BYTES} bytes of JSON")
        return self


class UpdateAlertConfig(Model):
    config: AlertConfigIn


# Response models (documentation and contract tests; see collab.kit.openapi).


class Stats(Doc):
    totalActivities: int = Field(description="Judgments of the key, counted up to 10,000 (a ceiling, not a total).")
    totalProfiles: int = Field(description="Reviewer profiles, counted up to 500.")
    totalPatterns: int = Field(description="Detected patterns, counted up to 100.")
    totalKnowledgeSources: int = Field(description="Knowledge sources of the key, exactly.")


class StatsAnswer(Doc):
    """`{result: {...}}`: no status or message (Velt's shape)."""

    result: Stats


class Pattern(Doc):
    """A recurring reason among the key's judgments (docs/adr/0058-memory-insights.md)."""

    scope: Literal["apiKey", "org"]
    organizationId: str | None = Field(None, description="The organization id you sent; present when scope is org.")
    description: str
    confidence: float
    sourceCount: int
    contentType: str | None
    category: Literal["rejection", "approval", "feedback"] | None
    discoveredAt: int = Field(description="Epoch milliseconds; moves when the judgments behind it change.")
    updatedAt: int = Field(description="Epoch milliseconds.")
    enforcementRate: float | None = Field(None, description="Absent when none of its judgments decided anything.")
    uniqueReviewers: int | None = None
    topSourceRecordIds: list[str] | None = None


class PatternsAnswer(Doc):
    result: list[Pattern]


class Flag(Doc):
    issue: str
    count: int


class OrgShare(Doc):
    organizationId: str
    clientOrganizationId: str
    judgments: int
    approvals: int
    approvalRate: float


class EvolvedStandard(Doc):
    topic: str
    shiftDate: int
    oldPattern: str
    newPattern: str


class Profile(Doc):
    """A reviewer's profile, as of the key's last insights computation."""

    userId: str
    name: str | None
    email: str | None
    totalJudgments: int
    approvalRate: float
    avgReviewTimeSeconds: int = Field(description="Reserved: always 0.")
    topFlags: list[Flag]
    contentTypes: list[str]
    peakHours: list[int] = Field(description="UTC hours.")
    orgBreakdown: dict[str, OrgShare]
    lastActive: int
    twinEligible: bool
    twinAccuracy: float | None = Field(description="Always null: collab has no twin-assisted judgments.")
    evolvedStandards: list[EvolvedStandard] | None = Field(None, description="Present only when there is one.")


class ProfileAnswer(Doc):
    result: Profile | None


class Evidence(Doc):
    metric: Literal["approvalRate", "volume", "staleReferences", "enforcementRate", "violationRate"]
    baseline: float | None = None
    current: float | None = None
    window: str | None = None
    sourceRecordIds: list[str] | None = None
    knowledgeSourceId: str | None = None
    ruleRef: str | None = None


class Alert(Doc):
    id: str
    apiKey: str
    alertType: AlertType
    severity: Severity
    title: str
    description: str
    evidence: Evidence
    suggestedAction: str | None
    actionUrl: str | None
    status: Literal["active", "dismissed", "actioned"]
    createdAt: int
    dismissedAt: int | None
    dismissedBy: str | None
    dedupKey: str | None

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An insight_alerts row as the API shows it."""
        body = row["body"]
        return {
            "id": row["id"], "apiKey": row["api_key_id"], "alertType": row["alert_type"], "severity": row["severity"],
            "title": body["title"], "description": body["description"], "evidence": body["evidence"],
            "suggestedAction": body.get("suggestedAction"), "actionUrl": body.get("actionUrl"), "status": row["status"],
            "createdAt": row["created_at"], "dismissedAt": row["dismissed_at"], "dismissedBy": row["dismissed_by"],
            "dedupKey": row["dedup_key"]
        }


class AlertsAnswer(Doc):
    result: list[Alert]


class AlertConfig(Doc):
    """The stored settings, merged; keys a client added beyond these are returned as sent."""

    model_config = ConfigDict(extra="allow")
    enabled: bool
    maxAlertsPerWeek: int | None = None
    enabledAlertTypes: list[str] | None = None
    severityThreshold: Severity | None = None


class AlertConfigAnswer(Doc):
    result: AlertConfig


class Done(Doc):
    success: Literal[True]


class DoneAnswer(Doc):
    """`{result: {success: true}}`."""

    result: Done
