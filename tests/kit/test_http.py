"""Middleware and handlers (kit/http.py): size limits, the envelope for unknown routes and methods, request
ids, probes and offline docs."""

import logging
import socket

from collab.kit.redisclient import redis_client
from support.helpers import error, new_tenant, post

ACTIVITY_GET = "/v2/workspace/activityconfig/get"


def test_declared_oversize_body_is_refused_with_413(client):
    size = 8 * 1024 * 1024 + 1
    response = client.post("/v2/workspace/create", content=b"{" + b" " * (size - 2) + b"}",
                           headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_chunked_oversize_body_is_refused_with_413(client):

    def chunks():
        yield b'{"data": {"ownerEmail": "'
        for _ in range(9):
            yield b"a" * (1024 * 1024)
        yield b'@x.io"}}'

    response = client.post("/v2/workspace/create", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_oversize_refused_before_read_whole(live):
    """The server answers 413 from the declared length without waiting for the body."""
    host, port = live.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v2/workspace/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000000\r\n\r\n{")
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 413")


def test_unknown_route_and_wrong_method_use_the_envelope(client):
    err = error(client.post("/v2/nope", json={"data": {}}), "NOT_FOUND")
    assert err["message"]
    response = client.get("/v2/workspace/get")
    assert response.status_code == 405
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_request_id_is_returned_and_logged(client, caplog):
    tenant = new_tenant(client)
    with caplog.at_level(logging.INFO, logger="collab.access"):
        response = post(client, ACTIVITY_GET, {}, {**tenant.headers, "x-request-id": "req-abc-123"})
    assert response.headers["x-request-id"] == "req-abc-123"
    generated = post(client, ACTIVITY_GET, {}, tenant.headers).headers["x-request-id"]
    assert len(generated) >= 16
    forged = post(client, ACTIVITY_GET, {}, {**tenant.headers, "x-request-id": "a b\tc"}).headers["x-request-id"]
    assert forged != "a b\tc" and len(forged) == 32
    from collab.logging import JsonFormatter

    lines = [JsonFormatter().format(r) for r in caplog.records if "activityconfig/get" in r.getMessage()]
    assert any('"request_id": "req-abc-123"' in line and '"status": 200' in line for line in lines)


def test_healthz_and_readyz(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert {k: body[k]
            for k in ("status", "checks")} == {"status": "ready", "checks": {"postgres": "ok", "redis": "ok"}}
    assert set(body["loop"]) == {"lagMs", "maxLagMs", "stalls"}


def test_readyz_503_when_redis_is_down(client, live, tmp_path):
    original = live.svc.redis
    live.svc.redis = redis_client(f"unix://{tmp_path}/nothing.sock")
    try:
        response = client.get("/readyz")
    finally:
        live.svc.redis = original
    assert response.status_code == 503
    body = response.json()["error"]
    assert body["status"] == "UNAVAILABLE"
    assert body["details"]["checks"]["postgres"] == "ok"
    assert body["details"]["checks"]["redis"].startswith("error")


def test_docs_work_offline(client):
    page = client.get("/docs")
    assert page.status_code == 200
    assert "cdn" not in page.text.lower() and "/static-docs/swagger-ui-bundle.js" in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js"):
        assert client.get(f"/static-docs/{asset}").status_code == 200
    spec = client.get("/openapi.json").json()
    assert "/v2/workspace/create" in spec["paths"]
    schema = spec["paths"]["/v2/workspace/create"]["post"]["requestBody"]
    assert schema["required"] is True
    assert client.get("/redoc").status_code == 200


def test_other_methods_on_an_operation_use_the_envelope(client):
    for method in ("OPTIONS", "PUT", "DELETE"):
        response = client.request(method, "/v2/workspace/create")
        assert response.status_code == 405
        assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_body_size_limit_is_413_in_the_envelope(client, live):
    t = new_tenant(client)
    limit = live.settings.max_body_bytes
    padding = "x" * (limit - 100)
    err = error(client.post("/v2/organizations/get", json={"data": {}, "p": padding + "x" * 200}, headers=t.headers),
                "INVALID_ARGUMENT", 413)
    assert err["details"]["issues"][0]["code"] == "too_big"
