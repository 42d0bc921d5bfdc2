"""One error family: ApiError carries a spec error code; handlers turn it into the envelope."""

from collections.abc import Sequence
from typing import Any

HTTP_STATUS = {
    "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "RESOURCE_EXHAUSTED": 429, "INTERNAL": 500, "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504
}


class ApiError(Exception):
    """A failure the client should see, with its spec code and optional details."""

    def __init__(self, code: str, message: str, *, details: dict[str, Any] | None = None,
                 http_status: int | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        assert code in HTTP_STATUS, code
        self.code = code
        self.message = message
        self.details = details
        self.http_status = http_status or HTTP_STATUS[code]
        self.headers = headers

    def body(self) -> dict[str, Any]:
        """The spec's failure body."""
        error: dict[str, Any] = {"status": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"error": error}

    def as_failure(self) -> dict[str, Any]:
        """This error as an awaited job's outcome: plain data, so it crosses the queue whole (see `raise_failure`)."""
        failure: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            failure["details"] = self.details
        if self.headers:
            failure["headers"] = self.headers
        return {FAILURE: failure}


# The key of an awaited job's outcome that carries its failure: {"failure": {code, message, details?, headers?}}.
FAILURE = "failure"


def raise_failure(outcome: Any) -> Any:
    """An awaited job's outcome, or the ApiError its failure describes, raised: the one reader of job failures."""
    if isinstance(outcome, dict) and isinstance(outcome.get(FAILURE), dict):
        failure = outcome[FAILURE]
        raise ApiError(failure["code"], failure["message"], details=failure.get("details"),
                       headers=failure.get("headers"))
    return outcome


# Not-found texts, one per kind of record (DESIGN §7.13): every domain's answer and the constraint registry
# (`kit/db/constraints.py`) read them here, so no domain borrows another's string. The texts are contract:
# the spec's samples and the tests assert them byte for byte, punctuation included.
NOT_FOUND_MESSAGES: dict[str, str] = {
    "organization": "Organization does not exist",  # the spec's sample (organizations' answers): no full stop
    "folder": "Folder does not exist.",
    "parent_folder": "Parent folder does not exist.",
    "document": "Document does not exist.",
    "user": "User does not exist.",  # the spec's sample (users/update, users/remove)
    "group": "Organization user group does not exist.",
    "annotation": "Annotation does not exist.",
    "comment": "Comment does not exist.",
    "reaction": "Reaction does not exist.",
    "notification": "Notification does not exist.",
    "recording": "Recording does not exist.",
    "crdt": "CRDT data does not exist.",
    "workspace": "Workspace not found.",  # the spec's error table: "Workspace not found; API key not found."
    "api_key": "API key not found.",
    "endpoint": "Endpoint not found.",
    "webhook_message": "Message not found for this endpoint.",
    "migration": "Migration not found.",
    "deletion_job": "Deletion job not found.",
    "invitation": "No invitation matches this e-mail and target.",
    "route": "Route not found.",
    "agent": "Agent does not exist.",
    "agent_group": "Agent group does not exist.",
    "agent_execution": "Execution not found.",
    "knowledge_source": "Knowledge source not found.",
    "alert": "Alert not found.",
    # A foreign-key violation of a constraint no domain registered (see kit/db/constraints.py).
    "record": "A record this refers to does not exist (it may just have been deleted)."
}
# Where the contract answers one kind in two texts, the second lives here by (kind, variant), with the reason.
NOT_FOUND_VARIANTS: dict[tuple[str, str], str] = {
    # The permissions answers (permissions/get's entries, a refused grant's issues) are full sentences, the
    # organization's included; the organizations domain answers with the spec's sample, without the full stop.
    ("organization", "permissions"): "Organization does not exist.",
    # A read of one editor's state (crdt/get, the realtime join) names the editor; a delete outcome does not.
    ("crdt", "editor"): "CRDT data does not exist for this editor ID.",
    # versions/restore past the oldest version kept (COLLAB_AGENT_VERSIONS_KEPT): Velt's NOT_FOUND for that case.
    ("agent", "previous_version"): "The agent's previous version does not exist: only the latest versions are kept.",
    # The public workspace/email/status for an address that owns no workspace: Velt's documented words.
    ("user", "owner_email"): "User not found"
}


def not_found_message(kind: str, variant: str | None = None) -> str:
    """The one text that says a record of `kind` (a key of NOT_FOUND_MESSAGES) does not exist; a `variant` the
    kind has no second text for answers with the kind's one text."""
    return NOT_FOUND_VARIANTS.get((kind, variant or "")) or NOT_FOUND_MESSAGES[kind]


def not_found(kind: str, variant: str | None = None, **kwargs: Any) -> ApiError:
    """NOT_FOUND for a record of `kind`, in the table's words; `kwargs` go to ApiError (details, http_status)."""
    return ApiError("NOT_FOUND", not_found_message(kind, variant), **kwargs)


def invalid(message: str, issues: list[dict[str, Any]] | None = None) -> ApiError:
    """INVALID_ARGUMENT with details.issues, the shape every validation failure uses."""
    if issues is None:
        issues = [{"code": "custom", "path": [], "message": message}]
    return ApiError("INVALID_ARGUMENT", message, details={"issues": issues})


def issue(path: Sequence[str | int], message: str, code: str = "custom") -> dict[str, Any]:
    """One entry of details.issues."""
    return {"code": code, "path": [str(p) for p in path], "message": message}
