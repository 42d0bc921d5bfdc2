"""SQL of the workspace domain; executes, never commits."""

from typing import Any

from psycopg.types.json import Jsonb

from collab.kit.db import Queries, execute, fetch_all, fetch_one
from collab.kit.db.pool import Conn

q = Queries.beside(__file__)


async def lock_email(conn: Conn, *, email: str) -> None:
    """Serialise workspace creation per e-mail for the rest of the transaction."""
    await conn.execute(q.lock_email, {"email": email})


async def workspaces_of_email(conn: Conn, *, email: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.workspaces_of_email, {"email": email})


async def insert_workspace(conn: Conn, *, id: str, name: str, owner_email: str, owner_id: str, owner_name: str,
                           owner_avatar: str, auth_token_hash: bytes, auth_token_enc: bytes, is_root: bool) -> None:
    row = {
        "id": id, "name": name, "owner_email": owner_email, "owner_id": owner_id, "owner_name": owner_name,
        "owner_avatar": owner_avatar, "auth_token_hash": auth_token_hash, "auth_token_enc": auth_token_enc,
        "is_root": is_root
    }
    await execute(conn, q.insert_workspace, row)


async def insert_api_key(conn: Conn, *, workspace_id: str, id: str, name: str, type: str, owner_email: str) -> None:
    row = {"workspace_id": workspace_id, "id": id, "name": name, "type": type, "owner_email": owner_email}
    await execute(conn, q.insert_api_key, row)


async def insert_auth_token(conn: Conn, *, api_key_id: str, name: str, domains: list[str] | None, token_hash: bytes,
                            token_enc: bytes) -> None:
    row = {"api_key_id": api_key_id, "name": name, "domains": domains, "token_hash": token_hash, "token_enc": token_enc}
    await execute(conn, q.insert_auth_token, row)


async def delete_auth_tokens(conn: Conn, *, api_key_id: str) -> None:
    await execute(conn, q.delete_auth_tokens, {"api_key_id": api_key_id})


async def get_workspace(conn: Conn, *, workspace_id: str) -> dict[str, Any] | None:
    return await fetch_one(conn, q.get_workspace, {"workspace_id": workspace_id})


async def api_keys_of_workspace(conn: Conn, *, workspace_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.api_keys_of_workspace, {"workspace_id": workspace_id})


async def api_key_belongs(conn: Conn, *, api_key_id: str, workspace_id: str) -> bool:
    row = await fetch_one(conn, q.api_key_of_workspace, {"api_key_id": api_key_id, "workspace_id": workspace_id})
    return row is not None


async def auth_tokens_of_key(conn: Conn, *, api_key_id: str) -> list[dict[str, Any]]:
    return await fetch_all(conn, q.auth_tokens_of_key, {"api_key_id": api_key_id})


async def set_plan(conn: Conn, *, workspace_id: str, plan: str) -> int:
    return await execute(conn, q.set_plan, {"workspace_id": workspace_id, "plan": plan})


async def api_key_config(conn: Conn, *, api_key_id: str, for_update: bool = False) -> dict[str, Any]:
    row = await fetch_one(conn, q.lock_api_key_config if for_update else q.api_key_config, {"api_key_id": api_key_id})
    assert row is not None, "authenticated API key vanished"
    return row


async def set_config(conn: Conn, *, api_key_id: str, column: str, config: dict[str, Any]) -> None:
    """Store one of the JSON config columns (webhook, activity, notification)."""
    sql = {
        "webhook": q.set_webhook_config, "activity": q.set_activity_config, "notification": q.set_notification_config
    }
    await execute(conn, sql[column], {"api_key_id": api_key_id, "config": Jsonb(config)})


async def set_advanced_queries(conn: Conn, *, api_key_id: str, enabled: bool) -> None:
    await execute(conn, q.set_advanced_queries, {"api_key_id": api_key_id, "enabled": enabled})


async def api_key_config_view(conn: Conn, *, api_key_id: str) -> dict[str, Any]:
    """{enable_advanced_queries, provider_keys: [{provider, last4}]}, in one round trip."""
    row = await fetch_one(conn, q.api_key_config_view, {"api_key_id": api_key_id})
    assert row is not None, "authenticated API key vanished"
    return row


async def upsert_provider_key(conn: Conn, *, api_key_id: str, provider: str, key_enc: bytes | None, last4: str,
                              base_url_enc: bytes | None = None, base_url_host: str | None = None,
                              model: str | None = None) -> None:
    await execute(
        conn, q.upsert_provider_key, {
            "api_key_id": api_key_id, "provider": provider, "key_enc": key_enc, "last4": last4,
            "base_url_enc": base_url_enc, "base_url_host": base_url_host, "model": model
        })


async def delete_provider_key(conn: Conn, *, api_key_id: str, provider: str) -> None:
    await execute(conn, q.delete_provider_key, {"api_key_id": api_key_id, "provider": provider})


async def provider_key(conn: Conn, *, api_key_id: str, provider: str) -> dict[str, Any] | None:
    """{key_enc, base_url_enc, model} stored for one provider (bytes or None), or None."""
    row = await fetch_one(conn, q.provider_key, {"api_key_id": api_key_id, "provider": provider})
    if row is None:
        return None
    return {
        "key_enc": None if row["key_enc"] is None else bytes(row["key_enc"]),
        "base_url_enc": None if row["base_url_enc"] is None else bytes(row["base_url_enc"]), "model": row["model"]
    }


async def set_workspace_token(conn: Conn, *, workspace_id: str, auth_token_hash: bytes, auth_token_enc: bytes) -> int:
    row = {"workspace_id": workspace_id, "auth_token_hash": auth_token_hash, "auth_token_enc": auth_token_enc}
    return await execute(conn, q.set_workspace_token, row)


async def allowed_domains(conn: Conn, *, api_key_id: str, for_update: bool = False) -> list[str] | None:
    """The key's allowed domains; None when the key does not exist."""
    row = await fetch_one(conn, q.lock_allowed_domains if for_update else q.allowed_domains, {"api_key_id": api_key_id})
    return None if row is None else row["allowed_domains"]


async def set_allowed_domains(conn: Conn, *, api_key_id: str, domains: list[str]) -> None:
    await execute(conn, q.set_allowed_domains, {"api_key_id": api_key_id, "domains": domains})


async def rename_api_key(conn: Conn, *, api_key_id: str, workspace_id: str, name: str) -> bool:
    params = {"api_key_id": api_key_id, "workspace_id": workspace_id, "name": name}
    return await fetch_one(conn, q.rename_api_key, params) is not None


async def copy_api_key_config(conn: Conn, *, source: str, target: str, workspace_id: str) -> None:
    await execute(conn, q.copy_api_key_config, {"source": source, "target": target, "workspace_id": workspace_id})


async def basic_webhook_token(conn: Conn, *, api_key_id: str) -> bytes | None:
    row = await fetch_one(conn, q.basic_webhook_token, {"api_key_id": api_key_id})
    return None if row is None or row["basic_webhook_token_enc"] is None else bytes(row["basic_webhook_token_enc"])


async def set_basic_webhook_token(conn: Conn, *, api_key_id: str, token_enc: bytes | None) -> None:
    await execute(conn, q.set_basic_webhook_token, {"api_key_id": api_key_id, "token_enc": token_enc})
