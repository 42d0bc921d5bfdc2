"""Request and response models of review agents and agent groups (Velt's `agents/*`; ADR 0054).

An agent's behaviour comes in blocks, each with two models: the shape alone (a patch of `version/update` is
checked against it) and the shape with its cross-field rules (`agents/create`, and the merged result of a patch).
Velt's strict blocks (`aiConfig`, `knowledge`, `postProcess`, MCP servers, auth) refuse unknown keys; elsewhere
unknown keys are ignored, as everywhere in the API (ADR 0006).
"""

from typing import Annotated, Any, Literal, Mapping

import orjson
from pydantic import AfterValidator, ConfigDict, Field, StringConstraints

from collab.agents.behaviour import REDACTED, redacted
from collab.kit.envelope import Model
from collab.kit.fields import MAX_BATCH, Id
from collab.kit.openapi import Doc
from collab.kit.validation import Broken, rule, rules

CONTEXT_STRATEGIES = ("web-page-text", "web-page-screenshot", "web-page-html", "web-page-css", "web-page-links",
                      "web-page-accessibility", "computed-styles", "robots-txt", "sitemap-data", "lighthouse",
                      "rest-api", "none")
EXECUTION_STRATEGIES = ("ai", "service", "service+ai", "stagehand-agent", "mcp-tools")
# Strategies that run a prompt: an agent on one of them needs non-blank `instructions`.
PROMPT_STRATEGIES = frozenset({"ai", "service+ai", "stagehand-agent", "mcp-tools"})
SERVICE_STRATEGIES = frozenset({"service", "service+ai"})
# Velt's three user-context types, and the extra ones `agents/extract` drafts carry (its prompt's schema), so a
# draft is created as it is.
# Velt's create page: a user-context field is a string, a number or a boolean (anything else INVALID_ARGUMENT).
CONTEXT_FIELD_TYPES = ("string", "number", "boolean")
MAX_INSTRUCTIONS = 50_000
MAX_METADATA_BYTES = 16 * 1024

Text = Annotated[str, Field(max_length=2000)]
Short = Annotated[str, Field(min_length=1, max_length=200)]
Url = Annotated[str, Field(min_length=1, max_length=2048)]
Positive = Annotated[int, Field(ge=1)]
DeviceType = Literal["mobile", "desktop"]
WaitUntil = Literal["load", "domcontentloaded", "networkidle0", "networkidle2"]


def _not_redacted(value: str) -> str:
    if value == REDACTED:
        raise ValueError(f"'{REDACTED}' is the placeholder reads show, not a secret: send the real value, or leave "
                         "the block out to keep the stored one")
    return value


Secret = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_not_redacted)]


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    if len(orjson.dumps(value)) > MAX_METADATA_BYTES:
        raise ValueError(f"Must be at most {MAX_METADATA_BYTES} bytes of JSON")
    return value


# Client metadata: any JSON object, bounded in keys and bytes.
Metadata = Annotated[dict[str, Any], Field(max_length=100), AfterValidator(_json_object)]


def _distinct(values: list[Any]) -> list[Any]:
    if len(set(values)) != len(values):
        raise ValueError("Must not repeat a value")
    return values


class Strict(Model):
    """A block Velt validates strictly: unknown keys are refused."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)


# --- auth of REST endpoints and MCP servers -------------------------------------------------------------------

_AUTH_FIELDS = {"none": (), "bearer": ("token", ), "basic": ("username", "password"), "header": ("headers", )}


def _auth_fields(v: Mapping[str, Any]) -> list[Broken] | None:
    """Velt's discriminated union as one object: each type's own fields required, the others' refused."""
    kind = v.get("type")
    if kind not in _AUTH_FIELDS:
        return None
    own = _AUTH_FIELDS[kind]
    found = [Broken(f, f"Required when type is '{kind}'", "invalid_type") for f in own if v.get(f) is None]
    found += [
        Broken(f, f"Not a field of type '{kind}'") for fields in _AUTH_FIELDS.values() for f in fields
        if f not in own and v.get(f) is not None
    ]
    return found or None


class Auth(Strict):
    """`{type: none}`, `{type: bearer, token}`, `{type: basic, username, password}`, `{type: header, headers}`."""

    type: Literal["none", "bearer", "basic", "header"]
    token: Secret = None
    username: Annotated[str, Field(min_length=1, max_length=1000)] = None
    password: Secret = None
    headers: Annotated[dict[str, Secret], Field(min_length=1, max_length=20)] = None

    _rules = rules(rule("type", "token", "username", "password", "headers")(_auth_fields))


# --- contextGathering -------------------------------------------------------------------------------------------


class AiConfig(Strict):
    provider: Literal["gemini", "claude", "openai"] = None
    # Accepted for compatibility and discarded (Velt resolves the model at each execution).
    model: str = Field(None, max_length=200, exclude=True)
    responseMimeType: str = Field(None, max_length=200, exclude=True)
    maxToolTurns: int = Field(None, ge=1, le=16, exclude=True)  # kept on execution.aiConfig only


class ExecutionAiConfig(AiConfig):
    maxToolTurns: int = Field(None, ge=1, le=16)


class PageTextOptions(Model):
    deviceType: DeviceType = None
    excludeIframes: bool = None


class ScreenshotOptions(Model):
    scrollBeforeCapture: bool = None
    maxPageHeightPx: Positive = None
    waitUntil: WaitUntil = None
    deviceType: DeviceType = None


class HtmlOptions(Model):
    includeHead: bool = None
    includeBody: bool = None
    excludeIframes: bool = None
    waitUntil: WaitUntil = None


class CssOptions(Model):
    includeInlineStyles: bool = None


class ComputedStylesOptions(Model):
    selectors: Annotated[list[Annotated[str, Field(min_length=1, max_length=1000)]],
                         Field(min_length=1, max_length=100)]
    properties: Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=200)] = None


class SitemapOptions(Model):
    maxEntries: int = Field(None, ge=1, le=50_000)


class LighthouseOptions(Model):
    categories: Annotated[list[Literal["performance", "accessibility", "best-practices", "seo", "pwa"]],
                          Field(max_length=5),
                          AfterValidator(_distinct)] = None
    formFactor: DeviceType = None


class RestApiEndpoint(Model):
    description: Annotated[str, Field(min_length=1, max_length=2000)]
    url: Url
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = None
    id: Short = None
    name: Short = None
    headers: Annotated[dict[str, Annotated[str, Field(max_length=4096)]], Field(max_length=50)] = None
    query: Annotated[dict[str, Annotated[str, Field(max_length=2048)] | int | float | bool],
                     Field(max_length=50)] = None
    body: Annotated[dict[str, Any], AfterValidator(_json_object)] | Annotated[str, Field(max_length=16384)] = None
    auth: Auth = None
    cacheTtlSeconds: int = Field(None, ge=0, le=86_400)
    timeoutMs: int = Field(None, ge=1, le=30_000)
    responsePath: str = Field(None, max_length=500)


class RestApiOptions(Model):
    endpoints: Annotated[list[RestApiEndpoint], Field(min_length=1, max_length=10)]
    maxResponseBytes: int = Field(None, ge=1, le=5_000_000)


class ContextStrategyOptions(Model):
    """Per-strategy overrides, keyed by strategy name (a strategy without options takes none)."""

    web_page_text: PageTextOptions = Field(None, alias="web-page-text")
    web_page_screenshot: ScreenshotOptions = Field(None, alias="web-page-screenshot")
    web_page_html: HtmlOptions = Field(None, alias="web-page-html")
    web_page_css: CssOptions = Field(None, alias="web-page-css")
    computed_styles: ComputedStylesOptions = Field(None, alias="computed-styles")
    sitemap_data: SitemapOptions = Field(None, alias="sitemap-data")
    lighthouse: LighthouseOptions = None
    rest_api: RestApiOptions = Field(None, alias="rest-api")


def _rest_api_options(v: Mapping[str, Any]) -> Broken | None:
    options = v.get("strategyOptions")
    has = options is not None and (options.get("rest-api") if isinstance(options, dict) else options.rest_api)
    if "rest-api" in (v.get("strategies") or ()) and not has:
        return Broken("strategyOptions", "strategyOptions['rest-api'] is required when strategies include rest-api")
    return None


Strategies = Annotated[
    list[Literal[CONTEXT_STRATEGIES]],  # type: ignore[valid-type]
    Field(min_length=1, max_length=len(CONTEXT_STRATEGIES)),
    AfterValidator(_distinct)]


class ContextGatheringShape(Model):
    """A patch's block: `strategies` may be left out, the stored ones stay."""

    strategies: Strategies = None
    strategyOptions: ContextStrategyOptions = None
    aiConfig: AiConfig = None


class ContextGathering(ContextGatheringShape):
    strategies: Strategies

    _rules = rules(rule("strategies", "strategyOptions")(_rest_api_options))


# --- execution --------------------------------------------------------------------------------------------------


def _mcp_url(value: str) -> str:
    if not (value.startswith(("http://", "https://")) or ("{{" in value and "}}" in value)):
        raise ValueError("Must start with http:// or https:// (or be a {{template}} that resolves to one)")
    return value


class McpServer(Strict):
    id: Short
    url: Annotated[Url, AfterValidator(_mcp_url)]
    name: Short = None
    description: Text = None
    transport: Literal["http"] = None
    auth: Auth = None
    allowedTools: Annotated[list[Short], Field(max_length=256)] = None
    timeoutMs: int = Field(None, ge=1, le=120_000)


def _distinct_servers(servers: list[McpServer]) -> list[McpServer]:
    _distinct([s.id for s in servers])
    return servers


class ResponseDescriptions(Model):
    summary: Text = None
    title: Text = None
    description: Text = None
    severity: Text = None
    targetText: Text = None
    suggestion: Text = None
    isPageLevel: Text = None
    issueType: Text = None
    confidence: Text = None
    htmlSelector: Text = None
    findingType: Text = None


class StagehandOptions(Model):
    mode: Literal["dom", "hybrid", "cua"] = None
    maxSteps: int = Field(None, ge=1, le=1000)
    model: str = Field(None, max_length=200)
    systemPrompt: str = Field(None, max_length=MAX_INSTRUCTIONS)
    useStructuredOutput: bool = None
    waitUntil: Literal["domcontentloaded", "load", "networkidle2"] = None
    navigationTimeout: int = Field(None, ge=1, le=600_000)


class ExecutionStrategyOptions(Model):
    stagehand_agent: StagehandOptions = Field(None, alias="stagehand-agent")


class Knowledge(Strict):
    useMemory: bool = None
    maxChunks: int = Field(None, ge=1, le=20)
    maxPatterns: int = Field(None, ge=1, le=20)
    maxActivities: int = Field(None, ge=1, le=20)


class ExecutionShape(Model):
    executionStrategy: Literal[EXECUTION_STRATEGIES] = None  # type: ignore[valid-type]
    serviceId: Literal["broken-links", "crawler", "screenshot", "accessibility-checker", "og-image-checker"] = None
    aiConfig: ExecutionAiConfig = None
    mcpServers: Annotated[list[McpServer], Field(min_length=1, max_length=5), AfterValidator(_distinct_servers)] = None
    responseDescriptions: ResponseDescriptions = None
    strategyOptions: ExecutionStrategyOptions = None
    knowledge: Knowledge = None


def strategy_of(execution: Any) -> str:
    """The execution strategy of an execution block (a model, a dict as sent, or nothing): `ai` by default."""
    if isinstance(execution, dict):
        value = execution.get("executionStrategy")
    else:
        value = getattr(execution, "executionStrategy", None)
    return value if isinstance(value, str) else "ai"


def _service_id(v: Mapping[str, Any]) -> Broken | None:
    strategy = v.get("executionStrategy") or "ai"
    if strategy in SERVICE_STRATEGIES and v.get("serviceId") is None:
        return Broken("serviceId", f"serviceId is required when executionStrategy is '{strategy}'", "invalid_type")
    return None


def _mcp_servers(v: Mapping[str, Any]) -> Broken | None:
    if v.get("executionStrategy") == "mcp-tools" and not v.get("mcpServers"):
        return Broken("mcpServers", "At least one MCP server is required when executionStrategy is 'mcp-tools'",
                      "invalid_type")
    return None


class Execution(ExecutionShape):
    _rules = rules(
        rule("executionStrategy", "serviceId")(_service_id),
        rule("executionStrategy", "mcpServers")(_mcp_servers))


# --- response, postProcess, input, scope, setup -------------------------------------------------------------------


class Response(Model):
    useAiFormatting: bool = None
    formattingPrompt: str = Field(None, max_length=MAX_INSTRUCTIONS)
    responseAdapter: Literal["broken-links-response", "crawler-response", "screenshot-response",
                             "accessibility-checker-response", "og-image-checker-response"] = None
    aiConfig: AiConfig = None


class Toggle(Strict):
    enabled: bool = None


class AnnotationsStage(Toggle):
    strategy: Literal["findings", "word-level", "page-level", "none"] = None


class PostProcess(Strict):
    guardrails: Toggle = None
    deletePreviousSuggestions: Toggle = None
    annotations: AnnotationsStage = None
    analytics: Toggle = None
    matchAndMerge: Toggle = None  # deprecated by Velt: accepted, no effect
    customProcessors: Annotated[list[Short], Field(max_length=50)] = None


class UserContextField(Model):
    id: Annotated[str, Field(min_length=1, max_length=100)]
    title: Annotated[str, Field(min_length=1, max_length=500)]
    type: Literal[CONTEXT_FIELD_TYPES]  # type: ignore[valid-type]
    required: bool = None
    example: str = Field(None, max_length=1000)
    defaultValue: Annotated[str, Field(max_length=1000)] | int | float | bool = None


def _distinct_fields(fields: list[UserContextField]) -> list[UserContextField]:
    _distinct([f.id for f in fields])
    return fields


UserContextFields = Annotated[list[UserContextField], Field(max_length=100), AfterValidator(_distinct_fields)]
Keys = Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=100)]


class InputRequirements(Model):
    requires: Keys = None
    requiresOneOf: Keys = None


class Input(Model):
    """`supportedVariables` is response-only in Velt's docs: sent, it is ignored like any unknown key."""

    variableKeys: Annotated[Keys, AfterValidator(_distinct)] = None
    userContextFields: UserContextFields = None
    inputRequirements: InputRequirements = None


Pages = Annotated[list[Url], Field(max_length=500)]


class CrossPage(Model):
    enabled: bool
    targetProperty: Short
    pageDiscovery: Literal["auto", "manual"]
    pages: Pages = None
    sourceOfTruthKnowledgeSourceId: Short = None


class Scope(Model):
    pageScope: Annotated[list[Url], Field(max_length=100)] = None
    pageScopeExclude: Annotated[list[Url], Field(max_length=100)] = None
    contentTypes: Annotated[list[Short], Field(max_length=50)] = None
    crossPage: CrossPage = None


class Finding(Model):
    message: Annotated[str, Field(min_length=1, max_length=5000)]
    elementSelector: str = Field(None, max_length=2000)
    isCorrect: bool = None


class SetupSample(Model):
    content: Annotated[str, Field(max_length=MAX_INSTRUCTIONS)]
    source: Literal["synthetic", "user-provided"]
    findings: Annotated[list[Finding], Field(max_length=100)]
    pmVerdict: Literal["correct", "incorrect"] = None
    pmNotes: str = Field(None, max_length=5000)


Refs = Annotated[list[Short], Field(max_length=500)]


class ChecklistOrigin(Model):
    checklistId: Short
    checklistVersion: int = Field(ge=0)
    sectionRefs: Refs
    memoryRuleIds: Refs
    deduplicatedFrom: int = Field(None, ge=0)


class Setup(Model):
    setupSamples: Annotated[list[SetupSample], Field(max_length=20)] = None
    checklistOrigin: ChecklistOrigin = None


# --- the behaviour as a whole ------------------------------------------------------------------------------------


def _blank(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip()


def _instructions(v: Mapping[str, Any]) -> Broken | None:
    strategy = strategy_of(v.get("execution"))
    if strategy in PROMPT_STRATEGIES and _blank(v.get("instructions")):
        return Broken("instructions", f"instructions is required (and not blank) when executionStrategy is "
                      f"'{strategy}'", "invalid_type")
    return None


class Behaviour(Model):
    """Every versioned field, with the rules a whole version keeps (the merged result of a version update)."""

    rawInstructions: str = Field(None, max_length=MAX_INSTRUCTIONS)
    instructions: str = Field(None, max_length=MAX_INSTRUCTIONS)
    phaseTimeoutMs: Positive = None
    contextGathering: ContextGathering = None
    execution: Execution = None
    response: Response = None
    postProcess: PostProcess = None
    input: Input = None
    scope: Scope = None
    setup: Setup = None

    _rules = rules(rule("instructions", "execution")(_instructions))


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Description = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]
PageSize = Annotated[int, Field(ge=1, le=1000)]
PageToken = Annotated[str, Field(max_length=1000)]

# --- agents -----------------------------------------------------------------------------------------------------


def _instructions_or_prompt(v: Mapping[str, Any]) -> Broken | None:
    # An extraction draft's `prompt` stands for `instructions` (Velt's mapping of the draft).
    return _instructions({"instructions": v.get("instructions") or v.get("prompt"), "execution": v.get("execution")})


def _prompt_once(v: Mapping[str, Any]) -> Broken | None:
    if v.get("instructions") is not None and v.get("prompt") is not None:
        return Broken("prompt", "Send the instructions once: instructions or prompt (the extraction draft's name), "
                      "not both")
    return None


def _fields_once(v: Mapping[str, Any]) -> Broken | None:
    sent = v.get("input")
    nested = sent.get("userContextFields") if isinstance(sent, dict) else getattr(sent, "userContextFields", None)
    if v.get("userContextFields") is not None and nested is not None:
        return Broken(
            "userContextFields", "Send the user-context fields once: input.userContextFields or "
            "userContextFields (the extraction draft's place), not both")
    return None


class CreateAgent(Behaviour):
    name: Name
    description: Description
    enabled: bool
    metadata: Metadata = None
    contextGathering: ContextGathering
    execution: Execution
    # An `agents/extract` draft is accepted as it is: its `prompt` is `instructions`, its `userContextFields` are
    # `input.userContextFields` (Velt's mapping), its `sourceTasks` are provenance and ignored.
    prompt: str = Field(None, max_length=MAX_INSTRUCTIONS)
    userContextFields: UserContextFields = None

    _rules = rules(
        rule("instructions", "prompt", "execution")(_instructions_or_prompt),
        rule("instructions", "prompt")(_prompt_once),
        rule("input", "userContextFields")(_fields_once))


class GetAgents(Model):
    agentId: Id = None
    filter: Literal["defaultOnly", "customOnly"] = None
    groupId: Id = None
    pageSize: PageSize = None
    pageToken: PageToken = None


class UpdateAgent(Model):
    agentId: Id
    name: Name = None
    description: Description = None
    enabled: bool = None


class UpdateAgentVersion(Model):
    """A patch of the behaviour: blocks merge one level deep onto the stored ones; the rules hold on the result."""

    agentId: Id
    rawInstructions: str = Field(None, max_length=MAX_INSTRUCTIONS)
    instructions: str = Field(None, max_length=MAX_INSTRUCTIONS)
    phaseTimeoutMs: Positive = None
    metadata: Metadata = None
    contextGathering: ContextGatheringShape = None
    execution: ExecutionShape = None
    response: Response = None
    postProcess: PostProcess = None
    input: Input = None
    scope: Scope = None
    setup: Setup = None


class AgentRef(Model):
    agentId: Id


class ListAgentVersions(Model):
    agentId: Id
    pageSize: PageSize = None
    pageToken: PageToken = None


# --- groups -----------------------------------------------------------------------------------------------------

GroupDescription = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]


class CreateGroup(Strict):
    name: Name
    description: GroupDescription = None
    # Capped as sent (duplicates included) at COLLAB_AGENT_GROUP_MAX_AGENTS, like Velt's 100.
    agentIds: Annotated[list[Id], Field(max_length=MAX_BATCH)] = None
    metadata: Metadata = None


class GroupRef(Model):
    groupId: Id


class ListGroups(Model):
    pageSize: PageSize = None
    pageToken: PageToken = None


class UpdateGroup(Strict):
    groupId: Id
    name: Name = None
    description: GroupDescription = None

    _rules = rules(
        rule("name", "description")(lambda v: Broken(None, "Provide name or description")
                                    if v.get("name") is None and v.get("description") is None else None))


class GroupMembers(Model):
    groupId: Id
    agentIds: Annotated[list[Id], Field(min_length=1, max_length=MAX_BATCH)]


# Response models (documentation and contract tests; see collab.kit.openapi).


class AgentCreated(Doc):
    agentId: str


class AgentRefAnswer(Doc):
    agentId: str = Field(description="The agentId sent.")


class VersionAnswer(Doc):
    version: int


Block = dict[str, Any]


class Agent(Doc):
    """One custom agent: its identity and its current version's behaviour (auth secrets as `__redacted__`)."""

    id: str
    name: str
    description: str
    enabled: bool
    version: int = Field(description="The current version's number.")
    managedBy: Literal["customer"]
    system: Literal[False] = Field(description=(
        "Velt's flag of a built-in agent (one Velt manages, such as spell-check). collab has no built-in agents: "
        "every agent is the workspace's own, so it is always false."))
    metadata: dict[str, Any] | None = Field(None, description="Absent when never set.")
    rawInstructions: str | None = None
    instructions: str | None = None
    phaseTimeoutMs: int | None = None
    contextGathering: Block
    execution: Block
    response: Block | None = None
    postProcess: Block | None = None
    input: Block | None = None
    scope: Block | None = None
    setup: Block | None = None

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An agent with its current behaviour, secrets redacted."""
        record = {
            "id": row["id"], "name": row["name"], "description": row["description"], "enabled": row["enabled"],
            "version": row["version"], "managedBy": "customer", "system": False
        }
        if row["metadata"] is not None:
            record["metadata"] = row["metadata"]
        return record | redacted(row["config"])


class AgentSummary(Doc):
    """A row of the agents listing: identity only, with execution counters."""

    id: str
    name: str
    description: str
    enabled: bool
    managedBy: Literal["customer"]
    system: Literal[False] = Field(description=(
        "Velt's flag of a built-in agent (one Velt manages, such as spell-check). collab has no built-in agents: "
        "every agent is the workspace's own, so it is always false."))
    version: int
    executionCount: int = Field(description="0 until the agent has run.")
    lastExecutedAt: int | None = Field(description="Epoch milliseconds; null until the agent has run.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """An agent as the listing shows it."""
        return {
            "id": row["id"], "name": row["name"], "description": row["description"], "enabled": row["enabled"],
            "managedBy": "customer", "system": False, "version": row["version"],
            "executionCount": row["execution_count"], "lastExecutedAt": row["last_executed_at"]
        }


class AgentFetched(Doc):
    agent: Agent = Field(None, description="With agentId: the agent.")
    agents: list[AgentSummary] = Field(
        None, description="Without agentId: the agents, oldest first (a group's in "
        "its order).")
    nextPageToken: str = Field(None, description="Absent on the last page.")


class AgentVersion(Doc):
    """One version: a behavioural snapshot (identity fields are not versioned)."""

    id: str = Field(description="`v{version}`.")
    version: int
    createdAt: int = Field(description="Epoch milliseconds.")
    rawInstructions: str | None = None
    instructions: str | None = None
    phaseTimeoutMs: int | None = None
    contextGathering: Block | None = None
    execution: Block | None = None
    response: Block | None = None
    postProcess: Block | None = None
    input: Block | None = None
    scope: Block | None = None
    setup: Block | None = None

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A version with its behaviour, secrets redacted."""
        return {"id": f"v{row['version']}", "version": row["version"], "createdAt": row["created_at"]} | redacted(
            row["config"])


class AgentVersions(Doc):
    versions: list[AgentVersion] = Field(description="Newest first.")
    nextPageToken: str = Field(None, description="Absent on the last page.")


def _group(row: dict[str, Any], **members: Any) -> dict[str, Any]:
    """A group's wire fields around `members` (its ids, or their count); no description when it has none."""
    record: dict[str, Any] = {"id": row["id"], "name": row["name"]}
    if row["description"]:
        record["description"] = row["description"]
    return record | members | {
        "metadata": row["metadata"], "createdAt": row["created_at"], "updatedAt": row["updated_at"]
    }


class AgentGroup(Doc):
    id: str
    name: str
    description: str | None = Field(None, description="Absent when not set.")
    agentIds: list[str] = Field(description="Members in the order they were added.")
    metadata: dict[str, Any] = Field(description="As sent at creation, with the API key as `apiKey`.")
    createdAt: int = Field(description="Epoch milliseconds.")
    updatedAt: int = Field(description="Epoch milliseconds: the last rename or membership change.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A group with its members in order."""
        return _group(row, agentIds=list(row["agent_ids"]))


class AgentGroupSummary(Doc):
    id: str
    name: str
    description: str | None = Field(None, description="Absent when not set.")
    agentCount: int
    metadata: dict[str, Any]
    createdAt: int = Field(description="Epoch milliseconds.")
    updatedAt: int = Field(description="Epoch milliseconds.")

    @staticmethod
    def wire(row: dict[str, Any]) -> dict[str, Any]:
        """A group as the listing shows it: a count in place of its members."""
        return _group(row, agentCount=row["agent_count"])


class GroupAnswer(Doc):
    group: AgentGroup


class GroupList(Doc):
    groups: list[AgentGroupSummary] = Field(description="Oldest first.")
    nextPageToken: str = Field(None, description="Absent on the last page.")


class GroupDeleted(Doc):
    groupId: str
