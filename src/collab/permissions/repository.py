"""SQL of access grants; executes, never commits."""

from typing import Any

from collab.kit.db import Queries, execute, fetch_all, fetch_one, fetch_row
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def upsert_grants(conn: Conn, grants: list[dict[str, Any]]) -> None:
    """Set principals' roles (and expiries) on resources, in one pipelined batch; a repeat takes the last."""
    if grants:
        async with conn.cursor() as cur:
            await cur.executemany(q.upsert_grant, grants)


async def delete_grant(conn: Conn, *, api_key_id: str, organization_id: str, principal_type: str, principal_id: str,
                       resource_type: str, resource_id: str) -> int:
    grant = {
        "api_key_id": api_key_id, "organization_id": organization_id, "principal_type": principal_type,
        "principal_id": principal_id, "resource_type": resource_type, "resource_id": resource_id
    }
    return await execute(conn, q.delete_grant, grant)


async def missing_resources(conn: Conn, *, api_key_id: str, resources: list[tuple[str, str, str]]) -> list[int]:
    """Indexes (0-based) of the (type, id, organization id) resources that do not exist."""
    params = {
        "api_key_id": api_key_id, "types": [r[0] for r in resources], "ids": [r[1] for r in resources],
        "orgs": [r[2] for r in resources]
    }
    return [row["i"] - 1 for row in await fetch_all(conn, q.missing_resources, params)]


async def resource_exists(conn: Conn, *, api_key_id: str, organization_id: str, resource_type: str,
                          resource_id: str) -> bool:
    return not await missing_resources(conn, api_key_id=api_key_id,
                                       resources=[(resource_type, resource_id, organization_id)])


async def group_exists(conn: Conn, *, api_key_id: str, organization_id: str, id: str) -> bool:
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id}
    return (await fetch_row(conn, q.group_exists, params))["found"]


async def access_inputs(conn: Conn, *, api_key_id: str, organization_id: str, user_ids: list[str],
                        document_ids: list[str], now_ms: int) -> dict[str, Any]:
    """{organization (None when missing), grants, folders (id → ancestors), documents (id → folder)}: what
    effective access needs about these users and documents, in one round trip."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "user_ids": user_ids,
        "document_ids": document_ids, "now_ms": now_ms
    }
    return await fetch_row(conn, q.access_inputs, params)


async def document_folders(conn: Conn, *, api_key_id: str, organization_id: str,
                           ids: list[str]) -> dict[str, str | None]:
    """The folder of each existing document among `ids`."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "ids": ids}
    return {r["id"]: r["folder_id"] for r in await fetch_all(conn, q.document_folders, params)}


async def grants_on(conn: Conn, *, api_key_id: str, organization_id: str, resources: list[tuple[str, str]],
                    now_ms: int) -> list[dict[str, Any]]:
    """Live grants on (type, id) resources, one row per user (a group's grant once for each of its members)."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "types": [r[0] for r in resources],
        "ids": [r[1] for r in resources], "now_ms": now_ms
    }
    return await fetch_all(conn, q.grants_on, params)


async def access_settings(conn: Conn, *, api_key_id: str, organization_id: str, id: str,
                          path: list[str]) -> dict[str, Any]:
    """{access_type, disabled, provider, folder_types} of a document and the folders above it."""
    params = {"api_key_id": api_key_id, "organization_id": organization_id, "id": id, "path": path}
    return await fetch_row(conn, q.access_settings, params)


async def set_access(conn: Conn, *, api_key_id: str, organization_id: str, kind: str, ids: list[str],
                     access_type: str | None, now: int) -> set[str]:
    """Set the access type of some documents or folders (`kind`); the ids found."""
    query = q.set_document_access if kind == "document" else q.set_folder_access
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "ids": ids, "access_type": access_type, "now": now
    }
    return {r["id"] for r in await fetch_all(conn, query, params)}


async def set_document_disabled(conn: Conn, *, api_key_id: str, organization_id: str, ids: list[str], disabled: bool,
                                now: int) -> set[str]:
    """Disable or restore some documents on their own; the ids found."""
    params = {
        "api_key_id": api_key_id, "organization_id": organization_id, "ids": ids, "disabled": disabled, "now": now
    }
    return {r["id"] for r in await fetch_all(conn, q.set_document_disabled, params)}


async def provider_config(conn: Conn, *, api_key_id: str) -> dict[str, Any] | None:
    """{enabled, url, auth_token_enc, require_signature, updated_at} of an API key's permission provider; None when
    never set (`require_signature` null: the default, signed answers required whenever an auth token is set)."""
    return await fetch_one(conn, q.provider_config, {"api_key_id": api_key_id})


async def upsert_provider_config(conn: Conn, *, api_key_id: str, enabled: bool, url: str, auth_token_enc: bytes | None,
                                 require_signature: bool | None, now: int) -> None:
    params = {
        "api_key_id": api_key_id, "enabled": enabled, "url": url, "auth_token_enc": auth_token_enc,
        "require_signature": require_signature, "now": now
    }
    await execute(conn, q.upsert_provider_config, params)
