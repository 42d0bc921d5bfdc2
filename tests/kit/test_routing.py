"""Route lookup by path (kit/routing.py): the same answers as FastAPI's loop, and only static paths kept."""

from helpers import new_tenant, post, result


def test_a_path_seen_before_goes_to_the_same_route(client, live):
    t = new_tenant(client)
    known = live.app.state.known_routes
    body = {"organizations": [{"organizationId": "o1", "organizationName": "One"}]}
    assert post(client, "/v2/organizations/add", body, t.headers).status_code == 200
    assert ("POST", "/v2/organizations/add") in known
    # The first read finds its route by FastAPI's loop, the next ones through the lookup: the same answers.
    answers = [post(client, path, {"organizationIds": ["o1"]}, t.headers)
               for path in ("/v2/organizations/get", "/v2/organizations/get", "/v1/organizations/get")]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].json() == answers[1].json() == answers[2].json()
    [org] = result(answers[1])
    assert org["organizationId"] == "o1" and org["organizationName"] == "One"
    # Once a path has been answered, later requests go to the handler FastAPI built for its route, no matching.
    leaves = live.app.state.route_leaves
    assert leaves[("POST", "/v2/organizations/get")].route.path == "/organizations/get"
    assert ("POST", "/v1/organizations/get") in leaves  # each prefix's own inclusion


def test_a_remembered_route_answers_every_kind_of_request_as_fastapis_loop_does(client, live):
    t = new_tenant(client)
    path = "/v2/organizations/get"
    for _ in range(3):  # the loop, then the remembered route
        assert result(post(client, path, {"organizationIds": ["o1"]}, t.headers)) == []
        unauthenticated = post(client, path, {"organizationIds": ["o1"]}, {})
        assert unauthenticated.status_code == 401 and unauthenticated.json()["error"]["status"] == "UNAUTHENTICATED"
        broken = client.post(path, content=b'{"data": ', headers={**t.headers, "content-type": "application/json"})
        assert broken.status_code == 400 and broken.json()["error"]["details"]["issues"][0]["code"] == "invalid_json"
        # Another label goes to FastAPI's own handler of the route, read as JSON all the same.
        labelled = client.post(path, content=b'{"data": {"organizationIds": ["o1"]}}',
                               headers={**t.headers, "content-type": "text/plain"})
        assert labelled.status_code == 200 and labelled.json()["result"]["data"] == []
    assert ("POST", path) in live.app.state.route_leaves


def test_errors_and_other_methods_answer_as_before(client, live):
    t = new_tenant(client)
    for _ in range(2):  # the second time through the lookup
        assert client.get("/v2/organizations/get", headers=t.headers).status_code == 405
        missing = post(client, "/v2/organizations/nope", {}, t.headers)
        assert missing.status_code == 404
        bad = post(client, "/v2/organizations/get", {"organizationIds": "o1"}, t.headers)
        assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
        assert client.get("/healthz").status_code == 200
    known, passed = live.app.state.known_routes, live.app.state.passed_routes
    assert ("POST", "/v2/organizations/nope") in passed  # no route took it: the loop answers it again
    assert ("GET", "/v2/organizations/get") in passed  # a 405 likewise
    assert known[("GET", "/healthz")] is not None


def test_paths_with_parameters_are_left_to_the_loop(client, live):
    for _ in range(2):
        assert client.get("/static-docs/swagger-ui.css").status_code == 200
        assert client.get("/static-docs/nope.css").status_code == 404
    known, passed = live.app.state.known_routes, live.app.state.passed_routes
    assert {("GET", "/static-docs/swagger-ui.css"), ("GET", "/static-docs/nope.css")} <= passed
    assert ("GET", "/static-docs/swagger-ui.css") not in known


def test_a_flood_of_made_up_paths_does_not_crowd_out_real_ones(client, live, monkeypatch):
    from collab.kit import routing

    monkeypatch.setattr(routing, "MAX_PATHS", 8)
    t = new_tenant(client)
    known, passed = live.app.state.known_routes, live.app.state.passed_routes
    known.clear()  # as after a restart: nothing seen yet
    live.app.state.route_leaves.clear()
    for i in range(20):  # anyone can send these, before any real request
        assert post(client, f"/v2/made-up-{i}", {}, t.headers).status_code == 404
    assert len(passed) <= 8 and not known
    for _ in range(2):  # remembered, then answered through the lookup
        assert result(post(client, "/v2/organizations/get", {"organizationIds": ["o1"]}, t.headers)) == []
    assert ("POST", "/v2/organizations/get") in known and ("POST", "/v2/organizations/get") in live.app.state.route_leaves
