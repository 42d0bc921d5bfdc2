"""An API key's permission provider settings (Velt's permissionproviderconfig) and the signature of its answers."""

from typing import Any

from collab.kit import safety
from collab.kit.auth import Tenant
from collab.kit.errors import invalid, issue
from collab.kit.jobs import transaction
from collab.kit.services import Services
from collab.permissions import provider
from collab.permissions import repository as repo
from collab.permissions.schemas import GenerateSignature, UpdateProviderConfig


def _aad(tenant: Tenant) -> str:
    return f"permission-provider:{tenant.api_key_id}"


def _view(svc: Services, tenant: Tenant, row: dict[str, Any] | None) -> dict[str, Any]:
    token = "" if row is None or row["auth_token_enc"] is None else svc.keyring.decrypt(
        row["auth_token_enc"], _aad(tenant))
    return {
        "usePermissionProvider": bool(row and row["enabled"]), "permissionProviderConfig": {
            "permissionProviderUrl": row["url"] if row else "", "authToken": f"****{token[-4:]}" if token else "",
            "requireSignedAnswers": provider.requires_signature(row)
        }
    }


async def get(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The provider's settings (its auth token masked)."""
    async with svc.pool.connection() as conn:
        return _view(svc, tenant, await repo.provider_config(conn, api_key_id=tenant.api_key_id))


async def _refuse_url(svc: Services, url: str) -> None:
    reason = None
    if not url.startswith(("http://", "https://")):
        reason = "Please enter a valid URL"
    else:
        why = await safety.check_registration(url, allow_private=svc.settings.webhooks_allow_private_targets)
        reason = f"Please enter a valid URL: {why}" if why else None
    if reason:
        raise invalid(reason, [issue(["permissionProviderConfig", "permissionProviderUrl"], reason)])


async def update(svc: Services, *, tenant: Tenant, data: UpdateProviderConfig) -> dict[str, Any]:
    """Merge new settings into the stored ones (an auth token sent replaces the one kept); the result, masked."""
    sent = data.permissionProviderConfig
    if sent is not None and sent.permissionProviderUrl:
        await _refuse_url(svc, sent.permissionProviderUrl)
    async with transaction(svc.pool, svc.redis) as tx:
        row = await repo.provider_config(tx.conn, api_key_id=tenant.api_key_id)
        enabled = data.usePermissionProvider if data.usePermissionProvider is not None else bool(row and row["enabled"])
        url = row["url"] if row else ""
        token_enc = row["auth_token_enc"] if row else None
        require_signature = row["require_signature"] if row else None  # null: the default, which follows the token
        if sent is not None and sent.permissionProviderUrl is not None:
            url = sent.permissionProviderUrl
        if sent is not None and sent.authToken is not None:
            token_enc = svc.keyring.encrypt(sent.authToken, _aad(tenant)) if sent.authToken else None
        if sent is not None and sent.requireSignedAnswers is not None:
            require_signature = sent.requireSignedAnswers
        await repo.upsert_provider_config(tx.conn, api_key_id=tenant.api_key_id, enabled=enabled, url=url,
                                          auth_token_enc=token_enc, require_signature=require_signature,
                                          now=svc.now_ms())
        stored = await repo.provider_config(tx.conn, api_key_id=tenant.api_key_id)
    provider.forget(tenant.api_key_id)  # decisions of the old settings are not reused here
    return _view(svc, tenant, stored)


def generate_signature(svc: Services, *, tenant: Tenant, data: GenerateSignature) -> dict[str, str]:
    """The signature a provider puts beside its answer, so collab knows the decisions are the backend's."""
    results = [p.model_dump(exclude_none=True) for p in data.permissions]
    return {"signature": provider.sign_results(svc, api_key_id=tenant.api_key_id, results=results)}
