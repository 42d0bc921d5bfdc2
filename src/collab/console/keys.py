"""Page 2, API keys and tokens: list and create keys, reset a key's auth token, reset the workspace auth token."""

from fastapi import APIRouter, Request

from collab.console import session
from collab.console.forms import FormErrors, text, validated
from collab.console.render import render, see_other
from collab.console.session import COOKIE, PATH, Console, Signed
from collab.workspaces import repository as workspace_repo
from collab.workspaces import service as workspaces
from collab.workspaces.schemas import CreateApiKey

router = APIRouter()


def _masked(token: str) -> str:
    return "•" * 8 + token[-4:]


async def _page(request: Request, console: Console, *, key: str | None, status: int = 200, errors=None, values=None):
    keys = await console.api_keys()
    selected = key or (keys[0]["id"] if keys else None)
    tokens = []
    if selected is not None:
        await console.tenant(selected)  # another workspace's key: 404 page
        listed = await workspaces.list_auth_tokens(console.svc, caller=console.caller, api_key_id=selected)
        tokens = [{"name": t["name"], "masked": _masked(t["token"]), "domains": t["domains"]}
                  for t in listed["authTokens"]]
    async with console.svc.pool.connection() as conn:
        workspace = await workspace_repo.get_workspace(conn, workspace_id=console.workspace_id)
    values = values or {"ownerEmail": workspace["owner_email"] if workspace else "", "type": "testing"}
    return render(request, console, "keys.html", title="API keys and tokens", status=status, keys=keys,
                  selected=selected, tokens=tokens, errors=errors or {}, values=values, revealed=console.revealed)


@router.get("/keys")
async def keys_page(request: Request, key: str | None = None, console: Console = Signed):
    return await _page(request, console, key=key)


@router.post("/keys/create")
async def create_key(request: Request, console: Console = Signed):
    form = await session.checked_form(request, console)
    try:
        values = {name: text(form, name, max_length=1000) for name in ("apiKeyName", "ownerEmail", "type")}
    except FormErrors as exc:
        return await _page(request, console, key=None, status=400, errors=exc.errors, values={})
    try:
        data = validated(CreateApiKey, {k: v for k, v in values.items() if v or k != "apiKeyName"})
    except FormErrors as exc:
        return await _page(request, console, key=None, status=400, errors=exc.errors, values=values)
    created = await workspaces.create_api_key(console.svc, caller=console.caller, data=data)
    api_key = created["apiKey"]
    listed = await workspaces.list_auth_tokens(console.svc, caller=console.caller, api_key_id=api_key)
    token = listed["authTokens"][0]["token"]
    await session.reveal(console, what=f"Auth token of the new API key {api_key}", token=token)
    return see_other(f"/console/keys?key={api_key}")


@router.post("/keys/reset-token")
async def reset_key_token(request: Request, console: Console = Signed):
    form = await session.checked_form(request, console)
    tenant = await console.tenant(text(form, "apiKey", max_length=200))
    reset = await workspaces.reset_auth_token(console.svc, caller=console.caller, api_key_id=tenant.api_key_id)
    await session.reveal(console, what=f"New auth token of API key {tenant.api_key_id} (the old one no longer works)",
                         token=reset["newAuthToken"]["token"])
    return see_other(f"/console/keys?key={tenant.api_key_id}")


@router.post("/keys/workspace-token")
async def reset_workspace_token(request: Request, console: Console = Signed):
    await session.checked_form(request, console)
    reset = await workspaces.reset_workspace_token(console.svc, caller=console.caller)
    # The session was opened with the old token: it ends here (every other session of the workspace too).
    await session.sign_out(console.svc, console.session_id)
    response = render(request, None, "workspace_token.html", title="Workspace auth token reset",
                      workspace_id=console.workspace_id, token=reset["authToken"])
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict")
    return response
