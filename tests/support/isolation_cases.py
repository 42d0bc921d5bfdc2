"""Data of the tenant isolation matrix: tenant A with data in every feature, tenant B's skeleton, and one
request table entry per operation, built from a namespace of ids (A's, or their never-existing twins)."""

import base64
import re
import secrets
import string
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from collab.testing.receiver import settle_webhooks
from support.helpers import Tenant, new_tenant, post, result, settle_jobs

HOOKS = "/v2/workspace/advancedwebhook"
# Ids the client chooses: A names them "<kind>-<tag>"; tenant B's skeleton reuses the container ones.
CLIENT_KINDS = ("org", "org2", "folder", "subfolder", "doc", "doc2", "docm", "docn", "user", "user2", "gone", "group",
                "ntf", "act", "act2", "ann", "rec", "editor", "uid")
SKELETON_KINDS = ("org", "folder", "doc", "user", "group")


class Ids(dict):
    """Ids by kind (`ids.org`); every value is a string that can stand in a request."""

    __getattr__ = dict.__getitem__

    def twins(self) -> "Ids":
        """Ids of the same shape (prefix, length, alphabet) that never existed anywhere."""
        return Ids({kind: scramble(value) for kind, value in self.items()})


def scramble(value: str) -> str:
    """`value` with every character after its kind prefix replaced by a random one of the same class (an e-mail
    address: its local part, so that its domain stays a valid one, as every address must be)."""
    if "@" in value:
        local, _, domain = value.partition("@")
        return scramble(local) + "@" + domain
    prefix = re.match(r"^[A-Za-z]+[-_]", value)
    head = prefix.group(0) if prefix else ""
    classes = ("0123456789abcdef", "ghijklmnopqrstuvwxyz", string.ascii_uppercase)
    while True:
        tail = "".join(next((secrets.choice(c) for c in classes if ch in c), ch) for ch in value[len(head):])
        if tail != value[len(head):]:
            return head + tail


@dataclass
class Alpha:
    """Tenant A: its credentials, the ids of everything it owns, and the stored values it must keep to itself."""

    tenant: Tenant
    ids: Ids
    values: list[str] = field(default_factory=list)
    view: dict[str, Any] = field(default_factory=dict)

    @property
    def private(self) -> list[str]:
        """Everything of A that B must never read back unless it sent it: ids, credentials, stored values."""
        return [*self.ids.values(), *self.values]


# --- tenant A ---------------------------------------------------------------------------------------


def checklist(tag: str) -> bytes:
    """A small CSV checklist whose category names carry the tag (the fake model names agents after them)."""
    return (f"Category,Check\nAlpha{tag},Every price claim states whether tax is included\n"
            f"Alpha{tag},Comparative claims name the compared product\n").encode()


def recording(annotation_id: str | None, name: str, url: str, user: str) -> dict[str, Any]:
    record = {
        "recordingType": "screen", "mode": "floating", "displayName": name, "recordedTime": {"duration": 5000},
        "from": {"userId": user},
        "attachments": [{"url": url, "mimeType": "video/webm", "name": "r.webm", "type": "video", "size": 100}]
    }
    return record | ({"annotationId": annotation_id} if annotation_id else {})


def review(activity_id: str, annotation: str, user: str, reasoning: str, action: str) -> dict[str, Any]:
    return {
        "id": activity_id, "featureType": "comment", "actionType": action, "targetEntityId": annotation,
        "actionUser": {"userId": user}, "entityData": {"reasoning": reasoning}
    }


def build_alpha(client: httpx.Client, live, hook_url: str) -> Alpha:
    """Tenant A with data in every feature, settled (no job, delivery or debounce left to run)."""
    tag = secrets.token_hex(6)
    ids = Ids({kind: f"{kind}-{tag}" for kind in CLIENT_KINDS}, tag=tag)
    t = new_tenant(client, ownerEmail=f"alpha-{tag}@example.com", name=f"Ana {tag}", workspaceName=f"Alpha {tag}")
    a = Alpha(t, ids,
              [t.workspace["name"], t.workspace["owner"]["name"], t.workspace["apiKeyList"][t.api_key]["apiKeyName"]])
    ids |= {
        "api_key": t.api_key, "auth_token": t.auth_token, "workspace": t.workspace["id"],
        "workspace_token": t.workspace["authToken"], "email": t.workspace["owner"]["email"],
        "owner": t.workspace["owner"]["id"]
    }

    def call(path: str, data: dict[str, Any]) -> Any:
        # Every value A stores carries the tag: those are the values B must never read back.
        a.values.extend(v for v in leaves(data) if tag in v and v not in ids.values())
        response = post(client, path, data, t.headers)
        if path.endswith("/data/delete"):  # the spec's one top-level body, with HTTP 202
            assert response.status_code == 202, response.text
            return response.json()["data"]
        return result(response)

    _configure(call, tag)
    _containers(call, ids, tag)
    _features(call, ids, tag)
    _endpoints(call, ids, tag, hook_url)
    a.values.extend(_jobs(call, ids, tag))
    _agents(call, ids, tag)
    _settle(live, t)
    a.values.append(_insights(live, t, ids))
    _generated(client, t, ids)
    _page_tokens(client, t, ids)
    return a


def leaves(value: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *leaves(v))]
    if isinstance(value, list):
        return [s for v in value for s in leaves(v)]
    return []


def _configure(call, tag: str) -> None:
    call("/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}})
    call("/v2/workspace/advancedwebhookconfig/update", {"isEnabled": True})
    call("/v2/workspace/notificationconfig/update", {"useNotificationService": True})
    call(
        "/v2/workspace/apikeyconfig/update",
        {"enableAdvancedQueries": True, "aiModelApiKey": [{"provider": "openai", "customerApiKey": f"sk-alpha-{tag}"}]})


def _containers(call, i: Ids, tag: str) -> None:
    call(
        "/v2/organizations/add", {
            "organizations": [{"organizationId": i.org, "organizationName": f"Alpha Org {tag}"},
                              {"organizationId": i.org2, "organizationName": f"Beta Org {tag}"}]
        })
    call(
        "/v2/organizations/folders/add", {
            "organizationId": i.org, "folders": [{"folderId": i.folder, "folderName": f"Alpha Folder {tag}"}, {
                "folderId": i.subfolder, "folderName": f"Alpha Subfolder {tag}", "parentFolderId": i.folder
            }]
        })
    call(
        "/v2/organizations/documents/add", {
            "organizationId": i.org, "folderId": i.folder, "documents": [{
                "documentId": i.doc, "documentName": f"Alpha Doc {tag}"
            }, {"documentId": i.doc2, "documentName": f"Alpha Doc2 {tag}"
                }, {"documentId": i.docm, "documentName": f"Alpha Moved {tag}"}]
        })
    call(
        "/v2/users/add", {
            "organizationId": i.org, "users": [{
                "userId": i.user, "name": f"Ana {tag}", "email": f"ana-{tag}@alpha.example", "accessRole": "editor"
            }, {"userId": i.user2, "name": f"Bo {tag}", "email": f"bo-{tag}@alpha.example", "accessRole": "viewer"}]
        })
    call(
        "/v2/users/add", {
            "organizationId": i.org, "documentId": i.doc, "users": [{"userId": i.user2, "accessRole": "editor"},
                                                                    {"userId": i.gone, "name": f"Gone {tag}"}]
        })
    call("/v2/organizations/usergroups/add",
         {"organizationId": i.org, "organizationUserGroups": [{"groupId": i.group, "groupName": f"Alpha Group {tag}"}]})
    call("/v2/organizations/usergroups/users/add",
         {"organizationId": i.org, "organizationUserGroupId": i.group, "userIds": [i.user2]})
    call(
        "/v2/users/invite/add", {
            "email": i.email, "organizationId": i.org, "type": "doc_user", "documentId": i.doc,
            "documentName": f"Alpha Invited Doc {tag}"
        })
    call(
        "/v2/auth/permissions/add", {
            "user": {"userId": i.user2}, "permissions": {
                "resources": [{
                    "type": "folder", "id": i.subfolder, "organizationId": i.org, "expiresAt": 4_000_000_000
                }]
            }
        })
    call(
        "/v2/auth/permissions/add", {
            "group": {"organizationId": i.org, "organizationUserGroupId": i.group},
            "permissions": {"resources": [_grant(i, "document", i.doc2)]}
        })


def _features(call, i: Ids, tag: str) -> None:
    where = {"organizationId": i.org, "documentId": i.doc}
    call(
        "/v2/notifications/add", {
            **where, "notificationId": i.ntf, "actionUser": {"userId": i.user},
            "displayHeadlineMessageTemplate": f"{{actionUser}} alpha {tag}", "displayBodyMessage": f"Alpha body {tag}",
            "notifyAll": False, "notifyUsers": [{"userId": i.user2}
                                                ], "notificationSourceData": {"note": f"Alpha source {tag}"}
        })
    call(
        "/v2/notifications/add", {
            **where, "actionUser": {"userId": i.user2}, "displayHeadlineMessageTemplate": "hi",
            "displayBodyMessage": f"Alpha second body {tag}", "notifyUsers": []
        })
    call(
        "/v2/activities/add", {
            **where, "activities": [
                review(i.act, i.ann, i.user, f"Alpha reasoning {tag}: the price claim needs the original price.",
                       "comment_annotation.reject"),
                review(i.act2, i.ann, i.user2, f"Alpha comment {tag}", "comment.add")
            ]
        })
    call("/v2/presence/update",
         {**where, "users": [{"userId": i.user, "name": f"Ana present {tag}", "status": "online"}]})
    url = f"https://cdn.alpha.example/{tag}.webm"
    call(
        "/v2/recordings/add", {
            **where, "recordings": [
                recording(i.rec, f"Alpha recording {tag}", url, i.user),
                recording(None, f"Alpha recording two {tag}", url, i.user2)
            ]
        })
    call("/v2/crdt/add", {**where, "editorId": i.editor, "type": "text", "data": f"Alpha text {tag}", "userId": i.user})
    call("/v2/livestate/broadcast", {**where, "liveStateDataId": i.editor, "data": {"note": f"Alpha live {tag}"}})
    call(
        "/v2/commentannotations/add", {
            **where, "commentAnnotations": [{
                "annotationId": i.ann, "location": {"id": f"loc-{tag}"}, "assignedTo": {"userId": i.user2},
                "commentData": [{
                    "commentText": f"Alpha thread {tag}", "from": {"userId": i.user, "name": f"Ana {tag}"},
                    "taggedUserContacts": [{"userId": i.user2}]
                }]
            }, {
                "visibility": {"type": "restricted", "userIds": [i.user2]},
                "commentData": [{"commentText": f"Alpha private {tag}", "from": {"userId": i.user}}]
            }]
        })
    call("/v2/commentannotations/comments/reactions/add",
         {**where, "annotationId": i.ann, "commentId": 1, "reaction": f"alpha-{tag}", "userId": i.user2})
    call("/v2/commentannotations/read/update", {**where, "userId": i.user2})


def _endpoints(call, i: Ids, tag: str, hook_url: str) -> None:
    # Created after the features: A's later writes and jobs emit events to both endpoints.
    first = call(
        f"{HOOKS}/endpoints/create",
        {"url": hook_url, "uid": i.uid, "description": f"Alpha hooks {tag}", "metadata": {"team": f"alpha {tag}"}})
    second = call(f"{HOOKS}/endpoints/create", {"url": hook_url, "description": f"Alpha hooks two {tag}"})
    i |= {"endpoint": first["id"], "endpoint2": second["id"]}
    call(
        "/v2/crdt/update", {
            "organizationId": i.org, "documentId": i.doc, "editorId": i.editor, "data": f"Alpha text {tag} edited",
            "userId": i.user
        })


def _jobs(call, i: Ids, tag: str) -> list[str]:
    """A migration, a user-data deletion and an extraction; the names of the extracted agents."""
    started = call("/v2/organizations/documents/migrate",
                   {"organizationId": i.org, "documentId": i.docm, "newDocumentId": i.docn})
    deletion = call("/v2/users/data/delete", {"userIds": [i.gone], "organizationIds": [i.org]})
    extracted = call("/v2/agents/extract", _extract(i))["extractionResult"]
    i |= {"migration": started["migrationId"], "job": deletion["jobId"], "source": extracted["memory"]["sourceId"]}
    return [agent["name"] for agent in extracted["agents"]]


def _agents(call, i: Ids, tag: str) -> None:
    """Two agents (one with a REST secret, one behaviour change behind it) and two groups holding them."""
    first = call(
        "/v2/agents/create",
        _agent(
            f"Alpha agent {tag}", metadata={"team": f"alpha {tag}"}, contextGathering={
                "strategies": ["rest-api"], "strategyOptions": {
                    "rest-api": {
                        "endpoints": [{
                            "description": f"Alpha prices {tag}", "url": f"https://alpha-{tag}.example",
                            "auth": {"type": "bearer", "token": f"sk-alpha-agent-{tag}"}
                        }]
                    }
                }
            }))["agentId"]
    second = call("/v2/agents/create", _agent(f"Alpha second agent {tag}"))["agentId"]
    call("/v2/agents/version/update", {"agentId": first, "instructions": f"Alpha instructions v2 {tag}"})
    group = call(
        "/v2/agents/groups/create", {
            "name": f"Alpha group {tag}", "description": f"Alpha agents {tag}", "agentIds": [first, second],
            "metadata": {"team": f"alpha {tag}"}
        })["group"]["id"]
    call("/v2/agents/groups/create", {"name": f"Alpha second group {tag}", "agentIds": [second]})
    runs = [
        call(
            "/v2/agents/execution/run",
            {"agentId": first, "url": "http://127.0.0.1:9/", "organizationId": i.org, "documentId": doc})["executionId"]
        for doc in (i.doc, i.doc2)
    ]
    i |= {"agent": first, "agent2": second, "agent_group": group, "execution": runs[0]}


def _agent(name: str, **more: Any) -> dict[str, Any]:
    body = {
        "name": name, "description": f"{name} checks", "enabled": True, "instructions": f"{name} instructions",
        "contextGathering": {"strategies": ["web-page-text"]}, "execution": {}
    }
    return body | more


def _settle(live, t: Tenant) -> None:
    """Run every job and delivery of A, and flush its CRDT debounce window (5 s) on a clock moved past it."""
    settle_jobs(live, t)
    original = live.svc.clock
    live.svc.clock = lambda: original() + 10
    try:
        live.run(settle_webhooks(live.svc, t.api_key), timeout=120)
    finally:
        live.svc.clock = original
    settle_jobs(live, t)


def _insights(live, t: Tenant, i: Ids) -> str:
    """A's insights computed now (the worker's cron has nothing left to do for A) and an alert of A's; its title."""
    from collab.insights import repository as insights_repo
    from collab.insights.service import compute_key

    title = f"Alpha alert {i.tag}"

    async def run():
        await compute_key(live.svc, api_key_id=t.api_key)
        async with live.svc.pool.connection() as conn:
            alert = {
                "alert_type": "anomaly", "severity": "low", "dedup_key": "anomaly:volume", "body": {
                    "title": title, "description": title, "evidence": {"metric": "volume"}, "suggestedAction": None,
                    "actionUrl": None
                }
            }
            await insights_repo.insert_alert(conn, api_key_id=t.api_key, id=f"alr_{i.tag}", alert=alert,
                                             now=live.svc.now_ms())

    live.run(run(), timeout=60)
    settle_jobs(live, t)  # a computation the cron queued before this one
    i["alert"] = f"alr_{i.tag}"
    return title


def _generated(client: httpx.Client, t: Tenant, i: Ids) -> None:
    """Ids the service generated for A (notification, recording, webhook message) and A's endpoint secret."""
    notes = result(post(client, "/v2/notifications/get", {"organizationId": i.org, "documentId": i.doc}, t.headers))
    i["ntf_generated"] = next(n["id"] for n in notes if n["id"].startswith("ntf_"))
    records = result(post(client, "/v2/recordings/get", {"organizationId": i.org}, t.headers))
    i["rec_generated"] = next(r["annotationId"] for r in records if r["annotationId"].startswith("rec_"))
    messages = result(post(client, f"{HOOKS}/messages/get", {"endpointId": i.endpoint}, t.headers))["messages"]
    i["message"] = next(m["id"] for m in messages if m["status"] == "succeeded")
    i["secret"] = result(post(client, f"{HOOKS}/endpoints/secret/get", {"endpointId": i.endpoint}, t.headers))["key"]


def _page_tokens(client: httpx.Client, t: Tenant, i: Ids) -> None:
    """A's page tokens of every paged list (B must not be able to use, or recognise, them)."""
    pages = {
        "orgs_token": ("/v2/organizations/get", {"pageSize": 1}, "pageToken"),
        "docs_token": ("/v2/organizations/documents/get", {"organizationId": i.org, "pageSize": 1},
                       "pageToken"), "users_token": ("/v2/users/get", {"organizationId": i.org,
                                                                       "pageSize": 1}, "pageToken"),
        "ntfs_token": ("/v2/notifications/get", {"organizationId": i.org, "documentId": i.doc, "pageSize": 1},
                       "pageToken"), "acts_token": ("/v2/activities/get", {"organizationId": i.org,
                                                                           "pageSize": 1}, "pageToken"),
        "recs_token": ("/v2/recordings/get", {"organizationId": i.org, "pageSize": 1}, "pageToken"),
        "comments_token": ("/v2/commentannotations/get", {"organizationId": i.org, "pageSize": 1}, "pageToken"),
        "folders_token": ("/v2/organizations/folders/get", {"organizationId": i.org, "pageSize": 1},
                          "pageToken"), "export_token": ("/v2/users/data/get", {"userIds": [i.user],
                                                                                "pageSize": 1}, "pageToken"),
        "judgments_token": ("/v2/memory/judgments/query", {"pageSize": 1},
                            "pageToken"), "endpoints_iterator": (f"{HOOKS}/endpoints/get", {"limit": 1}, "iterator"),
        "messages_iterator": (f"{HOOKS}/messages/get", {"limit": 1},
                              "iterator"), "agents_token": ("/v2/agents/get", {"pageSize": 1}, "nextPageToken"),
        "versions_token": ("/v2/agents/versions/list", {"agentId": i.agent, "pageSize": 1},
                           "nextPageToken"), "agent_groups_token": ("/v2/agents/groups/list", {"pageSize": 1},
                                                                    "nextPageToken"),
        "executions_token": ("/v2/agents/execution/list", {"agentId": i.agent, "pageSize": 1}, "nextPageToken")
    }
    for kind, (path, data, name) in pages.items():
        body = post(client, path, data, t.headers).json()["result"]
        token = body.get(name) or body["data"].get(name)
        assert token, (path, body)
        i[kind] = token


# --- tenant B -------------------------------------------------------------------------------------


def prepare(client: httpx.Client, ids: Ids) -> Tenant:
    """A fresh tenant with every feature on and its own organization, folder, document, user and group under `ids`.

    The skeleton makes B's calls get past "organization does not exist" into the item lookups, where a
    query that forgot its tenant would find A's rows.
    """
    t = new_tenant(client)
    # Independent writes go side by side (the waits are the service's, not this machine's work).
    _together(client, t, [("/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}}),
                          ("/v2/workspace/apikeyconfig/update", {"enableAdvancedQueries": True}),
                          ("/v2/workspace/advancedwebhookconfig/update", {"isEnabled": True}),
                          ("/v2/organizations/documents/add", {
                              "organizationId": ids.org, "createOrganization": True, "folderId": ids.folder,
                              "createFolder": True, "documents": [{"documentId": ids.doc}]
                          })])
    _together(client, t, [("/v2/users/add", {"organizationId": ids.org, "users": [{"userId": ids.user}]}),
                          ("/v2/organizations/usergroups/add",
                           {"organizationId": ids.org, "organizationUserGroups": [{"groupId": ids.group}]})])
    return t


def _together(client: httpx.Client, t: Tenant, calls: list[tuple[str, dict[str, Any]]]) -> None:
    with ThreadPoolExecutor(len(calls)) as pool:
        for response in pool.map(lambda call: post(client, *call, t.headers), calls):
            result(response)


# --- the request table --------------------------------------------------------------------------------

Build = Callable[[Ids], dict[str, Any]]
Seed = Callable[[httpx.Client, Tenant, Ids], None]


class Case:
    """The requests of one operation, built from a namespace of ids: B sends each with A's ids, B' with the twins.

    A `seed` gives B (and B') data of its own beyond the skeleton, for a route that would otherwise stop early.
    """

    def __init__(self, *builds: Build, seed: Seed | None = None):
        self.builds, self.seed = builds, seed


def own_judgment(client: httpx.Client, t: Tenant, i: Ids) -> None:
    """A judged activity of B's own in its skeleton document: a search then runs the vector query in B's scope."""
    activity = review("b-review", "b-annotation", "b-user", "The price claim needs the original price.",
                      "comment_annotation.reject")
    result(post(client, "/v2/activities/add", _where(i, activities=[activity]), t.headers))


def _location(i: Ids) -> str:
    """The location of A's thread (`loc-<tag>`, the tag its annotation id ends with)."""
    return "loc-" + i.ann.partition("-")[2]


def _where(i: Ids, **more: Any) -> dict[str, Any]:
    return {"organizationId": i.org, "documentId": i.doc, **more}


def _notification(i: Ids, **more: Any) -> dict[str, Any]:
    return _where(i, notificationId=i.ntf, actionUser={"userId": i.user},
                  displayHeadlineMessageTemplate="{actionUser} hi", displayBodyMessage="b",
                  notifyUsers=[{"userId": i.user2}], **more)


def _grant(i: Ids, kind: str, ident: str) -> dict[str, Any]:
    return {"type": kind, "id": ident, "organizationId": i.org}


def _extract(i: Ids) -> dict[str, Any]:
    # A's very file (same bytes, same name): a cache shared across tenants would answer B from A's extraction.
    return {
        "fileBase64": base64.b64encode(checklist(i.tag)).decode(), "mimeType": "text/csv", "provider": "openai",
        "fileName": f"alpha-{i.tag}.csv"
    }


_RECORDING = {
    "recordingType": "screen", "mode": "floating", "displayName": "b", "recordedTime": {"duration": 1},
    "attachments": [{
        "url": "https://cdn.b.example/b.webm", "mimeType": "video/webm", "name": "b", "type": "video", "size": 1
    }]
}


def _COMMENT(i: Ids) -> dict[str, Any]:
    return {"commentText": "b", "from": {"userId": i.user}, "taggedUserContacts": [{"userId": i.user2}]}


# One entry per /v2 operation (the test checks this against the route table).
CASES: dict[str, Case] = {
    # Workspace auth: B's workspace credentials, A's API key in the body.
    "/v2/workspace/get": Case(lambda i: {}),
    "/v2/workspace/authtoken/reset": Case(lambda i: {"apiKey": i.api_key}),
    "/v2/workspace/authtokens/get": Case(lambda i: {"apiKey": i.api_key}),
    "/v2/workspace/apikey/create": Case(lambda i: {"ownerEmail": i.email, "type": "testing"}),
    "/v2/workspace/apikeys/get": Case(lambda i: {}),
    "/v2/workspace/apikey/update": Case(lambda i: {"apiKey": i.api_key, "apiKeyName": "B's name"}),
    "/v2/workspace/apikey/copy": Case(lambda i: {"sourceApiKey": i.api_key, "targetApiKey": i.api_key[::-1]}),
    "/v2/workspace/authtoken/ensure": Case(lambda i: {}),
    # Configuration of the caller's own API key: no ids to send, but nothing of A may change or show.
    "/v2/workspace/apikeyconfig/update": Case(lambda i: {"enableAdvancedQueries": True}),
    "/v2/workspace/apikeyconfig/get": Case(lambda i: {}),
    "/v2/workspace/advancedwebhookconfig/update": Case(lambda i: {"isEnabled": True, "encodeData": False}),
    "/v2/workspace/advancedwebhookconfig/get": Case(lambda i: {}),
    "/v2/workspace/activityconfig/update": Case(lambda i: {"activityServiceConfig": {"immutable": True}}),
    "/v2/workspace/activityconfig/get": Case(lambda i: {}),
    "/v2/workspace/notificationconfig/update": Case(lambda i: {"useNotificationService": True}),
    "/v2/workspace/notificationconfig/get": Case(lambda i: {}),
    "/v2/workspace/domains/add": Case(lambda i: {"domains": ["https://www.b.example.com"]}),
    "/v2/workspace/domains/delete": Case(lambda i: {"domains": ["b.example.com"]}),
    "/v2/workspace/domains/get": Case(lambda i: {}),
    "/v2/workspace/webhookconfig/update": Case(lambda i: {"useWebhookService": False}),
    "/v2/workspace/webhookconfig/get": Case(lambda i: {}),
    # Webhook endpoints and messages: by id and by uid.
    f"{HOOKS}/endpoints/create": Case(lambda i: {"url": "http://127.0.0.1:9/b", "uid": i.uid}),
    f"{HOOKS}/endpoints/get": Case(lambda i: {"limit": 1, "iterator": i.endpoints_iterator}),
    f"{HOOKS}/endpoints/update": Case(lambda i: {"endpointId": i.endpoint, "description": "b"},
                                      lambda i: {"endpointId": i.uid, "disabled": True}),
    f"{HOOKS}/endpoints/delete": Case(lambda i: {"endpointId": i.endpoint}, lambda i: {"endpointId": i.uid}),
    f"{HOOKS}/endpoints/secret/get": Case(lambda i: {"endpointId": i.endpoint}, lambda i: {"endpointId": i.uid}),
    f"{HOOKS}/endpoints/secret/rotate": Case(lambda i: {"endpointId": i.endpoint}, lambda i: {"endpointId": i.uid}),
    f"{HOOKS}/messages/get": Case(lambda i: {"endpointId": i.endpoint}, lambda i: {"endpointId": i.uid},
                                  lambda i: {"iterator": i.messages_iterator}, lambda i: {}),
    f"{HOOKS}/messages/retry": Case(lambda i: {"messageId": i.message, "endpointId": i.endpoint},
                                    lambda i: {"messageId": i.message, "endpointId": i.uid}),
    # Organizations: `org` is in B's skeleton, `org2` only in A.
    "/v2/organizations/add": Case(lambda i: {"organizations": [{"organizationId": i.org}, {"organizationId": i.org2}]}),
    "/v2/organizations/get": Case(lambda i: {"organizationIds": [i.org, i.org2]}, lambda i: {"pageToken": i.orgs_token},
                                  lambda i: {}),
    "/v2/organizations/update": Case(
        lambda i: {
            "organizations": [{"organizationId": i.org, "organizationName": "b"},
                              {"organizationId": i.org2, "organizationName": "b"}]
        }),
    "/v2/organizations/delete": Case(lambda i: {"organizationIds": [i.org, i.org2]}),
    "/v2/organizations/access/disablestate/update": Case(
        lambda i: {"organizationIds": [i.org, i.org2], "disabled": True}),
    # Documents, folders, migrations.
    "/v2/organizations/documents/add": Case(
        lambda i: {"organizationId": i.org, "folderId": i.subfolder, "documents": [{"documentId": i.doc2}]},
        lambda i: {"organizationId": i.org, "documents": [{"documentId": i.doc}, {"documentId": i.docn}]},
        lambda i: {"organizationId": i.org2, "documents": [{"documentId": i.doc}]}),
    "/v2/organizations/documents/get": Case(lambda i: {"organizationId": i.org, "documentIds": [i.doc, i.doc2, i.docn]},
                                            lambda i: {"organizationId": i.org, "folderId": i.subfolder},
                                            lambda i: {"organizationId": i.org2},
                                            lambda i: {"organizationId": i.org, "pageToken": i.docs_token}),
    "/v2/organizations/documents/update": Case(
        lambda i: {
            "organizationId": i.org, "documents": [{"documentId": i.doc, "documentName": "b"},
                                                   {"documentId": i.doc2, "documentName": "b"}]
        }, lambda i: {"organizationId": i.org, "documents": [{"documentId": i.doc, "folderId": i.subfolder}]}),
    "/v2/organizations/documents/delete": Case(
        lambda i: {"organizationId": i.org, "documentIds": [i.doc2, i.docn, i.doc]}),
    "/v2/organizations/documents/migrate": Case(
        lambda i: {"organizationId": i.org, "documentId": i.docm, "newDocumentId": i.doc2},
        lambda i: {"organizationId": i.org, "documentId": i.doc, "newDocumentId": i.docn}),
    "/v2/organizations/documents/migrate/status": Case(lambda i: {"organizationId": i.org, "migrationId": i.migration}),
    "/v2/organizations/folders/add": Case(
        lambda i: {
            "organizationId": i.org, "folders": [{"folderId": i.folder},
                                                 {"folderId": i.subfolder, "parentFolderId": i.folder}]
        }, lambda i: {"organizationId": i.org2, "folders": [{"folderId": i.folder}]}),
    "/v2/organizations/folders/get": Case(lambda i: {"organizationId": i.org, "folderId": i.subfolder},
                                          lambda i: {"organizationId": i.org}, lambda i: {"organizationId": i.org2},
                                          lambda i: {"organizationId": i.org, "rootFoldersOnly": True},
                                          lambda i: {"organizationId": i.org, "pageToken": i.folders_token}),
    "/v2/organizations/folders/update": Case(
        lambda i: {
            "organizationId": i.org, "folders": [{"folderId": i.subfolder, "folderName": "b"},
                                                 {"folderId": i.folder, "parentFolderId": i.subfolder}]
        }, lambda i: {"organizationId": i.org, "folders": [{"folderId": i.folder, "folderName": "b"}]}),
    "/v2/organizations/folders/delete": Case(lambda i: {"organizationId": i.org, "folderId": i.subfolder},
                                             lambda i: {"organizationId": i.org, "folderId": i.folder}),
    "/v2/organizations/documents/move": Case(
        lambda i: {"organizationId": i.org, "documentIds": [i.doc2, i.doc], "folderId": i.folder},
        lambda i: {"organizationId": i.org, "documentIds": [i.doc], "folderId": i.subfolder},
        lambda i: {"organizationId": i.org, "documentIds": [i.doc], "folderId": "root"}),
    "/v2/organizations/documents/count/get": Case(lambda i: {"organizationId": i.org},
                                                  lambda i: {"organizationId": i.org, "folderId": i.subfolder},
                                                  lambda i: {"organizationId": i.org2}),
    # Users and groups.
    "/v2/users/add": Case(lambda i: {"organizationId": i.org, "documentId": i.doc2, "users": [{"userId": i.user2}]},
                          lambda i: {"organizationId": i.org, "documentId": i.doc, "users": [{"userId": i.user2}]}),
    "/v2/users/update": Case(
        lambda i:
        {"organizationId": i.org, "users": [{"userId": i.user, "name": "b"}, {"userId": i.user2, "name": "b"}]}, lambda
        i: {"organizationId": i.org, "documentId": i.doc, "users": [{"userId": i.user2, "accessRole": "viewer"}]}),
    "/v2/users/get": Case(lambda i: {"organizationId": i.org, "userIds": [i.user, i.user2]},
                          lambda i: {"organizationId": i.org, "organizationUserGroupIds": [i.group]},
                          lambda i: {"organizationId": i.org, "documentId": i.doc},
                          lambda i: {"organizationId": i.org, "folderId": i.subfolder},
                          lambda i: {"organizationId": i.org, "allDocuments": True, "groupByDocumentId": True},
                          lambda i: {"organizationId": i.org, "pageToken": i.users_token}),
    "/v2/users/delete": Case(lambda i: {"organizationId": i.org, "documentId": i.doc, "userIds": [i.user2]},
                             lambda i: {"organizationId": i.org, "userIds": [i.user, i.user2]}),
    "/v2/users/data/delete": Case(lambda i: {"userIds": [i.user, i.user2], "organizationIds": [i.org]},
                                  lambda i: {"userIds": [i.user2, i.gone]}),
    "/v2/users/data/delete/status": Case(lambda i: {"jobId": i.job}),
    "/v2/users/data/get": Case(lambda i: {"userIds": [i.user, i.user2, i.gone]},
                               lambda i: {"userIds": [i.user], "organizationIds": [i.org, i.org2]},
                               lambda i: {"userIds": [i.user], "pageSize": 1, "pageToken": i.export_token}),
    "/v2/organizations/usergroups/add": Case(
        lambda i: {"organizationId": i.org, "organizationUserGroups": [{"groupId": i.group}]}),
    "/v2/organizations/usergroups/users/add": Case(
        lambda i: {"organizationId": i.org, "organizationUserGroupId": i.group, "userIds": [i.user, i.user2]}),
    "/v2/organizations/usergroups/users/delete": Case(
        lambda i: {"organizationId": i.org, "organizationUserGroupId": i.group, "userIds": [i.user2]},
        lambda i: {"organizationId": i.org, "organizationUserGroupId": i.group, "deleteAll": True}),
    "/v2/organizations/usergroups/get": Case(lambda i: {"organizationId": i.org}, lambda i: {"organizationId": i.org2}),
    "/v2/users/count/get": Case(lambda i: {"organizationId": i.org},
                                lambda i: {"organizationId": i.org, "allDocuments": True},
                                lambda i: {"organizationId": i.org, "documentId": i.doc, "userId": i.user2}),
    "/v2/users/doc/get": Case(
        lambda i: {"organizationId": i.org, "userIds": [i.user, i.user2], "includeInvolvedDocuments": True},
        lambda i: {"organizationId": i.org}),
    "/v2/users/invite/add": Case(
        lambda i: {"email": i.email, "organizationId": i.org, "type": "doc_user", "documentId": i.doc2},
        lambda i: {"email": i.email, "organizationId": i.org, "type": "doc_user", "documentId": i.doc}),
    "/v2/users/invite/get": Case(lambda i: {"organizationId": i.org},
                                 lambda i: {"organizationId": i.org, "email": i.email}),
    "/v2/users/invitations/get": Case(lambda i: {"organizationId": i.org, "email": i.email}),
    "/v2/users/invite/pending/count": Case(lambda i: {"organizationId": i.org, "type": "doc_user"}),
    "/v2/users/invite/respond": Case(
        lambda i: {
            "email": i.email, "organizationId": i.org, "status": "ACCEPTED", "type": "doc_user", "documentId": i.doc,
            "user": {"userId": i.user}
        }),
    # Permissions and user tokens.
    "/v2/auth/permissions/add": Case(
        lambda i: {"user": {"userId": i.user2}, "permissions": {"resources": [_grant(i, "document", i.doc)]}},
        lambda i: {"user": {"userId": i.user}, "permissions": {"resources": [_grant(i, "folder", i.subfolder)]}},
        lambda i: {
            "group": {"organizationId": i.org, "organizationUserGroupId": i.group},
            "permissions": {"resources": [_grant(i, "document", i.doc2)]}
        }),
    "/v2/auth/permissions/get": Case(
        lambda i: {
            "organizationId": i.org, "userIds": [i.user, i.user2], "documentIds": [i.doc, i.doc2],
            "folderIds": [i.folder, i.subfolder]
        }),
    "/v2/auth/permissions/remove": Case(
        lambda i: {"userId": i.user2, "permissions": {"resources": [_grant(i, "folder", i.subfolder)]}}, lambda i: {
            "group": {"organizationId": i.org, "organizationUserGroupId": i.group},
            "permissions": {"resources": [_grant(i, "document", i.doc2)]}
        }),
    "/v2/auth/generate_token": Case(
        lambda i: {"userId": i.user2, "permissions": {"resources": [_grant(i, "document", i.doc)]}}),
    "/v2/organizations/documents/access/update": Case(
        lambda i: {"organizationId": i.org, "documentIds": [i.doc, i.docn], "accessType": "public"}),
    "/v2/organizations/documents/access/disablestate/update": Case(
        lambda i: {"organizationId": i.org, "documentIds": [i.doc, i.docn], "disabled": True}),
    "/v2/workspace/permissionproviderconfig/get": Case(lambda i: {}),
    "/v2/workspace/permissionproviderconfig/update": Case(lambda i: {"usePermissionProvider": False}),
    "/v2/auth/generate_signature": Case(
        lambda i: {
            "permissions": [{
                "userId": i.user, "resourceId": i.doc, "type": "document", "organizationId": i.org, "hasAccess": True
            }]
        }),
    "/v2/organizations/folders/access/update": Case(
        lambda i: {"organizationId": i.org, "folderIds": [i.folder, i.subfolder], "accessType": "restricted"},
        lambda i: {"organizationId": i.org, "folderIds": [i.folder], "inheritFromParent": True}),
    "/v2/auth/token/get": Case(
        lambda i: {"userId": i.user2, "permissions": {"resources": [_grant(i, "document", i.doc)]}}),
    # They take no ids: each answers the caller's own public keys (`kid`, `x` derive from its own API key).
    "/v2/auth/tokenkeys/get": Case(lambda i: {}),
    "/v2/auth/tokenkeys/rotate": Case(lambda i: {}),
    # Notifications.
    "/v2/notifications/add": Case(lambda i: _notification(i), lambda i: _notification(i, organizationId=i.org2)),
    "/v2/notifications/get": Case(lambda i: _where(i, notificationIds=[i.ntf, i.ntf_generated]),
                                  lambda i: {"organizationId": i.org, "userId": i.user2},
                                  lambda i: _where(i, pageToken=i.ntfs_token)),
    "/v2/notifications/update": Case(
        lambda i: {
            "organizationId": i.org, "notifications": [{"id": i.ntf, "displayBodyMessage": "b"},
                                                       {"id": i.ntf_generated, "readByUserIds": [i.user2]}]
        }),
    "/v2/notifications/delete": Case(lambda i: {"organizationId": i.org, "notificationIds": [i.ntf, i.ntf_generated]},
                                     lambda i: _where(i)),
    "/v2/notifications/config/get": Case(
        lambda i: {"organizationId": i.org, "userId": i.user2, "documentIds": [i.doc], "getOrganizationConfig": True}),
    "/v2/notifications/config/set": Case(
        lambda i: {"organizationId": i.org, "userIds": [i.user2], "documentIds": [i.doc], "config": {"email": "NONE"}}),
    # They take no ids: each reads or changes the caller's own e-mail service and e-mails.
    "/v2/workspace/emailconfig/get": Case(lambda i: {}),
    "/v2/workspace/emailconfig/update": Case(lambda i: {"emailServiceConfig": {"fromCompany": "B"}}),
    "/v2/workspace/email/status": Case(lambda i: {"userId": i.user2}),
    # Activities and presence.
    "/v2/activities/add": Case(lambda i: _where(
        i, activities=
        [review(i.act, i.ann, i.user, "b", "comment.add"),
         review(i.act2, i.ann, i.user2, "b", "comment.add")])),
    "/v2/activities/update": Case(lambda i: {
        "organizationId": i.org, "activities": [{"id": i.act, "entityData": {"b": 1}},
                                                {"id": i.act2, "actionIcon": "b"}]
    }),
    "/v2/activities/get": Case(lambda i: _where(i, activityIds=[i.act, i.act2]),
                               lambda i: {"organizationId": i.org, "userId": i.user},
                               lambda i: {"organizationId": i.org, "targetEntityId": i.ann},
                               lambda i: {"organizationId": i.org, "pageToken": i.acts_token}),
    "/v2/activities/delete": Case(lambda i: {"organizationId": i.org, "activityIds": [i.act, i.act2]},
                                  lambda i: _where(i)),
    "/v2/presence/update": Case(lambda i: _where(i, users=[{"userId": i.user, "status": "away"}])),
    "/v2/presence/add": Case(lambda i: _where(i, users=[{"userId": i.user2}])),
    "/v2/presence/delete": Case(lambda i: _where(i, userIds=[i.user, i.user2])),
    "/v2/presence/get": Case(lambda i: _where(i)),
    # Recordings.
    "/v2/recordings/add": Case(lambda i: _where(i, recordings=[_RECORDING | {"annotationId": i.rec}])),
    "/v2/recordings/get": Case(lambda i: {"organizationId": i.org, "recordingIds": [i.rec, i.rec_generated]},
                               lambda i: _where(i), lambda i: {"organizationId": i.org, "pageToken": i.recs_token}),
    "/v2/recordings/delete": Case(lambda i: {"organizationId": i.org, "annotationIds": [i.rec, i.rec_generated]}),
    # CRDT editors.
    "/v2/crdt/add": Case(lambda i: _where(i, editorId=i.editor, type="text", data="b")),
    "/v2/crdt/get": Case(lambda i: _where(i), lambda i: _where(i, editorId=i.editor, format="yjs")),
    "/v2/crdt/update": Case(lambda i: _where(i, editorId=i.editor, data="b")),
    "/v2/crdt/delete": Case(lambda i: _where(i, editorIds=[i.editor]), lambda i: _where(i)),
    # Live state (realtime).
    "/v2/livestate/broadcast": Case(lambda i: _where(i, liveStateDataId=i.editor, data={"b": 1}, merge=True)),
    "/v2/livestate/get": Case(lambda i: _where(i), lambda i: _where(i, liveStateDataId=i.editor)),
    # AI: extraction (knowledge sources), judgments, Ask AI.
    "/v2/agents/extract": Case(_extract),
    # Prompt tools name no stored record: B's answers come from B's own key configuration (none: refused alike).
    "/v2/agents/prompt/enhance": Case(lambda i: {"prompt": f"Check the brand colours of {i.doc}"}),
    "/v2/agents/prompt/validate": Case(lambda i: {"prompt": f"Check the links of {i.doc}"}),
    "/v2/agents/prompt/refine": Case(
        lambda i: {
            "analysisPrompt": "## Objective\nFind broken links.", "demoFeedback": [{
                "demoId": i.agent, "demoTitle": "t", "demoHtml": "<a href='x'>x</a>", "demoExpected": "detected",
                "feedback": "missed"
            }]
        }),
    "/v2/agents/config/resolve": Case(lambda i: {"instructions": f"Check the headings of {i.doc}"}),
    # Review agents and agent groups: ids the service generated for A.
    "/v2/agents/create": Case(lambda i: _agent("b", metadata={"agentId": i.agent, "groupId": i.agent_group})),
    "/v2/agents/get": Case(lambda i: {"agentId": i.agent}, lambda i: {"groupId": i.agent_group},
                           lambda i: {"groupId": i.agent_group, "filter": "defaultOnly"}, lambda i: {},
                           lambda i: {"pageToken": i.agents_token}),
    "/v2/agents/update": Case(lambda i: {"agentId": i.agent, "name": "b", "enabled": False},
                              lambda i: {"agentId": i.agent2}),
    "/v2/agents/version/update": Case(lambda i: {"agentId": i.agent, "instructions": "b"},
                                      lambda i: {"agentId": i.agent2}),
    "/v2/agents/versions/list": Case(lambda i: {"agentId": i.agent},
                                     lambda i: {"agentId": i.agent, "pageToken": i.versions_token}),
    "/v2/agents/versions/restore": Case(lambda i: {"agentId": i.agent}),
    "/v2/agents/delete": Case(lambda i: {"agentId": i.agent}, lambda i: {"agentId": i.agent2}),
    "/v2/agents/groups/create": Case(lambda i: {"name": "b", "agentIds": [i.agent, i.agent2]},
                                     lambda i: {"name": "b", "metadata": {"groupId": i.agent_group}}),
    "/v2/agents/groups/get": Case(lambda i: {"groupId": i.agent_group}),
    "/v2/agents/groups/list": Case(lambda i: {}, lambda i: {"pageToken": i.agent_groups_token}),
    "/v2/agents/groups/update": Case(lambda i: {"groupId": i.agent_group, "name": "b"},
                                     lambda i: {"groupId": i.agent_group, "description": ""}),
    "/v2/agents/groups/delete": Case(lambda i: {"groupId": i.agent_group}),
    "/v2/agents/groups/add-agents": Case(lambda i: {"groupId": i.agent_group, "agentIds": [i.agent2]}),
    "/v2/agents/groups/remove-agents": Case(lambda i: {"groupId": i.agent_group, "agentIds": [i.agent, i.agent2]}),
    # Agent executions: ids the service generated for A (its agents, an execution of one on its documents).
    "/v2/agents/execution/run": Case(
        lambda i: {"agentId": i.agent, "url": "http://127.0.0.1:9/", "organizationId": i.org, "documentId": i.doc}),
    "/v2/agents/execution/get": Case(lambda i: {"executionId": i.execution, "includeResults": True}),
    "/v2/agents/execution/list": Case(lambda i: {"agentId": i.agent},
                                      lambda i: {"organizationId": i.org, "documentId": i.doc},
                                      lambda i: {"agentId": i.agent, "pageToken": i.executions_token}),
    "/v2/agents/execution/count": Case(lambda i: {"agentIds": [i.agent, i.agent2]}, lambda i: {"status": "error"}),
    "/v2/agents/analytics/get": Case(lambda i: {"agentId": i.agent}, lambda i: {}),
    "/v2/memory/search": Case(lambda i: _where(i, query="price claim"),
                              lambda i: {"query": "price claim", "scope": "apiKey"},
                              lambda i: {"query": "q", "organizationId": i.org, "filters": {"annotationId": i.ann}},
                              lambda i: {"query": "q", "recencyDays": 30, "filters": {"reviewerId": i.user}},
                              seed=own_judgment),
    # Memory insights: A's reviewers, and an alert of A's (isolation_cases._insights).
    "/v2/memory/stats/get": Case(lambda i: {}),
    "/v2/memory/patterns/get": Case(lambda i: {}),
    "/v2/memory/profiles/get": Case(lambda i: {"targetUserId": i.user}, lambda i: {"targetUserId": i.user2}),
    "/v2/memory/alerts/config/get": Case(lambda i: {}),
    "/v2/memory/alerts/config/update": Case(lambda i: {"config": {"maxAlertsPerWeek": 1}}),
    "/v2/memory/alerts/list": Case(lambda i: {}),
    "/v2/memory/alerts/action": Case(lambda i: {"alertId": i.alert}),
    "/v2/memory/alerts/dismiss": Case(lambda i: {"alertId": i.alert, "user": {"uid": i.user}}),
    "/v2/memory/judgments/query": Case(lambda i: {"organizationId": i.org, "annotationId": i.ann},
                                       lambda i: {"reviewerId": i.user}, lambda i: {"pageToken": i.judgments_token},
                                       lambda i: {}),
    "/v2/memory/ask": Case(lambda i: {"question": "price claim", "organizationId": i.org, "documentId": i.doc},
                           lambda i: {"question": "q", "organizationId": i.org, "filters": {"annotationId": i.ann}},
                           lambda i: {"question": "q", "recencyDays": 30, "filters": {"reviewerId": i.user}},
                           seed=own_judgment),
    "/v2/memory/suggest": Case(lambda i: {"query": "price claim", "organizationId": i.org, "documentId": i.doc},
                               lambda i: {"query": "price claim"}, seed=own_judgment),
    "/v2/memory/backfill/judgments": Case(lambda i: {}, lambda i: {"resumeFrom": i.act, "batchSize": 1}),
    # Knowledge sources: A's extraction file is one (`source`); B's answers come from B's own (none).
    "/v2/memory/knowledge/ingest": Case(
        lambda i: {"source": "fileRef", "fileRef": f"collab://uploads/{i.source}", "mimeType": "text/csv"}),
    "/v2/memory/knowledge/ingest-status": Case(lambda i: {"sourceId": i.source}),
    "/v2/memory/knowledge/list": Case(lambda i: {}),
    "/v2/memory/knowledge/search": Case(lambda i: {"query": "price claim", "sourceId": i.source, "includeRules": True},
                                        lambda i: {"query": "price claim"}),
    "/v2/memory/knowledge/rules": Case(lambda i: {"sourceId": i.source}),
    "/v2/memory/knowledge/update": Case(lambda i: {"sourceId": i.source, "newContent": "- Prices must include tax."}),
    "/v2/memory/knowledge/delete": Case(lambda i: {"sourceId": i.source}),
    "/v2/memory/knowledge/download": Case(lambda i: {"sourceId": i.source}),
    "/v2/memory/knowledge/upload-url": Case(
        lambda i: {"mimeType": "text/plain", "fileSize": 10, "organizationId": i.org, "documentId": i.doc}),
    # Comment threads.
    "/v2/commentannotations/add": Case(lambda i: _where(
        i, commentAnnotations=[{"annotationId": i.ann, "commentData": [_COMMENT(i)]}, {"commentData": [_COMMENT(i)]}])),
    "/v2/commentannotations/get": Case(
        lambda i: {"organizationId": i.org, "annotationIds": [i.ann]}, lambda i: _where(i, userId=i.user2),
        lambda i: {"organizationId": i.org, "mentionedUserIds": [i.user2], "groupByDocumentId": True},
        lambda i: {"organizationId": i.org, "pageToken": i.comments_token}),
    "/v2/commentannotations/update": Case(
        lambda i: _where(i, annotationIds=[i.ann], updatedData={"status": {"id": "resolved"}}),
        lambda i: _where(i, updateUsers=[{"from": {"userId": i.user}, "to": {"userId": i.user2}}])),
    "/v2/commentannotations/delete": Case(lambda i: _where(i, annotationIds=[i.ann]), lambda i: _where(i)),
    "/v2/organizations/documents/locations/update": Case(
        lambda i: _where(i, migrate={"oldLocation": {"id": _location(i)}, "newLocation": {"id": "moved"}}),
        lambda i: _where(i, migrate={"oldLocation": {"id": _location(i)}, "newLocation": {"name": "x"}}, merge=True)),
    "/v2/organizations/documents/locations/data/delete": Case(lambda i: _where(i, location={"id": _location(i)})),
    "/v2/commentannotations/count/get": Case(
        lambda i: {"organizationId": i.org, "userId": i.user2},
        lambda i: {"organizationId": i.org, "userId": i.user, "documentIds": [i.doc, i.doc2]}),
    "/v2/commentannotations/read/update": Case(lambda i: _where(i, userId=i.user2),
                                               lambda i: _where(i, userId=i.user, annotationIds=[i.ann])),
    "/v2/commentannotations/comments/add": Case(lambda i: _where(i, annotationId=i.ann, commentData=[_COMMENT(i)])),
    "/v2/commentannotations/comments/get": Case(lambda i: _where(i, annotationId=i.ann),
                                                lambda i: _where(i, annotationId=i.ann, commentIds=[1])),
    "/v2/commentannotations/comments/update": Case(
        lambda i: _where(i, annotationId=i.ann, commentIds=[1], updatedData={"commentText": "b"})),
    "/v2/commentannotations/comments/delete": Case(lambda i: _where(i, annotationId=i.ann, commentIds=[1])),
    "/v2/commentannotations/comments/reactions/add": Case(
        lambda i: _where(i, annotationId=i.ann, commentId=1, reaction="b", userId=i.user)),
    "/v2/commentannotations/comments/reactions/delete": Case(
        lambda i: _where(i, annotationId=i.ann, commentId=1, reaction="b", userId=i.user2)),
    "/v2/rewriter/ask-ai": Case(lambda i: {"model": "gpt-4o", "prompt": "p", "text": "t"})
}

# Operations with nothing to isolate, and why (the test checks that they are public).
NOTHING_TO_ISOLATE = {
    "/v2/workspace/create": "public: it takes no ids and reads no tenant's rows; it names only an owner e-mail, and "
    "the spec itself answers an e-mail that already owns workspaces differently "
    "(ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED)",
    "/v2/workspace/email/send-login-link": "public (Velt): it takes an e-mail address and reads no tenant's rows; "
    "it answers the same for every address and mails only an owner's"
}
