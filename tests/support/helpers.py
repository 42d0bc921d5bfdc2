"""Plain factory functions shared by tests: create a tenant, call endpoints, read envelopes."""

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

_ip_counter = itertools.count(1)


def fresh_ip() -> str:
    """A distinct client address (sent as X-Forwarded-For) so IP rate limits do not couple tests."""
    n = next(_ip_counter)
    return f"198.{18 + ((n >> 16) & 1)}.{(n >> 8) & 255}.{n & 255}"


def fresh_email(prefix: str = "owner") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}@example.com"


@dataclass
class Tenant:
    """A workspace with its first API key and that key's auth token."""

    workspace: dict[str, Any]
    api_key: str
    auth_token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"x-service-api-key": self.api_key, "x-service-auth-token": self.auth_token}

    @property
    def workspace_headers(self) -> dict[str, str]:
        return {
            "x-service-workspace-id": self.workspace["id"],
            "x-service-workspace-auth-token": self.workspace["authToken"]
        }


def post(client: httpx.Client, path: str, data: Any = None, headers: dict | None = None, **kw) -> httpx.Response:
    """POST {data} to a route."""
    return client.post(path, json={"data": {} if data is None else data}, headers=headers or {}, **kw)


def velt(t: Tenant) -> dict[str, str]:
    """A tenant's API credentials under Velt's header names (aliases of the spec's)."""
    return {"x-velt-api-key": t.api_key, "x-velt-auth-token": t.auth_token}


def create_workspace(client: httpx.Client, **data: Any) -> httpx.Response:
    data.setdefault("ownerEmail", fresh_email())
    return post(client, "/v2/workspace/create", data, headers={"x-forwarded-for": fresh_ip()})


def new_tenant(client: httpx.Client, **data: Any) -> Tenant:
    """A fresh workspace, its testing API key and the key's auth token (listed by the owner)."""
    response = create_workspace(client, **data)
    assert response.status_code == 200, response.text
    workspace = response.json()["result"]["data"]
    api_key = next(iter(workspace["apiKeyList"]))
    tokens = post(
        client, "/v2/workspace/authtokens/get", {"apiKey": api_key},
        headers={"x-service-workspace-id": workspace["id"], "x-service-workspace-auth-token": workspace["authToken"]})
    assert tokens.status_code == 200, tokens.text
    return Tenant(workspace, api_key, tokens.json()["result"]["data"]["authTokens"][0]["token"])


def result(response: httpx.Response, status: int = 200) -> Any:
    """The `result.data` of a success response, after checking the envelope."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["result"]["status"] == "success", body
    return body["result"].get("data")


def error(response: httpx.Response, code: str, status: int | None = None) -> dict[str, Any]:
    """The `error` of a failure response, after checking its code (and HTTP status)."""
    from collab.kit.errors import HTTP_STATUS

    assert response.status_code == (status or HTTP_STATUS[code]), response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["status"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


def issue_paths(err: dict[str, Any]) -> list[list[str]]:
    return [i["path"] for i in err["details"]["issues"]]


def enable_activities(client: httpx.Client, tenant: Tenant, **config: Any) -> None:
    body = {"activityServiceConfig": {"isEnabled": True, **config}}
    result(post(client, "/v2/workspace/activityconfig/update", body, tenant.headers))


def settle_jobs(live, tenant: Tenant) -> None:
    """Wait (on the queue, not the clock) until every job this tenant queued has finished, including jobs those
    jobs queued (a deferred ingest queues itself again as a new job)."""
    from arq.jobs import Job

    from collab.kit.jobs import lane

    async def wait():
        while True:
            async with live.svc.pool.connection() as conn:
                cur = await conn.execute(
                    "select id, function from jobs where api_key_id = %s and status in ('queued', 'running')",
                    (tenant.api_key, ))
                jobs = [(row["id"], row["function"]) for row in await cur.fetchall()]
            if not jobs:
                return
            for job_id, function in jobs:  # each on its lane's queue (arq looks for a job in the queue it is given)
                await Job(job_id, live.svc.redis, _queue_name=lane(function).queue).result(timeout=60, poll_delay=0.01)

    live.run(wait(), timeout=90)


def add_organization(client: httpx.Client, tenant: Tenant, org: str, *documents: str,
                     folder: str | None = None) -> None:
    """Create an organization (and documents in it, optionally in a new folder)."""
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": org}]}, tenant.headers))
    if documents:
        data: dict[str, Any] = {"organizationId": org, "documents": [{"documentId": d} for d in documents]}
        if folder:
            data |= {"folderId": folder, "createFolder": True}
        result(post(client, "/v2/organizations/documents/add", data, tenant.headers))


def enable_advanced_queries(client: httpx.Client, tenant: Tenant) -> None:
    result(post(client, "/v2/workspace/apikeyconfig/update", {"enableAdvancedQueries": True}, tenant.headers))
