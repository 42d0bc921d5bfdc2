"""One error family: ApiError carries a spec error code; handlers turn it into the envelope."""

from typing import Any

HTTP_STATUS = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


class ApiError(Exception):
    """A failure the client should see, with its spec code and optional details."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        http_status: int | None = None,
        headers: dict[str, str] | None = None,
    ):
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


def invalid(message: str, issues: list[dict[str, Any]] | None = None) -> ApiError:
    """INVALID_ARGUMENT with details.issues, the shape every validation failure uses."""
    if issues is None:
        issues = [{"code": "custom", "path": [], "message": message}]
    return ApiError("INVALID_ARGUMENT", message, details={"issues": issues})


def issue(path: list[str], message: str, code: str = "custom") -> dict[str, Any]:
    """One entry of details.issues."""
    return {"code": code, "path": [str(p) for p in path], "message": message}

