"""Operation dispatch (kit/routing.py): the API's routes found by one lookup, answering as FastAPI's loop does."""

from fastapi.routing import APIRoute

from support.helpers import new_tenant, post, result


def test_every_operation_is_in_the_table_under_both_prefixes(live):
    table = live.app.state.operations
    documented = {path for path, item in live.app.openapi()["paths"].items() if "post" in item}
    assert documented and documented <= {path for method, path in table if method == "POST"}
    assert {p.replace("/v2/", "/v1/", 1) for p in documented if p.startswith("/v2/")} <= {p for _, p in table}
    # The app's own routes, no included routers in between: the route a request reaches is the one declared.
    route = table[("POST", "/v2/organizations/get")]
    assert isinstance(route, APIRoute) and route.path == "/v2/organizations/get"
    assert table[("POST", "/v1/organizations/get")].endpoint is route.endpoint


def test_a_found_route_answers_every_kind_of_request_as_fastapis_loop_does(client):
    t = new_tenant(client)
    body = {"organizations": [{"organizationId": "o1", "organizationName": "One"}]}
    assert post(client, "/v2/organizations/add", body, t.headers).status_code == 200
    answers = [
        post(client, path, {"organizationIds": ["o1"]}, t.headers)
        for path in ("/v2/organizations/get", "/v1/organizations/get")
    ]
    assert [a.status_code for a in answers] == [200, 200] and answers[0].json() == answers[1].json()
    [org] = result(answers[0])
    assert org["organizationId"] == "o1" and org["organizationName"] == "One"
    path = "/v2/organizations/get"
    unauthenticated = post(client, path, {"organizationIds": ["o1"]}, {})
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error"]["status"] == "UNAUTHENTICATED"
    broken = client.post(path, content=b'{"data": ', headers={**t.headers, "content-type": "application/json"})
    assert broken.status_code == 400 and broken.json()["error"]["details"]["issues"][0]["code"] == "invalid_json"
    # Another label goes to FastAPI's own handler of the route, read as JSON all the same.
    labelled = client.post(path, content=b'{"data": {"organizationIds": ["o1"]}}',
                           headers={**t.headers, "content-type": "text/plain"})
    assert labelled.status_code == 200 and labelled.json()["result"]["data"] == [org]


def test_what_the_table_does_not_hold_goes_to_fastapis_router(client):
    t = new_tenant(client)
    assert client.get("/v2/organizations/get", headers=t.headers).status_code == 405  # another method
    assert post(client, "/v2/organizations/nope", {}, t.headers).status_code == 404  # a made-up path
    bad = post(client, "/v2/organizations/get", {"organizationIds": "o1"}, t.headers)
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert client.get("/healthz").status_code == 200
    assert client.get("/static-docs/swagger-ui.css").status_code == 200  # a mount, a path with parameters
    assert client.get("/static-docs/nope.css").status_code == 404
    assert client.get("/openapi.json").json()["paths"]["/v2/organizations/get"]["post"]["summary"]
