"""The permission provider (issue #37 item 3, ADR 0051) against a fake customer backend on 127.0.0.1: collab signs
what it asks, the backend's answer decides in place of the grants (allow, deny), and every failure denies (timeout,
an error status, a bad signature, a query left unanswered); decisions are reused for a while, then asked again.
The backend signs its answers as a customer's does, through `auth/generate_signature` (a key with an auth token
requires it; test_permission_provider_bounds.py tests the requirement)."""

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from velt_py.models.workspace import GetPermissionProviderConfigRequest, UpdatePermissionProviderConfigRequest

from support.helpers import error, issue_paths, new_tenant, post, result

PERMISSIONS = "/v2/auth/permissions/get"
TOKEN = "provider-secret-token"


class Backend:
    """A customer's permission endpoint: answers each query by `decide`, records what it was sent."""

    def __init__(self):
        self.seen: list[dict] = []
        self.decide = lambda query: {"hasAccess": True, "accessRole": "editor"}
        self.status = 200
        self.signature: str | None = None
        self.signer: tuple[str, dict[str, str]] | None = None  # (collab's URL, the key's headers): signs each answer
        self.release = threading.Event()
        self.hang = False
        backend = self

        class Handler(BaseHTTPRequestHandler):

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                backend.seen.append({"headers": dict(self.headers), "body": body})
                if backend.hang:
                    backend.release.wait(10)
                queries = json.loads(body)["data"]["requests"]
                results = [{
                    "userId": q["userId"], "resourceId": q["resource"]["id"], "type": q["resource"]["type"],
                    "organizationId": q["resource"]["organizationId"], **backend.decide(q)
                } for q in queries]
                answer: dict = {"data": results, "success": True}
                if backend.signature is not None:
                    answer["signature"] = backend.signature
                elif backend.signer is not None and results:
                    url, headers = backend.signer
                    signed = httpx.post(f"{url}/v2/auth/generate_signature", json={"data": {"permissions": results}},
                                        headers=headers, timeout=10)
                    answer["signature"] = signed.json()["result"]["data"]["signature"]
                raw = json.dumps(answer).encode()
                self.send_response(backend.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/check-permissions"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def backend():
    b = Backend()
    yield b
    b.close()


def _tenant_with_provider(client, sdk, backend):
    t = new_tenant(client)
    backend.signer = (str(client.base_url).rstrip("/"), t.headers)
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]}, t.headers))
    result(
        post(client, "/v2/organizations/documents/add", {"organizationId": "o1", "documents": [{"documentId": "d1"}]},
             t.headers))
    # ana holds an organization role: with the provider on, grants no longer decide.
    result(
        post(
            client, "/v2/auth/permissions/add", {
                "user": {"userId": "ana"}, "permissions": {
                    "resources": [{"type": "organization", "id": "o1", "organizationId": "o1", "accessRole": "editor"}]
                }
            }, t.headers))
    sdk(t).api.workspace.updatePermissionProviderConfig(
        UpdatePermissionProviderConfigRequest(
            usePermissionProvider=True,
            permissionProviderConfig={"permissionProviderUrl": backend.url, "authToken": TOKEN}))
    return t


def _document(client, t, user: str) -> dict:
    body = {"organizationId": "o1", "userIds": [user], "documentIds": ["d1"]}
    entry = result(post(client, PERMISSIONS, body, t.headers))[user]["documents"]["d1"]
    # Decided by the provider or not, an existing document's entry carries its type (d1 sets none, nor a folder).
    if entry.get("errorCode") != "does_not_exist":
        assert entry.pop("accessType") == "organizationPrivate"
    return entry


def test_the_configuration_through_velt_py(client, sdk, backend):
    t = new_tenant(client)
    api = sdk(t).api.workspace
    empty = api.getPermissionProviderConfig(GetPermissionProviderConfigRequest())["result"]["data"]
    assert empty == {
        "usePermissionProvider": False,
        "permissionProviderConfig": {"permissionProviderUrl": "", "authToken": "", "requireSignedAnswers": False}
    }
    api.updatePermissionProviderConfig(
        UpdatePermissionProviderConfigRequest(
            permissionProviderConfig={"permissionProviderUrl": backend.url, "authToken": TOKEN}))
    # The configuration merges: turning it on keeps the URL and token; the token only ever comes back masked.
    api.updatePermissionProviderConfig(UpdatePermissionProviderConfigRequest(usePermissionProvider=True))
    got = api.getPermissionProviderConfig(GetPermissionProviderConfigRequest())["result"]["data"]
    assert got == {
        "usePermissionProvider": True, "permissionProviderConfig": {
            "permissionProviderUrl": backend.url, "authToken": "****oken", "requireSignedAnswers": True
        }
    }
    update = "/v2/workspace/permissionproviderconfig/update"
    for body in ({"permissionProviderConfig": {"permissionProviderUrl": "ftp://example.com"}},
                 {"permissionProviderConfig": {"permissionProviderUrl": "not a url"}}):
        err = error(post(client, update, body, t.headers), "INVALID_ARGUMENT")
        assert err["message"].startswith("Please enter a valid URL")
        assert issue_paths(err) == [["permissionProviderConfig", "permissionProviderUrl"]]
    assert error(post(client, update, {}, t.headers), "INVALID_ARGUMENT")
    assert error(post(client, update, {"usePermissionProvider": "yes"}, t.headers), "INVALID_ARGUMENT")
    # Another tenant sees its own (empty) configuration, never this one's.
    other = new_tenant(client)
    assert result(post(client, "/v2/workspace/permissionproviderconfig/get", {},
                       other.headers))["usePermissionProvider"] is False


def test_the_provider_allows_and_denies_in_place_of_grants(client, sdk, backend):
    t = _tenant_with_provider(client, sdk, backend)
    backend.decide = lambda q: {"hasAccess": q["userId"] == "cy", "accessRole": "viewer"}
    assert _document(client, t, "cy") == {"accessRole": "viewer"}  # no grant at all, the provider allows
    assert _document(client, t, "ana")["errorCode"] == "permission_denied"  # a grant, the provider denies
    # What collab sent: Velt's query, the bearer token, and a signature of the body under it.
    sent = backend.seen[0]
    queries = json.loads(sent["body"])["data"]["requests"]
    assert {(q["userId"], q["resource"]["type"], q["resource"]["id"])
            for q in queries} == {("cy", "organization", "o1"), ("cy", "document", "d1")}
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert headers["authorization"] == f"Bearer {TOKEN}"
    signed = headers["x-collab-timestamp"].encode() + b"." + sent["body"]
    assert headers["x-collab-signature"] == "v1=" + hmac.new(TOKEN.encode(), signed, hashlib.sha256).hexdigest()
    # The provider's viewer may not write a comment that verifies permissions; its editor may.
    add = {
        "organizationId": "o1", "documentId": "d1", "verifyUserPermissions": True,
        "commentAnnotations": [{"commentData": [{"commentText": "hi", "from": {"userId": "dan"}}]}]
    }
    backend.decide = lambda q: {"hasAccess": True, "accessRole": "viewer" if q["userId"] == "cy" else "editor"}
    assert post(client, "/v2/commentannotations/add", add, t.headers).status_code == 200
    add["commentAnnotations"][0]["commentData"][0]["from"]["userId"] = "cy"
    assert error(post(client, "/v2/commentannotations/add", add, t.headers), "PERMISSION_DENIED")


def test_every_failure_denies(client, sdk, backend, tune):
    t = _tenant_with_provider(client, sdk, backend)
    # Each failure asked for (a failed provider is otherwise left alone a few seconds: the bounds' tests).
    tune(permission_provider_timeout_s=0.5, permission_provider_failure_s=0)
    backend.hang = True  # no answer in time
    assert _document(client, t, "u1")["errorCode"] == "permission_denied"
    backend.hang = False
    backend.release.set()
    backend.status = 500
    assert _document(client, t, "u2")["errorCode"] == "permission_denied"
    backend.status = 200
    backend.signature = "00" * 16  # a signature that is not ours
    assert _document(client, t, "u3")["errorCode"] == "permission_denied"
    backend.decide = lambda q: {"hasAccess": True, "accessRole": "editor", "userId": "someone-else"}
    backend.signature = None  # every query left unanswered (answers about someone else are not trusted)
    assert _document(client, t, "u4")["errorCode"] == "permission_denied"
    # A failure is no decision to reuse: the provider's next good answer counts (at once, with no failure window).
    backend.decide = lambda q: {"hasAccess": True, "accessRole": "editor"}
    assert _document(client, t, "u1") == {"accessRole": "editor"}


def test_a_signed_answer_verifies(client, sdk, backend):
    t = _tenant_with_provider(client, sdk, backend)
    expected = [{
        "userId": "u1", "resourceId": "o1", "type": "organization", "organizationId": "o1", "hasAccess": True,
        "accessRole": "editor"
    }, {
        "userId": "u1", "resourceId": "d1", "type": "document", "organizationId": "o1", "hasAccess": True,
        "accessRole": "editor"
    }]
    signed = result(post(client, "/v2/auth/generate_signature", {"permissions": expected}, t.headers))["signature"]
    backend.signature = signed
    assert _document(client, t, "u1") == {"accessRole": "editor"}
    # Another tenant's signature over the same decisions does not verify for this one.
    other = new_tenant(client)
    backend.signature = result(post(client, "/v2/auth/generate_signature", {"permissions": expected},
                                    other.headers))["signature"]
    backend.seen.clear()
    assert _document(client, t, "u1") == {"accessRole": "editor"}  # reused: the backend was not asked
    assert backend.seen == []


def test_decisions_are_reused_until_their_time_is_up(client, sdk, backend, clock, tune):
    t = _tenant_with_provider(client, sdk, backend)
    tune(permission_provider_cache_s=60)
    assert _document(client, t, "u1") == {"accessRole": "editor"}
    asked = len(backend.seen)
    backend.decide = lambda q: {"hasAccess": False}
    assert _document(client, t, "u1") == {"accessRole": "editor"}  # reused
    assert len(backend.seen) == asked
    clock["now"] += 61
    assert _document(client, t, "u1")["errorCode"] == "permission_denied"  # asked again: revoked
    # The answer's own expiresAt shortens the reuse; one already past grants nothing.
    now_ms = int(clock["now"] * 1000)
    backend.decide = lambda q: {"hasAccess": True, "accessRole": "editor", "expiresAt": now_ms + 5_000}
    assert _document(client, t, "u2") == {"accessRole": "editor", "expiresAt": (now_ms + 5_000) // 1000}
    backend.decide = lambda q: {"hasAccess": True, "accessRole": "editor", "expiresAt": now_ms - 1}
    clock["now"] += 6
    assert _document(client, t, "u2")["errorCode"] == "permission_denied"
    # Turning the provider off gives the grants back their say.
    result(post(client, "/v2/workspace/permissionproviderconfig/update", {"usePermissionProvider": False}, t.headers))
    assert _document(client, t, "ana") == {"accessRole": "editor"}
