"""Request models, model-answer shapes and response models of the agent prompt tools (Velt's shapes).

Three kinds of model: requests (strict, every failing field listed), the structured answers a model must give
(`*Answer`, checked before anything reaches a caller: a malformed one is retried, then replaced by the tool's
fallback), and the documented responses (`Doc`).
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from collab.agents.schemas import CONTEXT_STRATEGIES, MAX_INSTRUCTIONS, UserContextFields
from collab.kit.envelope import Model
from collab.kit.openapi import Doc

# Strategies the resolver may recommend: `rest-api` needs endpoints only the user knows, `none` gathers nothing.
RESOLVABLE_STRATEGIES = tuple(s for s in CONTEXT_STRATEGIES if s not in ("rest-api", "none"))
RESOLVABLE_EXECUTIONS = ("ai", "service", "service+ai", "stagehand-agent")
SUGGESTION_TYPES = ("boolean", "single-select", "multi-select", "info")
MAX_DEMOS = 20


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("Must not be empty")
    return value.replace("\x00", "")


NonBlank = AfterValidator(_not_blank)
Instructions = Annotated[str, Field(min_length=1, max_length=MAX_INSTRUCTIONS), NonBlank]
# Any string passes validation; one that is not openai, claude or gemini then fails (Velt: INTERNAL).
Provider = Annotated[str, Field(max_length=100)]

# --- requests ---------------------------------------------------------------------------------------


class EnhancePrompt(Model):
    prompt: Instructions
    provider: Provider | None = None
    userContextFields: UserContextFields | None = None


class ValidatePrompt(EnhancePrompt):
    pass


class DemoFeedback(Model):
    demoId: Annotated[str, Field(min_length=1, max_length=200), NonBlank]
    demoTitle: Annotated[str, Field(min_length=1, max_length=500), NonBlank]
    demoHtml: Annotated[str, Field(min_length=1, max_length=20_000), NonBlank]
    demoExpected: Annotated[str, Field(min_length=1, max_length=1000), NonBlank]
    feedback: Annotated[str, Field(min_length=1, max_length=5000), NonBlank]


class RefinePrompt(Model):
    analysisPrompt: Instructions
    demoFeedback: Annotated[list[DemoFeedback], Field(min_length=1, max_length=MAX_DEMOS)]
    provider: Provider | None = None


class ResolveConfig(Model):
    instructions: Instructions
    rawInstructions: Annotated[str, Field(max_length=MAX_INSTRUCTIONS)] | None = None
    provider: Provider | None = None


# --- what a model must answer -----------------------------------------------------------------------


class Answer(BaseModel):
    """A model's structured answer: types as the schema says (no coercion), unknown keys ignored."""

    model_config = ConfigDict(strict=True, extra="ignore")

    def result(self) -> dict[str, Any]:
        """The answer as the tool's documented result."""
        raise NotImplementedError


Line = Annotated[str, Field(min_length=1, max_length=2000)]


class Described(Answer):
    field: Annotated[str, Field(min_length=1, max_length=100)]
    description: Line


Descriptions = Annotated[list[Described], Field(max_length=30)]


def descriptions(items: list[Described]) -> dict[str, str]:
    """The answer's list of field descriptions as Velt's object (the schema sends a list: strict JSON schemas
    have no free-form objects)."""
    return {item.field: item.description for item in items}


class EnhanceAnswer(Answer):
    requirement: Annotated[str, Field(max_length=1000)] | None
    context: Annotated[str, Field(max_length=2000)] | None = None
    suggestion: Annotated[list[Annotated[str, Field(max_length=500)]], Field(max_length=10)] | None = None
    suggestion_type: Literal[SUGGESTION_TYPES] | None = None  # type: ignore[valid-type]

    @model_validator(mode="after")
    def _clarification_is_whole(self) -> "EnhanceAnswer":
        if self.requirement and self.requirement.strip():
            if not (self.context and self.context.strip()) or self.suggestion is None or not self.suggestion_type:
                raise ValueError("a requirement needs its context, suggestion and suggestion_type")
        return self

    def result(self) -> dict[str, Any]:
        """Velt's `enhancedPrompt`: `{requirement: null}` when sufficient, else all four fields."""
        if not (self.requirement and self.requirement.strip()):
            return {"requirement": None}
        return {
            "requirement": self.requirement, "context": self.context, "suggestion": self.suggestion,
            "suggestion_type": self.suggestion_type
        }


class DemoCase(Answer):
    id: Annotated[str, Field(min_length=1, max_length=100)]
    title: Line
    tier: Annotated[str, Field(min_length=1, max_length=100)]
    dimension_tested: Line
    html: Annotated[str, Field(min_length=1, max_length=20_000)]
    expected: Annotated[str, Field(min_length=1, max_length=100)]
    reason: Line


class Demos(Answer):
    detection_dimensions: Annotated[list[Line], Field(max_length=20)]
    cases: Annotated[list[DemoCase], Field(max_length=MAX_DEMOS)]


class RequiredInput(Answer):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    description: Line
    example: Annotated[str, Field(max_length=1000)]
    reason: Line


class ValidateAnswer(Answer):
    analysis_prompt: Instructions
    requires_tool: Literal["TOOL_TEXT_EXTRACTOR", "NONE"]
    response_descriptions: Descriptions
    demos: Demos
    suggested_required_inputs: Annotated[list[RequiredInput], Field(max_length=20)]

    def result(self) -> dict[str, Any]:
        """Velt's `validationResult` (PromptValidatorResult)."""
        return {
            "analysis_prompt": self.analysis_prompt, "requires_tool": self.requires_tool,
            "response_descriptions": descriptions(self.response_descriptions), "demos": self.demos.model_dump(),
            "suggested_required_inputs": [i.model_dump() for i in self.suggested_required_inputs]
        }


class RefineAnswer(Answer):
    analysis_prompt: Instructions
    response_descriptions: Descriptions

    def result(self) -> dict[str, Any]:
        """Velt's `refinerResult`."""
        return {
            "analysis_prompt": self.analysis_prompt, "response_descriptions": descriptions(self.response_descriptions)
        }


Selector = Annotated[str, Field(min_length=1, max_length=500)]


class ComputedStyles(Answer):
    selectors: Annotated[list[Selector], Field(max_length=50)]
    properties: Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=50)] = []


class ResolveAnswer(Answer):
    extraction_strategies: Annotated[
        list[Literal[RESOLVABLE_STRATEGIES]],  # type: ignore[valid-type]
        Field(min_length=1, max_length=len(RESOLVABLE_STRATEGIES))]
    execution_strategy: Literal[RESOLVABLE_EXECUTIONS]  # type: ignore[valid-type]
    reasoning: Annotated[str, Field(min_length=1, max_length=4000)]
    computed_styles: ComputedStyles | None = None

    @model_validator(mode="after")
    def _options_where_needed(self) -> "ResolveAnswer":
        if len(set(self.extraction_strategies)) != len(self.extraction_strategies):
            raise ValueError("a strategy is repeated")
        if "computed-styles" in self.extraction_strategies and not (self.computed_styles
                                                                    and self.computed_styles.selectors):
            raise ValueError("computed-styles needs selectors")  # inert without them (Velt's warning)
        return self

    def result(self) -> dict[str, Any]:
        """Velt's `resolvedConfig`; `strategy_options` only when a chosen strategy needs options."""
        out: dict[str, Any] = {
            "extraction_strategies": list(self.extraction_strategies), "execution_strategy": self.execution_strategy,
            "reasoning": self.reasoning
        }
        if "computed-styles" in self.extraction_strategies and self.computed_styles is not None:
            options: dict[str, list[str]] = {"selectors": list(self.computed_styles.selectors)}
            if self.computed_styles.properties:
                options["properties"] = list(self.computed_styles.properties)
            out["strategy_options"] = {"computed-styles": options}
        return out


# --- responses (documentation and contract tests; see collab.kit.openapi) ---------------------------


class EnhancedPrompt(Doc):
    requirement: str | None = Field(description="null when the prompt is sufficient; else a clarification question")
    context: str | None = Field(None, description="Why the clarification is needed (with a requirement only).")
    suggestion: list[str] | None = Field(None, description="Options to choose from (with a requirement only).")
    suggestion_type: Literal["boolean", "single-select", "multi-select", "info"] | None = Field(
        None, description="How the options are chosen.")


class Enhanced(Doc):
    enhancedPrompt: EnhancedPrompt


class SuggestedInput(Doc):
    name: str
    description: str
    example: str
    reason: str


class ValidationResult(Doc):
    analysis_prompt: str = Field(description="Markdown analysis prompt (objective, scope, detection logic, output).")
    requires_tool: Literal["TOOL_TEXT_EXTRACTOR", "NONE"]
    response_descriptions: dict[str, str]
    demos: dict[str, Any] = Field(description="`{detection_dimensions, cases}`, or `{}` when none were made.")
    suggested_required_inputs: list[SuggestedInput]


class Validated(Doc):
    validationResult: ValidationResult


class RefinerResult(Doc):
    analysis_prompt: str
    response_descriptions: dict[str, str]


class Refined(Doc):
    refinerResult: RefinerResult


class ResolvedConfig(Doc):
    extraction_strategies: list[str]
    execution_strategy: str
    reasoning: str = Field(description="'Default configuration applied' when the model gave no usable answer.")
    strategy_options: dict[str, dict[str, list[str]]] | None = Field(
        None, description="`{computed-styles: {selectors, properties?}}`; omitted when no strategy needs options.")


class Resolved(Doc):
    resolvedConfig: ResolvedConfig
