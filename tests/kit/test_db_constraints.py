"""Unique and foreign-key violations answer by constraint name (ALREADY_EXISTS / NOT_FOUND), never a 500."""

import psycopg
import pytest
from psycopg.errors import ForeignKeyViolation, IntegrityError

from collab.kit.db import constraints
from collab.users import service as users_service
from support.helpers import add_organization, error, new_tenant, post, result

BASE = "/v2/workspace/advancedwebhook"


def test_an_organization_deleted_between_the_check_and_the_insert_answers_as_missing(client, db, servers, monkeypatch):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    check = users_service._missing_scope

    async def check_then_lose_the_organization(conn, **kwargs):
        # The check passes; then a concurrent request deletes the organization (committed) before the insert.
        missing = await check(conn, **kwargs)
        async with await psycopg.AsyncConnection.connect(servers["database_url"], autocommit=True) as other:
            await other.execute("delete from organizations where api_key_id = %s and id = 'o1'", (t.api_key, ))
        return missing

    monkeypatch.setattr(users_service, "_missing_scope", check_then_lose_the_organization)
    body = {"organizationId": "o1", "users": [{"userId": "u1", "name": "Ana"}, {"userId": "u2"}]}
    answer = result(post(client, "/v2/users/add", body, t.headers))
    assert answer == {u: {"success": False, "id": u, "message": "Organization does not exist"} for u in ("u1", "u2")}
    # Nothing of the call was kept: no grant, no profile.
    assert db.execute("select count(*) as n from grants where api_key_id = %s", (t.api_key, )).fetchone()["n"] == 0
    assert db.execute("select count(*) as n from users where api_key_id = %s", (t.api_key, )).fetchone()["n"] == 0
    monkeypatch.undo()
    # And once the organization is back, the same call succeeds.
    add_organization(client, t, "o1")
    assert result(post(client, "/v2/users/add", body, t.headers))["u1"]["success"] is True


def test_a_taken_uid_is_already_exists_on_create_and_update(client):
    t = new_tenant(client)
    result(post(client, "/v2/workspace/advancedwebhookconfig/update", {"isEnabled": True}, t.headers))
    first = result(post(client, f"{BASE}/endpoints/create", {"url": "https://example.com/a", "uid": "one"}, t.headers))
    second = result(post(client, f"{BASE}/endpoints/create", {"url": "https://example.com/b"}, t.headers))
    taken = error(post(client, f"{BASE}/endpoints/create", {"url": "https://example.com/c", "uid": "one"}, t.headers),
                  "ALREADY_EXISTS")
    assert taken["message"] == "Another endpoint of this API key has this uid."
    again = error(post(client, f"{BASE}/endpoints/update", {"endpointId": second["id"], "uid": "one"}, t.headers),
                  "ALREADY_EXISTS")
    assert again == taken
    assert first["uid"] == "one"


def _violation(db, statement: str, params: tuple) -> IntegrityError:
    with pytest.raises(IntegrityError) as caught:
        with db.transaction():
            db.execute(statement, params)
    return caught.value


def test_the_mapper_reads_the_constraint_name(client, db):
    t = new_tenant(client)
    add_organization(client, t, "o1")
    # A registered constraint answers with its domain's words.
    exc = _violation(
        db, "insert into grants (api_key_id, organization_id, principal_type, principal_id, resource_type,"
        " resource_id, access_role, created_at, updated_at)"
        " values (%s, 'gone', 'user', 'u1', 'organization', 'gone', 'editor', 0, 0)", (t.api_key, ))
    assert isinstance(exc, ForeignKeyViolation)
    mapped = constraints.to_api_error(exc)
    assert (mapped.code, mapped.message) == ("NOT_FOUND", "Organization does not exist")
    # One nobody registered still answers by its kind; a caller may name the record it meant.
    exc = _violation(db, "insert into organizations (api_key_id, id, created_at, updated_at) values (%s, 'o1', 0, 0)",
                     (t.api_key, ))
    assert constraints.to_api_error(exc).code == "ALREADY_EXISTS"
    assert constraints.to_api_error(exc, ALREADY_EXISTS="Organization o1 exists.").message == "Organization o1 exists."
    with pytest.raises(Exception) as raised:
        with constraints.mapped():
            raise exc
    assert raised.value.code == "ALREADY_EXISTS" and raised.value.body()["error"]["status"] == "ALREADY_EXISTS"


def test_an_unmapped_violation_reaching_the_app_answers_by_its_kind(client, db):
    # A service that did not wrap its write still answers NOT_FOUND / ALREADY_EXISTS, never a 500.
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from collab.kit.http import install_handlers

    t = new_tenant(client)
    add_organization(client, t, "o1")
    caught = {
        "fk": _violation(
            db, "insert into grants (api_key_id, organization_id, principal_type, principal_id,"
            " resource_type, resource_id, access_role, created_at, updated_at)"
            " values (%s, 'gone', 'user', 'u1', 'organization', 'gone', 'editor', 0, 0)", (t.api_key, )),
        "unique": _violation(
            db, "insert into organizations (api_key_id, id, created_at, updated_at) values (%s, 'o1', 0, 0)",
            (t.api_key, ))
    }
    app = FastAPI()
    install_handlers(app)

    @app.post("/raise/{kind}")
    async def raising(kind: str):
        raise caught[kind]

    with TestClient(app) as local:
        missing, taken = local.post("/raise/fk"), local.post("/raise/unique")
    assert (missing.status_code, missing.json()["error"]["status"]) == (404, "NOT_FOUND")
    assert missing.json()["error"]["message"] == "Organization does not exist"
    assert (taken.status_code, taken.json()["error"]["status"]) == (409, "ALREADY_EXISTS")
