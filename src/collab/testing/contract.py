"""The documented contract, checked on real responses: every body must match its route's OpenAPI schema."""

import json
from typing import Any

import httpx
import jsonschema_rs


class Contract:
    """Validators for each (path, status) of an OpenAPI document; /v1 paths use their /v2 twin."""

    def __init__(self, openapi: dict[str, Any]):
        self.openapi = openapi
        self._validators: dict[tuple[str, str], Any] = {}

    def schema(self, path: str, status: int) -> dict[str, Any] | None:
        """The documented body schema of a response, or None when the route or status is not documented."""
        if path.startswith("/v1/"):
            path = "/v2/" + path[4:]
        operation = self.openapi["paths"].get(path, {}).get("post")
        if operation is None:
            return None
        response = operation["responses"].get(str(status))
        if response is None:
            return None
        return response.get("content", {}).get("application/json", {}).get("schema")

    def problems(self, path: str, status: int, body: Any) -> list[str]:
        """What is wrong with a response: an undocumented status, or a body that breaks its schema."""
        if path.startswith("/v1/"):
            path = "/v2/" + path[4:]
        if path not in self.openapi["paths"]:
            return []  # not an operation (health, docs)
        schema = self.schema(path, status)
        if schema is None:
            return [f"{path}: status {status} is not documented"]
        key = (path, str(status))
        if key not in self._validators:
            # $refs point into #/components: validate against the schema with the components beside it.
            self._validators[key] = jsonschema_rs.validator_for({**schema, "components": self.openapi["components"]})
        return [
            f"{path} {status}: {e.message} at {list(e.instance_path)}" for e in self._validators[key].iter_errors(body)
        ]

    def check(self, response: httpx.Response) -> None:
        """Raise AssertionError when an httpx response breaks the contract (an httpx response hook)."""
        request = response.request
        if request.method != "POST":
            return
        response.read()
        try:
            body = json.loads(response.content)
        except ValueError:
            raise AssertionError(f"{request.url.path} {response.status_code}: body is not JSON: {response.text[:200]}")
        problems = self.problems(request.url.path, response.status_code, body)
        if problems:
            raise AssertionError("response breaks the documented contract:\n" + "\n".join(problems[:10]))
