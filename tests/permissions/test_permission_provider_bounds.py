"""The permission provider's bounds (ADR 0051, "Bounds"), from outside the process, against customer backends on
127.0.0.1: one that never answers pins no database connection (another tenant's reads keep answering), a call waits
one time budget whatever its number of batches, the decisions one call asks for are capped, requests in flight per
key are limited, a failed provider is left alone for a few seconds, an answer outside the contract denies (never a
5xx), and a key with an auth token takes signed answers only."""

import base64
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from support.helpers import error, issue_paths, new_tenant, post, result

PERMISSIONS = "/v2/auth/permissions/get"
CONFIG = "/v2/workspace/permissionproviderconfig/update"


class Backend:
    """A customer's permission endpoint: grants what it is asked (signed through collab when `signer` is set), or
    answers `raw`, or a `status`, or never answers (`hang`, until the test ends); counts the requests it got."""

    def __init__(self):
        self.requests = 0
        self.got = threading.Condition()
        self.hang = False
        self.status = 200
        self.raw: bytes | None = None
        self.signer: tuple[str, dict[str, str]] | None = None
        self.released = threading.Event()
        backend = self

        class Handler(BaseHTTPRequestHandler):

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                with backend.got:
                    backend.requests += 1
                    backend.got.notify_all()
                if backend.hang:
                    backend.released.wait(60)
                    return
                raw = backend.raw if backend.raw is not None else backend.grant(json.loads(body))
                self.send_response(backend.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/check"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def grant(self, asked: dict) -> bytes:
        results = [{
            "userId": q["userId"], "resourceId": q["resource"]["id"], "type": q["resource"]["type"],
            "organizationId": q["resource"]["organizationId"], "hasAccess": True, "accessRole": "editor"
        } for q in asked["data"]["requests"]]
        answer: dict = {"data": results}
        if self.signer is not None:
            url, headers = self.signer
            signed = httpx.post(f"{url}/v2/auth/generate_signature", json={"data": {"permissions": results}},
                                headers=headers, timeout=10)
            answer["signature"] = signed.json()["result"]["data"]["signature"]
        return json.dumps(answer).encode()

    def wait_for(self, count: int) -> None:
        with self.got:
            assert self.got.wait_for(lambda: self.requests >= count, timeout=30), self.requests

    def close(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def backend():
    b = Backend()
    yield b
    b.close()


def _tenant(client, backend, *, documents: int = 1, token: str | None = None, **config):
    t = new_tenant(client)
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "o1"}]}, t.headers))
    docs = [{"documentId": f"d{i}"} for i in range(1, documents + 1)]
    result(post(client, "/v2/organizations/documents/add", {"organizationId": "o1", "documents": docs}, t.headers))
    settings: dict = {"permissionProviderUrl": backend.url, **config}
    if token is not None:
        settings["authToken"] = token
    result(post(client, CONFIG, {"usePermissionProvider": True, "permissionProviderConfig": settings}, t.headers))
    return t


def _document(client, t, user: str, document: str = "d1") -> dict:
    body = {"organizationId": "o1", "userIds": [user], "documentIds": [document]}
    entry = result(post(client, PERMISSIONS, body, t.headers))[user]["documents"][document]
    # Decided by the provider or not, an existing document's entry carries its type (d1 sets none, nor a folder).
    if entry.get("errorCode") != "does_not_exist":
        assert entry.pop("accessType") == "organizationPrivate"
    return entry


def test_a_provider_that_never_answers_pins_no_database_connection(client, live, backend, tune):
    # Each of A's calls waits 6 s on its provider: longer than a request waits for a pooled connection (5 s), so a
    # call that held one meanwhile would starve B. 14 calls are more than the pool's 10 connections.
    tune(permission_provider_timeout_s=6)
    a = _tenant(client, backend)
    b = new_tenant(client)
    result(post(client, "/v2/organizations/add", {"organizations": [{"organizationId": "mine"}]}, b.headers))
    # One answered call first: a process's first request out imports the HTTP client's connection code, once.
    assert _document(client, a, "warm") == {"accessRole": "editor"}
    asked = backend.requests
    backend.hang = True

    def ask_as_a(i):
        started = time.monotonic()
        with httpx.Client(base_url=live.url, timeout=60) as own:
            response = post(own, PERMISSIONS, {"organizationId": "o1", "userIds": [f"u{i}"], "documentIds": ["d1"]},
                            a.headers)
        return response, time.monotonic() - started

    with ThreadPoolExecutor(14) as pool:
        calls = [pool.submit(ask_as_a, i) for i in range(14)]
        backend.wait_for(asked + 4)  # A's calls are waiting on the provider now
        for _ in range(3):
            started = time.monotonic()
            response = post(client, "/v2/organizations/get", {}, b.headers)
            assert response.status_code == 200, response.text
            assert time.monotonic() - started < 2.5  # no wait for a connection A holds (a 503 came after 5 s)
        answers = [c.result() for c in calls]
    for response, took in answers:
        assert response.status_code == 200, response.text
        assert all(user["documents"]["d1"]["errorCode"] == "permission_denied"
                   for user in response.json()["result"]["data"].values())
        assert took < 6 + 5  # the call's one budget, with room for a loaded machine
    # At most COLLAB_PERMISSION_PROVIDER_IN_FLIGHT (4) of A's requests reached the provider at once; the others waited
    # for a slot within their budget, then denied; the failure then kept later calls from asking.
    assert backend.requests - asked <= 4


def test_one_time_budget_covers_every_batch(client, backend, tune):
    # 30 users × (the organization + 100 documents) = 3,030 decisions: 7 requests of 500 at most.
    tune(permission_provider_timeout_s=1, permission_provider_max_decisions=10_000)
    t = _tenant(client, backend, documents=100)
    backend.hang = True
    body = {
        "organizationId": "o1", "userIds": [f"u{i}" for i in range(30)],
        "documentIds": [f"d{i}" for i in range(1, 101)]
    }
    started = time.monotonic()
    answer = result(post(client, PERMISSIONS, body, t.headers))
    assert time.monotonic() - started < 4  # one budget of 1 s in all (each batch in turn was 7 s)
    assert {e["errorCode"] for user in answer.values() for e in user["documents"].values()} == {"permission_denied"}


def test_the_decisions_one_call_asks_for_are_capped(client, backend):
    t = _tenant(client, backend, documents=100)
    body = {
        "organizationId": "o1", "userIds": [f"u{i}" for i in range(30)],
        "documentIds": [f"d{i}" for i in range(1, 101)]
    }
    err = error(post(client, PERMISSIONS, body, t.headers), "INVALID_ARGUMENT")
    assert "at most 1000 decisions" in err["message"] and "3030" in err["message"]
    assert issue_paths(err) == [["userIds"], ["documentIds"]]
    assert backend.requests == 0  # refused before anything was asked
    body["userIds"] = body["userIds"][:9]  # 9 × 101 = 909 decisions: asked, and granted
    assert result(
        post(client, PERMISSIONS, body,
             t.headers))["u8"]["documents"]["d100"] == {"accessRole": "editor", "accessType": "organizationPrivate"}
    # Without a provider, grants decide and nothing is capped.
    result(post(client, CONFIG, {"usePermissionProvider": False}, t.headers))
    body["userIds"] = [f"u{i}" for i in range(30)]
    assert result(post(client, PERMISSIONS, body, t.headers))["u29"]["documents"]["d1"]["errorCode"]


def test_a_failed_provider_is_not_asked_again_for_a_while(client, backend, clock, tune):
    tune(permission_provider_failure_s=5)
    t = _tenant(client, backend)
    backend.status = 500
    assert _document(client, t, "u1")["errorCode"] == "permission_denied"
    assert backend.requests == 1
    backend.status = 200  # it recovers, but within the window nobody asks it
    assert _document(client, t, "u2")["errorCode"] == "permission_denied"
    assert _document(client, t, "u3")["errorCode"] == "permission_denied"
    assert backend.requests == 1
    clock["now"] += 6
    assert _document(client, t, "u4") == {"accessRole": "editor"}
    assert backend.requests == 2


_RESULT = '{"userId":"u1","type":"document","resourceId":"d1","organizationId":"o1","hasAccess":true}'
OUTSIDE_THE_CONTRACT = {
    "list userId": '{"data":[{"userId":[1],"type":"document","resourceId":"d1","organizationId":"o1",'
    '"hasAccess":true}]}',
    "object userId": '{"data":[{"userId":{"id":"u1"},"type":"document","resourceId":"d1","organizationId":"o1",'
    '"hasAccess":true}]}',
    "object type": '{"data":[{"userId":"u1","type":{"a":1},"resourceId":"d1","organizationId":"o1","hasAccess":true}]}',
    "list resourceId": '{"data":[{"userId":"u1","type":"document","resourceId":["d1"],"organizationId":"o1",'
    '"hasAccess":true}]}',
    "object organizationId": '{"data":[{"userId":"u1","type":"document","resourceId":"d1","organizationId":{},'
    '"hasAccess":true}]}',
    "deep brackets": "[" * 100_000,
    "deep data": '{"data": [' * 5_000 + "]}" * 5_000,
    "string hasAccess": _RESULT.replace("true", '"true"'),
    "unknown accessRole": _RESULT.replace("}", ',"accessRole":"owner"}'),
    "string expiresAt": _RESULT.replace("}", ',"expiresAt":"tomorrow"}'),
    "a result that is a list": '{"data":[[1,2]]}',
    "signature not a string": '{"data":[' + _RESULT + '],"signature":[1]}',
    "not JSON": "grant everything",
}


@pytest.mark.parametrize("raw", OUTSIDE_THE_CONTRACT.values(), ids=OUTSIDE_THE_CONTRACT.keys())
def test_an_answer_outside_the_contract_denies(client, backend, tune, raw):
    tune(permission_provider_failure_s=0)
    t = _tenant(client, backend)  # no auth token: unsigned answers are taken, so only the shape decides
    backend.raw = raw.encode()
    assert _document(client, t, "u1")["errorCode"] == "permission_denied"
    token = result(
        post(client, "/v2/auth/generate_token",
             {"userId": "u1", "permissions": {"resources": [{"type": "document", "id": "d1", "organizationId": "o1"}]}},
             t.headers))["token"]
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["permissions"]["resources"] == []  # the provider denied: the token carries nothing
    backend.raw = None  # the same provider, answering in the contract, grants
    assert _document(client, t, "u2") == {"accessRole": "editor"}


def test_a_key_with_an_auth_token_takes_signed_answers_only(client, backend, tune):
    tune(permission_provider_failure_s=0)
    t = _tenant(client, backend, token="provider-secret-token")
    assert _document(client, t, "u1")["errorCode"] == "permission_denied"  # an unsigned grant
    shown = result(post(client, "/v2/workspace/permissionproviderconfig/get", {}, t.headers))
    assert shown["permissionProviderConfig"]["requireSignedAnswers"] is True  # the default with a token
    backend.signer = (str(client.base_url).rstrip("/"), t.headers)  # signed through auth/generate_signature
    assert _document(client, t, "u2") == {"accessRole": "editor"}
    # The key may turn the requirement off; the token stays.
    backend.signer = None
    changed = result(post(client, CONFIG, {"permissionProviderConfig": {"requireSignedAnswers": False}}, t.headers))
    assert changed["permissionProviderConfig"] == {
        "permissionProviderUrl": backend.url, "authToken": "****oken", "requireSignedAnswers": False
    }
    assert _document(client, t, "u3") == {"accessRole": "editor"}
    # Without a token, unsigned answers are taken by default; a key may still require signatures.
    other = _tenant(client, backend)
    assert _document(client, other, "u1") == {"accessRole": "editor"}
    result(post(client, CONFIG, {"permissionProviderConfig": {"requireSignedAnswers": True}}, other.headers))
    assert _document(client, other, "u2")["errorCode"] == "permission_denied"
