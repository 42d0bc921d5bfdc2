"""Settings, AI provider keys: set, remove (write-only, shown by their last 4 characters) and "test this key"."""

import tomllib
from pathlib import Path

from fastapi import APIRouter, Request
from starlette.datastructures import FormData

from collab.ask_ai.schemas import AskAi
from collab.ask_ai.service import ask_ai
from collab.console import session
from collab.console.forms import FormErrors, text, validated
from collab.console.render import see_other
from collab.console.session import Console, Signed
from collab.console.settings_page import PROVIDERS, save_form, settings_view
from collab.kit.errors import ApiError
from collab.workspaces import config
from collab.workspaces.schemas import ApiKeyConfigUpdate

router = APIRouter()
# The check's model per provider and its one-line instruction: data, not code (see the file).
KEY_CHECK = tomllib.loads(Path(__file__).with_name("key_check.toml").read_text())


def _provider(form: FormData) -> str:
    provider = text(form, "provider", max_length=20)
    if provider not in dict(PROVIDERS):
        raise ApiError("INVALID_ARGUMENT", "Unknown provider.")
    return provider


@router.post("/settings/provider-key")
async def save_provider_key(request: Request, console: Console = Signed):

    async def build(form: FormData, tenant):
        provider = _provider(form)
        name = f"key_{provider}"
        remove = form.get("action") == "remove"
        secret = None if remove else text(form, name, max_length=1000)
        if secret == "":
            raise FormErrors({name: "Enter the key, or use Remove to delete the stored one."})
        try:
            entry = {"provider": provider, "customerApiKey": secret}
            return validated(ApiKeyConfigUpdate, {"aiModelApiKey": [entry]})
        except FormErrors as exc:
            raise FormErrors({name: next(iter(exc.errors.values()))}) from None

    async def save(tenant, data):
        await config.update_api_key_config(console.svc, tenant=tenant, data=data)
        entry = data.aiModelApiKey[0]
        label = dict(PROVIDERS)[entry.provider]
        if entry.customerApiKey is None:
            return f"{label} key removed."
        return f"{label} key saved (ending in {entry.customerApiKey.strip()[-4:]})."

    return await save_form(request, console, "providers", build, save)


@router.post("/settings/provider-key/test")
async def test_provider_key(request: Request, console: Console = Signed):
    form = await session.checked_form(request, console)
    tenant = await console.tenant(text(form, "key", max_length=200))
    provider = _provider(form)
    label = dict(PROVIDERS)[provider]
    check = AskAi(model=KEY_CHECK["models"][provider], prompt=KEY_CHECK["prompt"], text=KEY_CHECK["text"])
    try:
        outcome = await ask_ai(console.svc, tenant=tenant, data=check)
    except ApiError as exc:
        errors = {f"key_{provider}": f"The test call failed: {exc.message}"}
        return await settings_view(request, console, key=tenant.api_key_id, status=400, errors=errors,
                                   posted="providers")
    if not outcome.get("success"):
        errors = {f"key_{provider}": f"No {label} key is stored for this API key."}
        return await settings_view(request, console, key=tenant.api_key_id, status=400, errors=errors,
                                   posted="providers")
    await session.flash(console, f"The {label} key works: {check.model} answered.")
    return see_other(f"/console/settings?key={tenant.api_key_id}#providers")
