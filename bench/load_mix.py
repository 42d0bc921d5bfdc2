"""The load mix: tenants and their data (setup, not measured), and the operations virtual users perform.

A virtual user stands for a product backend acting for people on one tenant: opening a document checks
permissions, lists its users and loads its comment threads, the notification panel pages through
notifications and the comment badge counts unread threads, people comment (new threads and replies, now and
then mentioning someone) and log activities, and now and then someone creates or renames a document, shares
it, or searches past reviews.
"""

import asyncio
import itertools
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import httpx

ORGS, FOLDERS, DOCS_PER_FOLDER, ORG_USERS, DOC_USERS = 3, 2, 4, 12, 2
SEED_NOTIFICATIONS = 60  # per organization, to every organization user: three pages of 20 per user
SEED_JUDGMENTS = 120  # comment activities per tenant, so search has something to find
SEED_THREADS, SEED_REPLIES = 4, 2  # comment threads per document, replies per thread
GUESTS = 10  # users/add draws from a bounded pool, so audiences (and notification fan-out) stop growing
PAGE_SIZE = 20

_SUBJECTS = [
    "The pricing table", "The hero image", "The signup form", "The legal footer", "The launch banner",
    "The second paragraph", "The onboarding email", "The comparison chart", "The checkout button", "The privacy notice",
    "The product description", "The release notes", "The FAQ answer", "The headline", "The testimonial quote",
    "The cookie banner"
]
_ISSUES = [
    "needs the original price next to the sale price", "is missing alternative text for screen readers",
    "collects e-mails without a consent checkbox", "sounds too aggressive for our brand voice",
    "lacks the investment risk disclaimer", "fails the contrast ratio on dark backgrounds", "has a spelling mistake",
    "shows the wrong launch date", "should link to the terms of service", "uses a claim we cannot substantiate",
    "repeats the same sentence twice", "is fine, approve it", "needs a source for the statistic",
    "mentions a discontinued feature", "looks good to me", "should use sentence case"
]


def comment(rng: random.Random) -> str:
    """A short review comment (256 combinations, so embeddings and searches vary)."""
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_ISSUES)}."


@dataclass
class Org:
    """One organization of a tenant: its folders, documents and organization-level users."""

    id: str
    folders: list[str]
    docs: list[str]
    users: list[str]
    threads: dict[str, list[str]] = field(default_factory=dict)  # document id -> its comment threads' ids


@dataclass
class Tenant:
    """A workspace with its API key: the headers of both auth levels, and its organizations."""

    name: str
    headers: dict[str, str]
    workspace_headers: dict[str, str]
    orgs: list[Org] = field(default_factory=list)


class Recorder:
    """Every request's outcome: (finish time, route, seconds, HTTP status or exception name, error code)."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, str, float, int | str, str | None]] = []
        self.item_failures: dict[str, int] = {}

    def add(self, route: str, seconds: float, status: int | str, code: str | None) -> None:
        self.rows.append((time.monotonic(), route, seconds, status, code))


@dataclass
class Session:
    """What one operation needs: the client, the tenant, a random source, the recorder, an id counter."""

    client: httpx.AsyncClient
    tenant: Tenant
    rng: random.Random
    recorder: Recorder
    prefix: str
    counter: itertools.count = field(default_factory=itertools.count)

    def new_id(self, kind: str) -> str:
        return f"{kind}-{self.prefix}-{next(self.counter)}"

    async def post(self, path: str, data: dict[str, Any], *, workspace: bool = False) -> dict[str, Any] | None:
        """POST {data}, timed and recorded under the route's name; the body of a 2xx answer, else None."""
        headers = self.tenant.workspace_headers if workspace else self.tenant.headers
        route = path.split("/", 2)[2]
        started = time.perf_counter()
        try:
            response = await self.client.post(path, json={"data": data}, headers=headers)
        except httpx.HTTPError as exc:  # no answer at all: the exception's class stands for the status
            self.recorder.add(route, time.perf_counter() - started, type(exc).__name__, str(exc)[:200] or None)
            return None
        seconds = time.perf_counter() - started
        body = _json(response)
        code = (body.get("error") or {}).get("status") if isinstance(body, dict) else None
        self.recorder.add(route, seconds, response.status_code, code)
        if not 200 <= response.status_code < 300:
            return None
        self._count_item_failures(route, body)
        return body

    def _count_item_failures(self, route: str, body: Any) -> None:
        """Batch answers report items with success false inside a 2xx; the mix never expects one."""
        data = ((body or {}).get("result") or {}).get("data")
        if isinstance(data, dict) and data and all(isinstance(v, dict) and "success" in v for v in data.values()):
            failed = sum(1 for v in data.values() if v["success"] is not True)
            if failed:
                self.recorder.item_failures[route] = self.recorder.item_failures.get(route, 0) + failed


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


# --- setup (not measured) ---------------------------------------------------------------------------------


async def create_tenant(client: httpx.AsyncClient, index: int) -> Tenant:
    """A fresh workspace and its first API key's token.

    Each tenant is created from its own address in the benchmarking range 198.18.0.0/15 (sent as
    X-Forwarded-For, which the service trusts from loopback), as distinct customers would.
    """
    email = f"load-{uuid.uuid4().hex[:10]}@example.com"
    forwarded = {"x-forwarded-for": f"198.18.{index // 250}.{index % 250 + 1}"}
    created = await _ok(client, "/v2/workspace/create", {"ownerEmail": email, "name": f"Load {index}"}, forwarded)
    ws = created["result"]["data"]
    api_key = next(iter(ws["apiKeyList"]))
    workspace_headers = {"x-service-workspace-id": ws["id"], "x-service-workspace-auth-token": ws["authToken"]}
    tokens = await _ok(client, "/v2/workspace/authtokens/get", {"apiKey": api_key}, workspace_headers)
    token = tokens["result"]["data"]["authTokens"][0]["token"]
    return Tenant(f"tenant-{index}", {"x-service-api-key": api_key, "x-service-auth-token": token}, workspace_headers)


async def _ok(client: httpx.AsyncClient, path: str, data: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """POST during setup; any failure stops the benchmark (the setup must be complete)."""
    response = await client.post(path, json={"data": data}, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"setup: {path} answered {response.status_code}: {response.text[:300]}")
    return response.json()


async def populate(client: httpx.AsyncClient, tenant: Tenant, rng: random.Random) -> None:
    """Configs on, then organizations, folders, documents, users, notifications and judged comments."""
    h = tenant.headers
    await _ok(client, "/v2/workspace/apikeyconfig/update", {"enableAdvancedQueries": True}, h)
    await _ok(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}}, h)
    await _ok(client, "/v2/workspace/notificationconfig/update", {"useNotificationService": True}, h)
    for o in range(ORGS):
        org = Org(f"org-{o}", [f"folder-{f}" for f in range(FOLDERS)], [], [f"user-{o}-{u}" for u in range(ORG_USERS)])
        for folder in org.folders:
            docs = [f"doc-{folder}-{d}" for d in range(DOCS_PER_FOLDER)]
            await _ok(
                client, "/v2/organizations/documents/add", {
                    "organizationId": org.id, "createOrganization": True, "folderId": folder, "createFolder": True,
                    "documents": [{"documentId": d, "documentName": f"Document {d}"} for d in docs]
                }, h)
            org.docs += docs
        users = [{
            "userId": u, "name": f"User {u}", "email": f"{u}@example.com", "accessRole": "editor" if i % 3 else "viewer"
        } for i, u in enumerate(org.users)]
        await _ok(client, "/v2/users/add", {"organizationId": org.id, "users": users}, h)
        for doc in org.docs:
            guests = [{"userId": f"guest-{o}-{doc}-{g}", "accessRole": "viewer"} for g in range(DOC_USERS)]
            await _ok(client, "/v2/users/add", {"organizationId": org.id, "documentId": doc, "users": guests}, h)
        tenant.orgs.append(org)
        await asyncio.gather(*(_seed_notification(client, tenant, org, n, rng) for n in range(SEED_NOTIFICATIONS)))
        await asyncio.gather(*(_seed_threads(client, tenant, org, doc, rng) for doc in org.docs))
    for chunk in range(0, SEED_JUDGMENTS, 20):
        org = tenant.orgs[chunk // 20 % ORGS]
        activities = [_activity(rng, org, "comment_annotation.add") for _ in range(20)]
        await _ok(client, "/v2/activities/add",
                  {"organizationId": org.id, "documentId": rng.choice(org.docs), "activities": activities}, h)


async def _seed_notification(client: httpx.AsyncClient, tenant: Tenant, org: Org, n: int, rng: random.Random) -> None:
    actor = rng.choice(org.users)
    await _ok(
        client, "/v1/notifications/add", {
            "organizationId": org.id, "documentId": org.docs[n % len(org.docs)], "actionUser": {"userId": actor},
            "displayHeadlineMessageTemplate": "{actionUser} mentioned you in {docName}",
            "displayHeadlineMessageTemplateData": {"docName": org.docs[n % len(org.docs)]},
            "displayBodyMessage": comment(rng), "notifyUsers": [{"userId": rng.choice(org.users)}]
        }, tenant.headers)


async def _seed_threads(client: httpx.AsyncClient, tenant: Tenant, org: Org, doc: str, rng: random.Random) -> None:
    threads = [f"ann-{doc}-{n}" for n in range(SEED_THREADS)]
    await _ok(
        client, "/v2/commentannotations/add", {
            "organizationId": org.id, "documentId": doc, "commentAnnotations": [{
                "annotationId": a, "commentData": [_comment_data(rng, org) for _ in range(1 + SEED_REPLIES)]
            } for a in threads]
        }, tenant.headers)
    org.threads[doc] = threads


def _comment_data(rng: random.Random, org: Org) -> dict[str, Any]:
    """One comment by a random organization user; one in five mentions someone (who is always notified)."""
    user = rng.choice(org.users)
    data: dict[str, Any] = {"commentText": comment(rng), "from": {"userId": user, "name": f"User {user}"}}
    if rng.random() < 0.2:
        data["taggedUserContacts"] = [{"userId": rng.choice(org.users)}]
    return data


async def wait_searchable(client: httpx.AsyncClient, tenants: list[Tenant], timeout: float = 300) -> None:
    """Until every tenant's seeded comments are judged and embedded (the worker drains its queue)."""
    deadline = time.monotonic() + timeout
    for tenant in tenants:
        while True:
            body = await _ok(client, "/v2/memory/search", {"query": "review", "limit": 50}, tenant.headers)
            if len(body["result"]["results"]) >= min(50, SEED_JUDGMENTS) or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)


# --- the operations ---------------------------------------------------------------------------------------

# Activity kinds a collaboration product logs, by share: most are comments (which notify, and become
# judgments the worker embeds), then reactions and resolutions; custom events are neither.
_ACTIONS = [("comment.add", 40), ("comment_annotation.add", 20), ("comment.reaction_add", 10),
            ("comment_annotation.status_change", 10), ("custom", 20)]


def _activity(rng: random.Random, org: Org, action: str) -> dict[str, Any]:
    """One activity log record of the given action type by a random organization user."""
    user = rng.choice(org.users)
    record: dict[str, Any] = {
        "featureType": "comment", "actionType": action, "actionUser": {"userId": user, "name": f"User {user}"},
        "targetEntityId": f"ann-{rng.randrange(200)}"
    }
    if action in ("comment.add", "comment_annotation.add"):
        record["entityData"] = {"commentText": comment(rng)}
    elif action == "comment.reaction_add":
        record["entityData"] = {"reaction": rng.choice(["👍", "agree", "🎉"])}
    elif action == "comment_annotation.status_change":
        record["changes"] = {"status": {"from": "open", "to": "resolved"}}
    else:
        record |= {"featureType": "custom", "actionType": "document.viewed"}
    return record


def _pick(s: Session) -> tuple[Org, str]:
    org = s.rng.choice(s.tenant.orgs)
    return org, s.rng.choice(org.docs)


async def workspace_get(s: Session) -> None:
    await s.post("/v2/workspace/get", {}, workspace=True)


async def config_get(s: Session) -> None:
    """One of the console settings a product backend reads (and would cache for a while)."""
    path = s.rng.choice(["apikeyconfig", "activityconfig", "notificationconfig"])
    await s.post(f"/v2/workspace/{path}/get", {})


async def permissions_get(s: Session) -> None:
    org, doc = _pick(s)
    users = s.rng.sample(org.users, s.rng.randint(1, 5))
    await s.post("/v2/auth/permissions/get", {"organizationId": org.id, "userIds": users, "documentIds": [doc]})


async def users_get(s: Session) -> None:
    org, doc = _pick(s)
    scope = {"documentId": doc} if s.rng.random() < 0.7 else {}
    await s.post("/v2/users/get", {"organizationId": org.id, "pageSize": 50, **scope})


async def notifications_get(s: Session) -> None:
    """Open the notification panel (page 1 of 20), and scroll on for up to two more pages."""
    org = s.rng.choice(s.tenant.orgs)
    data: dict[str, Any] = {"organizationId": org.id, "userId": s.rng.choice(org.users), "pageSize": PAGE_SIZE}
    for _ in range(s.rng.choice([1, 1, 2, 3])):
        body = await s.post("/v2/notifications/get", data)
        token = body and body["result"].get("pageToken")
        if not token:
            return
        data = {**data, "pageToken": token}


async def activities_add(s: Session) -> None:
    org, doc = _pick(s)
    actions, weights = zip(*_ACTIONS)
    records = [_activity(s.rng, org, s.rng.choices(actions, weights)[0]) for _ in range(s.rng.choice([1, 1, 1, 2]))]
    await s.post("/v2/activities/add", {"organizationId": org.id, "documentId": doc, "activities": records})


async def documents_add(s: Session) -> None:
    org = s.rng.choice(s.tenant.orgs)
    doc = s.new_id("doc")
    folder = {"folderId": s.rng.choice(org.folders)} if s.rng.random() < 0.5 else {}
    body = await s.post("/v2/organizations/documents/add",
                        {"organizationId": org.id, "documents": [{"documentId": doc, "documentName": doc}], **folder})
    if body is not None:
        org.docs.append(doc)  # later reads and writes reach the new document too


async def documents_update(s: Session) -> None:
    org, doc = _pick(s)
    name = f"{doc} v{s.rng.randrange(1000)}"
    await s.post("/v2/organizations/documents/update",
                 {"organizationId": org.id, "documents": [{"documentId": doc, "documentName": name}]})


async def users_add(s: Session) -> None:
    """Share a document with someone (from a bounded pool of guests)."""
    org, doc = _pick(s)
    guest = f"guest-{s.rng.randrange(GUESTS)}"
    user = {"userId": guest, "name": f"Guest {guest}", "accessRole": s.rng.choice(["viewer", "editor"])}
    await s.post("/v2/users/add", {"organizationId": org.id, "documentId": doc, "users": [user]})


async def users_update(s: Session) -> None:
    org = s.rng.choice(s.tenant.orgs)
    user = s.rng.choice(org.users)
    change = {
        "userId": user, "name": f"User {user} {s.rng.randrange(1000)}", "accessRole": s.rng.choice(["viewer", "editor"])
    }
    await s.post("/v2/users/update", {"organizationId": org.id, "users": [change]})


async def comments_get(s: Session) -> None:
    """Open a document's comment sidebar: its threads with their comments, as one of its users sees them."""
    org, doc = _pick(s)
    await s.post("/v2/commentannotations/get",
                 {"organizationId": org.id, "documentId": doc, "pageSize": 50, "userId": s.rng.choice(org.users)})


async def comments_count(s: Session) -> None:
    """The unread badge of a user over the organization's documents."""
    org = s.rng.choice(s.tenant.orgs)
    await s.post("/v2/commentannotations/count/get",
                 {"organizationId": org.id, "userId": s.rng.choice(org.users), "documentIds": org.docs[:100]})


async def comments_add(s: Session) -> None:
    """Reply in a thread of the document (seven in ten), or start a new one."""
    org, doc = _pick(s)
    threads = org.threads.setdefault(doc, [])
    where = {"organizationId": org.id, "documentId": doc}
    if threads and s.rng.random() < 0.7:
        await s.post("/v2/commentannotations/comments/add",
                     {**where, "annotationId": s.rng.choice(threads), "commentData": [_comment_data(s.rng, org)]})
        return
    annotation = s.new_id("ann")
    body = await s.post(
        "/v2/commentannotations/add",
        {**where, "commentAnnotations": [{"annotationId": annotation, "commentData": [_comment_data(s.rng, org)]}]})
    if body is not None:
        threads.append(annotation)


async def memory_search(s: Session) -> None:
    org = s.rng.choice(s.tenant.orgs)
    scope = {"organizationId": org.id} if s.rng.random() < 0.7 else {}
    await s.post("/v2/memory/search", {"query": comment(s.rng), "limit": 10, **scope})


Op = Callable[[Session], Awaitable[None]]

# Weights (percent of operations). Reads dominate as in any collaboration product (~70%): every document
# open checks permissions, lists users and loads its threads, the notification panel is polled and paged,
# the unread badge is counted. Comments are the most frequent write (threads and replies, and the activities
# a client logs itself); document and user writes follow people creating, renaming and sharing documents.
# Console-style reads are rare (a backend caches them), and so is semantic search (an explicit user action,
# and the costliest call: the query is embedded by the worker).
MIX: list[tuple[str, Op, int]] = [("permissions/get", permissions_get, 16),
                                  ("notifications/get (1-3 pages)", notifications_get, 14),
                                  ("commentannotations/get", comments_get, 10),
                                  ("commentannotations/count/get", comments_count, 6),
                                  ("comments add (reply 70%, new thread 30%)", comments_add, 6),
                                  ("activities/add", activities_add, 10), ("users/get", users_get, 10),
                                  ("documents/add", documents_add, 5), ("documents/update", documents_update, 3),
                                  ("users/add", users_add, 5), ("users/update", users_update, 5),
                                  ("workspace config get (3 kinds)", config_get, 6),
                                  ("workspace/get", workspace_get, 1), ("memory/search", memory_search, 3)]
