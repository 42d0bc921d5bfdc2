"""POST /v2/workspace/create: defaults, limits, disposable domains, root/paid rules, IP rate limit."""

import pytest

from support.helpers import create_workspace, error, fresh_email, fresh_ip, issue_paths, new_tenant, post, result


def test_create_returns_workspace_with_one_testing_key(client):
    email = fresh_email("alice")
    ws = result(create_workspace(client, ownerEmail=email))
    assert set(ws) == {"id", "name", "owner", "authToken", "apiKeyList"}
    assert ws["name"] == f"{email} workspace"
    assert ws["owner"]["email"] == email
    assert ws["owner"]["name"] == email
    assert ws["owner"]["avatar"] == ""
    assert ws["owner"]["id"]
    assert isinstance(ws["authToken"], str) and len(ws["authToken"]) >= 32
    assert isinstance(ws["apiKeyList"], dict) and len(ws["apiKeyList"]) == 1
    key_id, key = next(iter(ws["apiKeyList"].items()))
    local = email.split("@")[0]
    assert key == {"apiKeyName": f"{local[0].upper()}{local[1:]} Test API Key", "id": key_id, "type": "testing"}


def test_key_name_comes_from_email_local_part_not_name(client):
    ws = result(create_workspace(client, ownerEmail=f"alice.{fresh_ip().replace('.', '')}@x.io", name="Bob"))
    key = next(iter(ws["apiKeyList"].values()))
    assert key["apiKeyName"].startswith("Alice.") and key["apiKeyName"].endswith(" Test API Key")


def test_defaults_follow_name(client):
    ws = result(create_workspace(client, name="Alice Smith", avatar="https://img.example.com/a.png"))
    assert ws["name"] == "Alice Smith workspace"
    assert ws["owner"]["name"] == "Alice Smith"
    assert ws["owner"]["avatar"] == "https://img.example.com/a.png"
    ws = result(create_workspace(client, name="Alice", workspaceName="Acme"))
    assert ws["name"] == "Acme"


@pytest.mark.parametrize("data, path", [({"name": "x" * 201}, ["name"]),
                                        ({"workspaceName": "x" * 201}, ["workspaceName"]), ({"name": ""}, ["name"]),
                                        ({"workspaceName": "   "}, ["workspaceName"]),
                                        ({"avatar": "https://a.io/" + "x" * 2000}, ["avatar"]),
                                        ({"avatar": "not a url"}, ["avatar"]), ({"name": 42}, ["name"]),
                                        ({"ownerEmail": "no-at-sign"}, ["ownerEmail"])])
def test_create_validation(client, data, path):
    err = error(create_workspace(client, **data), "INVALID_ARGUMENT")
    assert issue_paths(err) == [path]


def test_limits_are_inclusive(client):
    result(create_workspace(client, name="n" * 200, workspaceName="w" * 200, avatar="https://a.io/" + "x" * 1987))


def test_missing_email_and_several_bad_fields_are_all_listed(client):
    response = post(client, "/v2/workspace/create", {"name": "", "avatar": 5}, headers={"x-forwarded-for": fresh_ip()})
    err = error(response, "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["avatar"], ["name"], ["ownerEmail"]]
    for entry in err["details"]["issues"]:
        assert set(entry) == {"code", "path", "message"}


def test_disposable_domain_refused_and_nothing_written(client, db):
    email = f"someone-{fresh_ip()}@mailinator.com"
    err = error(create_workspace(client, ownerEmail=email), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["ownerEmail"]]
    assert db.execute("select count(*) as n from workspaces where owner_email = %s", (email, )).fetchone()["n"] == 0


def test_second_workspace_same_name_already_exists(client):
    email = fresh_email()
    result(create_workspace(client, ownerEmail=email))
    error(create_workspace(client, ownerEmail=email), "ALREADY_EXISTS")
    error(create_workspace(client, ownerEmail=email.upper()), "ALREADY_EXISTS")


def test_second_workspace_needs_paid_root_then_caps_at_five(client, live):
    email = fresh_email()
    root = result(create_workspace(client, ownerEmail=email))
    error(create_workspace(client, ownerEmail=email, workspaceName="Second"), "PERMISSION_DENIED")

    from collab.workspaces.service import set_plan

    live.run(set_plan(live.svc, workspace_id=root["id"], plan="paid"))
    owners = set()
    for n in range(2, 6):
        ws = result(create_workspace(client, ownerEmail=email, workspaceName=f"WS {n}"))
        owners.add(ws["owner"]["id"])
    assert owners == {root["owner"]["id"]}  # one owner, one id, across workspaces
    error(create_workspace(client, ownerEmail=email, workspaceName="Sixth"), "RESOURCE_EXHAUSTED")
    # The same name is still reported as a conflict first.
    error(create_workspace(client, ownerEmail=email, workspaceName="WS 2"), "ALREADY_EXISTS")


def test_ip_rate_limit(client, clock):
    ip = fresh_ip()
    for _ in range(10):
        result(post(client, "/v2/workspace/create", {"ownerEmail": fresh_email()}, headers={"x-forwarded-for": ip}))
    response = post(client, "/v2/workspace/create", {"ownerEmail": fresh_email()}, headers={"x-forwarded-for": ip})
    err = error(response, "RESOURCE_EXHAUSTED")
    assert int(response.headers["retry-after"]) > 0
    assert err["details"]["retryAfterSeconds"] > 0
    # Another address is not affected; the next window lets this one in again.
    result(post(client, "/v2/workspace/create", {"ownerEmail": fresh_email()}, headers={"x-forwarded-for": fresh_ip()}))
    clock["now"] += 3600
    result(post(client, "/v2/workspace/create", {"ownerEmail": fresh_email()}, headers={"x-forwarded-for": ip}))


def test_tokens_are_not_stored_in_clear(client, db):
    tenant = new_tenant(client)
    ws_row = db.execute("select * from workspaces where id = %s", (tenant.workspace["id"], )).fetchone()
    token_rows = db.execute("select * from auth_tokens where api_key_id = %s", (tenant.api_key, )).fetchall()
    assert len(token_rows) == 1
    dumped = repr(ws_row) + repr(token_rows)
    for secret in (tenant.workspace["authToken"], tenant.auth_token):
        assert secret not in dumped
        assert secret.encode() not in b"".join(
            bytes(v) for r in [ws_row, *token_rows] for v in r.values() if isinstance(v, (bytes, memoryview)))
