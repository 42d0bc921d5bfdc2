"""The wire envelope for malformed requests, size limits, routing, probes, docs and request ids."""

import logging
import socket

import pytest

from collab.kit.redisclient import redis_client
from helpers import error, new_tenant, post, result

ACTIVITY_GET = "/v2/workspace/activityconfig/get"


@pytest.mark.parametrize(
    "content, headers",
    [
        (b"{not json", {"content-type": "application/json"}),
        (b"", {"content-type": "application/json"}),
        (b"\xff\xfe\x00", {"content-type": "application/json"}),
        (b'{"data": {"ownerEmail": "a@b.io"}', {}),
    ],
)
def test_malformed_json_is_invalid_argument(client, content, headers):
    err = error(client.post("/v2/workspace/create", content=content, headers=headers), "INVALID_ARGUMENT")
    assert err["details"]["issues"]


@pytest.mark.parametrize("body", [[], "data", 5, None, {"datum": {}}, {"data": []}, {"data": "x"}, {"data": None}])
def test_body_must_be_object_with_data_object(client, body):
    tenant = new_tenant(client)
    err = error(client.post(ACTIVITY_GET, json=body, headers=tenant.headers), "INVALID_ARGUMENT")
    for entry in err["details"]["issues"]:
        assert set(entry) == {"code", "path", "message"}
        assert all(isinstance(p, str) for p in entry["path"])


def test_json_without_content_type_is_accepted(client):
    tenant = new_tenant(client)
    response = client.post(ACTIVITY_GET, content=b'{"data": {}}', headers={**tenant.headers, "content-type": "text/plain"})
    result(response)


def test_nested_paths_are_relative_to_data(client):
    tenant = new_tenant(client)
    body = {"notificationServiceConfig": {"batchConfig": {"user": {"maxActivities": "many"}}}}
    err = error(post(client, "/v2/workspace/notificationconfig/update", body, tenant.headers), "INVALID_ARGUMENT")
    assert err["details"]["issues"] == [
        {
            "code": "invalid_type",
            "path": ["notificationServiceConfig", "batchConfig", "user", "maxActivities"],
            "message": err["details"]["issues"][0]["message"],
        }
    ]


def test_declared_oversize_body_is_refused_with_413(client):
    size = 8 * 1024 * 1024 + 1
    response = client.post(
        "/v2/workspace/create", content=b"{" + b" " * (size - 2) + b"}", headers={"content-type": "application/json"}
    )
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
        sock.sendall(
            b"POST /v2/workspace/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000000\r\n\r\n{"
        )
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
    assert ready.json() == {"status": "ready", "checks": {"postgres": "ok", "redis": "ok"}}


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


@pytest.mark.parametrize(
    "path, body",
    [
        (
            "/v2/activities/add",
            '{"data":{"organizationId":"o","documentId":"d","activities":[{"featureType":"comment",'
            '"actionType":"comment.add","actionUser":{"userId":"u"},"entityData":{"x":NaN}}]}}',
        ),
        ("/v2/memory/search", '{"data":{"query":"x","filters":{"dateRange":{"start":Infinity}}}}'),
        ("/v2/memory/search", '{"data":{"query":"x","filters":{"dateRange":{"start":1e300}}}}'),
        ("/v2/workspace/activityconfig/update", '{"data":{"activityServiceConfig":{"enabledTime":-Infinity}}}'),
    ],
)
def test_non_finite_numbers_are_invalid_not_500(client, path, body):
    tenant = new_tenant(client)
    response = client.post(path, content=body, headers={**tenant.headers, "content-type": "application/json"})
    error(response, "INVALID_ARGUMENT")


def test_nul_characters_are_stripped_before_storage(client, db):
    tenant = new_tenant(client)
    result(post(client, "/v2/workspace/activityconfig/update", {"activityServiceConfig": {"isEnabled": True}}, tenant.headers))
    body = (
        '{"data":{"organizationId":"o\\u0000rg","documentId":"d","activities":[{"id":"a1","featureType":"comment",'
        '"actionType":"comment.add","actionUser":{"userId":"u","name":"A\\u0000na"},'
        '"entityData":{"comm\\u0000entText":"x\\u0000y"},"displayMessageTemplate":"t\\u0000"}]}}'
    )
    response = client.post("/v2/activities/add", content=body, headers={**tenant.headers, "content-type": "application/json"})
    result(response)
    row = db.execute("select * from activities where api_key_id = %s", (tenant.api_key,)).fetchone()
    assert row["organization_id"] == "org" and row["action_user"]["name"] == "Ana"
    assert row["entity_data"] == {"commentText": "xy"} and row["display_message_template"] == "t"


def test_every_operation_route_parses_json_strictly():
    from collab.api import ROUTERS
    from collab.kit.envelope import StrictJsonRoute

    from fastapi.routing import APIWebSocketRoute

    routes = [route for router in ROUTERS for route in router.routes if not isinstance(route, APIWebSocketRoute)]
    assert len(routes) >= 20 and all(isinstance(route, StrictJsonRoute) for route in routes)
