"""Page 3, Settings of one API key: advanced queries, provider keys, activity, notifications, advanced webhooks.

Every form is validated by the API's own request model and saved by the service the API route calls, so the
console shows the API's rules (bounds included) as errors next to the fields.
"""

from typing import Any

from fastapi import APIRouter, Request
from starlette.datastructures import FormData, UploadFile

from collab.console import session
from collab.console.forms import FormErrors, bounds, checked, errors_of, text, validated, whole
from collab.console.render import render, see_other
from collab.console.session import Console, Signed
from collab.events import COMMENT_EVENTS, HUDDLE_EVENTS
from collab.kit.errors import ApiError
from collab.workspaces import config
from collab.workspaces.schemas import (
    ActivityConfigUpdate,
    ApiKeyConfigUpdate,
    BatchScope,
    DelayConfig,
    NotificationConfigUpdate,
    WebhookConfigUpdate,
)

router = APIRouter()
PROVIDERS = [("openai", "OpenAI"), ("anthropic", "Anthropic"), ("gemini", "Gemini")]
MAX_PUBLIC_KEY_FILE = 64 * 1024
NOTIFY = "notificationServiceConfig"
BOUNDS = {
    "delaySeconds": bounds(DelayConfig, "delaySeconds"), "batchWindowSeconds": bounds(BatchScope, "batchWindowSeconds"),
    "maxActivities": bounds(BatchScope, "maxActivities")
}


async def settings_view(request: Request, console: Console, *, key: str | None, status: int = 200, errors=None,
                        posted: str = "", values: dict | None = None):
    """The settings page of one API key; `posted` names the section whose form is shown again with `values`."""
    keys = await console.api_keys()
    tenant = await console.tenant(key or (keys[0]["id"] if keys else ""))
    api_key_config = await config.get_api_key_config(console.svc, tenant=tenant)
    provider_keys = {p["provider"]: p["last4"] for p in api_key_config["aiModelApiKey"]}
    try:
        webhook = await config.get_webhook_config(console.svc, tenant=tenant)
    except ApiError:  # never configured: the form starts from the defaults
        webhook = dict(config.WEBHOOK_DEFAULTS)
    typed = (values or {}).get(posted)

    def on(section: str, name: str, stored) -> bool:
        # A form shown again after an error keeps what was ticked in it; the others show what is stored.
        return (name in typed) if typed is not None and section == posted else bool(stored)

    def val(section: str, name: str, stored):
        return typed.get(name, "") if typed is not None and section == posted else stored

    return render(request, console, "settings.html", title="Settings", status=status, keys=keys,
                  selected=tenant.api_key_id, advanced=api_key_config["enableAdvancedQueries"], providers=PROVIDERS,
                  provider_keys=provider_keys,
                  activity=(await
                            config.get_activity_config(console.svc,
                                                       tenant=tenant))["activityServiceConfig"], notification=await
                  config.get_notification_config(console.svc,
                                                 tenant=tenant), webhook=webhook, comment_events=COMMENT_EVENTS,
                  huddle_events=HUDDLE_EVENTS, bounds=BOUNDS, errors=errors or {}, posted=posted, on=on, val=val)


@router.get("/settings")
async def settings_page(request: Request, key: str | None = None, console: Console = Signed):
    return await settings_view(request, console, key=key)


async def save_form(request: Request, console: Console, section: str, build, save):
    """Check the form's CSRF token and its key, build the update, save it; the form again with errors if not."""
    form = await session.checked_form(request, console)
    tenant = await console.tenant(text(form, "key", max_length=200))
    try:
        message = await save(tenant, await build(form, tenant))
    except (FormErrors, ApiError) as exc:
        if isinstance(exc, ApiError) and exc.code not in ("INVALID_ARGUMENT", "FAILED_PRECONDITION"):
            raise
        errors = exc.errors if isinstance(exc, FormErrors) else errors_of(exc)
        # What was typed stays in the form (never a secret: provider keys are not echoed back).
        values = {k: v for k, v in form.multi_items() if isinstance(v, str) and not k.startswith("key_")}
        return await settings_view(request, console, key=tenant.api_key_id, status=400, errors=errors, posted=section,
                                   values={section: values})
    await session.flash(console, message)
    return see_other(f"/console/settings?key={tenant.api_key_id}#{section}")


@router.post("/settings/advanced-queries")
async def save_advanced_queries(request: Request, console: Console = Signed):

    async def build(form: FormData, tenant):
        return validated(ApiKeyConfigUpdate, {"enableAdvancedQueries": checked(form, "enableAdvancedQueries")})

    async def save(tenant, data):
        saved = await config.update_api_key_config(console.svc, tenant=tenant, data=data)
        return "Advanced queries " + ("enabled." if saved["enableAdvancedQueries"] else "disabled.")

    return await save_form(request, console, "advanced", build, save)


@router.post("/settings/activity")
async def save_activity(request: Request, console: Console = Signed):

    async def build(form: FormData, tenant):
        triggers = {event: checked(form, f"activity.{event}") for event in COMMENT_EVENTS}
        body = {"isEnabled": checked(form, "activity.isEnabled"), "triggers": {"comment": triggers}}
        return validated(ActivityConfigUpdate, {"activityServiceConfig": body})

    async def save(tenant, data):
        await config.update_activity_config(console.svc, tenant=tenant, data=data)
        return "Activity settings saved."

    return await save_form(request, console, "activity", build, save)


@router.post("/settings/notifications")
async def save_notifications(request: Request, console: Console = Signed):

    async def build(form: FormData, tenant):
        errors: dict[str, str] = {}
        prefix = f"{NOTIFY}."
        delay = {
            "isEnabled": checked(form, prefix + "delayConfig.isEnabled"),
            "delaySeconds": whole(form, prefix + "delayConfig.delaySeconds", errors)
        }
        batch = {}
        for scope in ("document", "user"):
            at = f"{prefix}batchConfig.{scope}."
            batch[scope] = {
                "isEnabled": checked(form, at + "isEnabled"),
                "batchWindowSeconds": whole(form, at + "batchWindowSeconds",
                                            errors), "maxActivities": whole(form, at + "maxActivities", errors)
            }
        triggers = {
            "comment": {e: checked(form, f"{prefix}triggers.comment.{e}")
                        for e in COMMENT_EVENTS},
            "huddle": {e: checked(form, f"{prefix}triggers.huddle.{e}")
                       for e in HUDDLE_EVENTS}
        }
        body = {
            "useNotificationService": checked(form, "useNotificationService"),
            NOTIFY: {"triggers": triggers, "delayConfig": delay, "batchConfig": batch}
        }
        try:
            data = validated(NotificationConfigUpdate, body)
        except FormErrors as exc:
            # A field that is not a number already says so; the model's message would only repeat the type.
            raise FormErrors({**exc.errors, **errors}) from None
        if errors:
            raise FormErrors(errors)
        return data

    async def save(tenant, data):
        await config.update_notification_config(console.svc, tenant=tenant, data=data)
        return "Notification settings saved."

    return await save_form(request, console, "notifications", build, save)


async def _public_key(form: FormData) -> str:
    upload = form.get("publicKeyFile")
    if isinstance(upload, UploadFile) and upload.filename:
        content = await upload.read(MAX_PUBLIC_KEY_FILE + 1)
        if len(content) > MAX_PUBLIC_KEY_FILE:
            too_big = f"The file is over {MAX_PUBLIC_KEY_FILE // 1024} KB; a public key is smaller."
            raise FormErrors({"publicKeyFile": too_big})
        try:
            pasted = content.decode("ascii")
        except UnicodeDecodeError:
            raise FormErrors({"publicKeyFile": "Upload a PEM or base64 text file, not binary DER."}) from None
    else:
        pasted = text(form, "publicKey")
    # A PEM file's body is the base64 DER the API takes.
    lines = [line for line in pasted.splitlines() if line.strip() and not line.startswith("-----")]
    return "".join("".join(lines).split())


@router.post("/settings/webhooks")
async def save_webhooks(request: Request, console: Console = Signed):

    async def build(form: FormData, tenant):
        flags = ("isEnabled", "encodeData", "encryptData", "enableDataProtection")
        body: dict[str, Any] = {name: checked(form, name) for name in flags}
        body["publicKey"] = await _public_key(form)
        try:
            return validated(WebhookConfigUpdate, body)
        except FormErrors as exc:
            file = form.get("publicKeyFile")
            uploaded = isinstance(file, UploadFile) and file.filename
            if uploaded and "publicKey" in exc.errors:
                exc.errors["publicKeyFile"] = exc.errors.pop("publicKey")
            raise

    async def save(tenant, data):
        await config.update_webhook_config(console.svc, tenant=tenant, data=data)
        return "Advanced webhook settings saved."

    return await save_form(request, console, "webhooks", build, save)
