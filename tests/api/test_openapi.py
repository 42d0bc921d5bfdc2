"""The OpenAPI document: every operation names its real request and response models."""

# Objects whose keys the client chooses (stored and returned as sent): the only free-form objects allowed.
CLIENT_JSON = {
    "entityData",
    "entityTargetData",
    "changes",
    "displayMessageTemplateData",  # activities
    "notificationSourceData",
    "displayHeadlineMessageTemplateData",
    "ActionUser",  # notifications
    "CrdtEditor.data",  # the editor content
    "location",
    "context",
    "agent",
    "attachments",  # comment threads (commentannotations/*)
    "Annotation.suggestion",  # a suggestion's proposed change as its client sent it, with its status
    # An agent's configuration as its client wrote it (checked on the way in by the request models) and its metadata.
    *(f"{model}.{block}" for model in ("Agent", "AgentVersion")
      for block in ("metadata", "contextGathering", "execution", "response", "postProcess", "input", "scope", "setup")),
    "AgentGroup.metadata",
    "AgentGroupSummary.metadata",
    "AlertConfig",  # memory/alerts/config/get: keys a client stored beyond the documented four, returned as sent
    "Execution-Output.config",  # the agent's configuration, pinned when the run started
    "Execution-Output.ranBy",  # as the run's caller sent it
    # Server-made blocks whose keys the descriptions list, not yet typed as models of their own (ADR 0055, 0056).
    "Execution-Output.error",
    "Execution-Output.resultsSummary",
    "ExecutionFetched.results",
    "AnalyticsAnswer.analytics",
    "ValidationResult.demos",
}


def _operations(openapi: dict):
    for path, item in openapi["paths"].items():
        if "post" in item:
            yield path, item["post"]


def _free_form(openapi: dict, schema: dict, where: str, seen: set[str], found: list[str]) -> None:
    """Collect open objects (additionalProperties true, or an object with no properties) outside CLIENT_JSON."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            _free_form(openapi, openapi["components"]["schemas"][name], name, seen, found)
        return
    bare = where.rstrip("[]{}")
    client_json = bare.rsplit(".", 1)[-1] in CLIENT_JSON or ".".join(bare.split(".")[-2:]) in CLIENT_JSON
    extra = schema.get("additionalProperties")
    if schema.get("type") == "object" or "properties" in schema:
        if (extra is True or extra == {} or (extra is None and "properties" not in schema)) and not client_json:
            found.append(where)
        if extra is None and "properties" in schema:
            found.append(f"{where} (open: unknown keys allowed)")
    if schema == {} and not client_json:
        found.append(f"{where} (any value)")
    for name, sub in schema.get("properties", {}).items():
        _free_form(openapi, sub, f"{where}.{name}", seen, found)
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            _free_form(openapi, sub, where, seen, found)
    if isinstance(schema.get("items"), dict):
        _free_form(openapi, schema["items"], f"{where}[]", seen, found)
    if isinstance(extra, dict) and extra:
        _free_form(openapi, extra, f"{where}{{}}", seen, found)


def test_every_operation_documents_one_success_body(live):
    openapi = live.app.openapi()
    missing = []
    for path, operation in _operations(openapi):
        success = [code for code in operation["responses"] if code.startswith("2")]
        schemas = [
            operation["responses"][c].get("content", {}).get("application/json", {}).get("schema") for c in success
        ]
        if len(success) != 1 or not schemas[0] or "$ref" not in schemas[0]:
            missing.append(f"{path}: {success}")
    assert missing == []


def test_response_models_are_closed(live):
    openapi = live.app.openapi()
    found: list[str] = []
    seen: set[str] = set()
    for _, operation in _operations(openapi):
        for response in operation["responses"].values():
            schema = response.get("content", {}).get("application/json", {}).get("schema")
            if schema:
                _free_form(openapi, schema, "response", seen, found)
    assert found == []


def test_every_error_status_uses_the_envelope(live):
    openapi = live.app.openapi()
    for path, operation in _operations(openapi):
        for code, response in operation["responses"].items():
            if code.startswith(("4", "5")):
                assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"
                                                                             }, path
