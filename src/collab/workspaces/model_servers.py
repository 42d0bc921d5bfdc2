"""How a tenant reaches a model provider (ADR 0061): its own key, or its own model server (sealed base URL, the
model it answers with, a key only where it wants one), else the platform's; and the SSRF guard on a workspace's
server, when it is set and each time it is called."""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from collab.kit import safety
from collab.kit.auth import Tenant
from collab.kit.crypto import DecryptError
from collab.kit.errors import ApiError, invalid, issue
from collab.kit.services import Services
from collab.llm.routing import Provider, base_url, platform_key, platform_model
from collab.workspaces import repository as repo

# What litellm's OpenAI route is given for a server that wants no key (it refuses to call without one).
NO_KEY = "no-key"


@dataclass(frozen=True)
class StoredAccess:
    """What a tenant stored for one provider, decrypted."""

    key: str | None
    base_url: str | None
    model: str | None


@dataclass(frozen=True)
class ModelAccess:
    """How one call reaches a provider: the key, the endpoint (None: the provider's own), whether it is the
    platform's (then the platform quota applies), the model a self-hosted server was configured with, and how a
    structured answer is asked for (`json_schema`, `json_object` or `none`)."""

    key: str
    base_url: str | None
    platform: bool
    model: str | None = None
    structured: str = "json_schema"


def _aad(tenant: Tenant, provider: str) -> str:
    return f"provider-key:{tenant.workspace_id}:{tenant.api_key_id}:{provider}"


def host_of(url: str) -> str:
    """The host (and port) of a base URL, as the console shows it; never its credentials or path."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host


def seal(svc: Services, *, tenant: Tenant, provider: str, key: str | None, base_url: str | None,
         model: str | None) -> dict[str, Any]:
    """The columns of a stored entry: key and base URL encrypted, bound to the workspace, API key and provider."""
    aad = _aad(tenant, provider)
    secret = key.strip() if key else None
    columns: dict[str, Any] = {
        "key_enc": svc.keyring.encrypt(secret, aad) if secret else None, "last4": secret[-4:] if secret else ""
    }
    if base_url is not None:
        url = base_url.strip()
        columns |= {
            "base_url_enc": svc.keyring.encrypt(url, aad + ":base-url"), "base_url_host": host_of(url), "model": model
        }
    return columns


async def stored(svc: Services, *, tenant: Tenant, provider: str) -> StoredAccess | None:
    """What the tenant stored for a provider, decrypted; None when nothing is."""
    async with svc.pool.connection() as conn:
        row = await repo.provider_key(conn, api_key_id=tenant.api_key_id, provider=provider)
    if row is None:
        return None
    aad = _aad(tenant, provider)
    try:
        key = svc.keyring.decrypt(row["key_enc"], aad) if row["key_enc"] is not None else None
        url = svc.keyring.decrypt(row["base_url_enc"], aad + ":base-url") if row["base_url_enc"] is not None else None
    except DecryptError as exc:
        raise ApiError("FAILED_PRECONDITION",
                       f"The stored {provider} settings cannot be read; set them again.") from exc
    return StoredAccess(key=key, base_url=url, model=row["model"])


async def check_base_url(settings, url: str, *, path: list[Any]) -> None:
    """INVALID_ARGUMENT unless a workspace's model server may be called: http(s), and (unless the operator allows
    private addresses) a public one, as webhook endpoints are checked."""
    why = await safety.check_registration(url.strip(), allow_private=settings.models_allow_private_base_urls)
    if why is not None:
        message = f"baseUrl is refused: {why}"
        raise invalid(message, [issue(path, message)])


def structured_mode(settings, provider: Provider) -> str:
    """How a structured answer is asked of this provider (Ollama: its `format`, which litellm fills from the schema)."""
    return settings.openai_compatible_response_format if provider.id == "openai-compatible" else "json_schema"


def platform_access(settings, provider: Provider, *, keys: bool = True) -> ModelAccess | None:
    """How the platform itself calls `provider` (its key, or its own model server and model); None when it cannot.
    `keys`: a cloud provider's platform key may be used (the platform's own model servers always may). No database:
    the evals use it too."""
    mode = structured_mode(settings, provider)
    if provider.self_hosted:
        server = base_url(settings, provider)
        if server is None:
            return None
        return ModelAccess(
            platform_key(settings, provider) or NO_KEY, server.rstrip("/"), True, platform_model(settings, provider),
            mode)
    key = platform_key(settings, provider) if keys else None
    return ModelAccess(key, base_url(settings, provider), True, None, mode) if key else None


def eval_access(settings, provider: Provider) -> ModelAccess:
    """`platform_access` for an eval command, which exits with the setting to make when there is none."""
    found = platform_access(settings, provider)
    if found is None:
        what = "BASE_URL" if provider.self_hosted else "API_KEY"
        raise SystemExit(f"no platform {what.lower().replace('_', ' ')} for {provider.id}: set "
                         f"COLLAB_{provider.setting.upper()}_{what}")
    return found


async def access(svc: Services, *, tenant: Tenant, provider: Provider,
                 platform_keys: bool = True) -> ModelAccess | None:
    """How `tenant` calls `provider`: its own entry, else the platform's (`platform_access`); None when neither is
    configured. A workspace's own server is checked again here, so a name that resolves to a private address since
    it was set is refused."""
    settings = svc.settings
    own = await stored(svc, tenant=tenant, provider=provider.id)
    if provider.self_hosted and own is not None and own.base_url:
        try:
            await safety.pin(own.base_url, allow_private=settings.models_allow_private_base_urls)
        except safety.Refused as exc:
            message = f"The workspace's {provider.display} base URL is refused: {exc}"
            raise ApiError("FAILED_PRECONDITION", message) from None
        return ModelAccess(own.key or NO_KEY, own.base_url.rstrip("/"), False, own.model,
                           structured_mode(settings, provider))
    if not provider.self_hosted and own is not None and own.key:
        return ModelAccess(own.key, base_url(settings, provider), False, None, structured_mode(settings, provider))
    return platform_access(settings, provider, keys=platform_keys)
