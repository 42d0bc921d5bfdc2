"""Notification e-mail: the API key's e-mail service (workspace/emailconfig), the outbox, sending, status, unsubscribe.

A new notification puts one item per recipient who takes e-mail into that user's open e-mail of the organization;
the e-mail goes out when its window (`email_batch_window_s`) ends or it holds MAX_ITEMS notifications. The sweep
hands due e-mails to send jobs; a failed send is tried again on mail.RETRY_S, then recorded `failed`.
"""

import logging
from typing import Any

from collab.config import Settings
from collab.kit.auth import Tenant
from collab.kit.crypto import DecryptError, new_id
from collab.kit.db.pool import Conn
from collab.kit.errors import ApiError, invalid, issue
from collab.kit.jobs import Tx, transaction
from collab.kit.services import Services
from collab.notifications import mail, preferences, slack
from collab.notifications import repository as repo
from collab.notifications.schemas import EmailStatusQuery, UpdateEmailConfig

UNSUBSCRIBE = "/email/unsubscribe"  # the signed link of every e-mail (not an API operation)

log = logging.getLogger("collab.notifications.email")
MAX_ITEMS = 50  # notifications in one e-mail; a full e-mail goes out at once
SWEEP_LIMIT = 200
LEASE_MARGIN_MS = 30_000
MAX_ATTEMPTS = len(mail.RETRY_S) + 1
SECRETS = ("apiKey", "smtpPassword")
# Seeded when the service is first turned on (Velt: the standard comment triggers and the huddle triggers).
DEFAULT_TRIGGERS = {
    "comment_annotation.add": True, "comment.add": True, "comment_annotation.assign": True,
    "comment_annotation.status_change": True, "huddle.create": True, "huddle.join": True
}
# The types that send through the API key's own service; `default` and `custom` use the deployment's server.
OWN_SERVER = ("smtp", "sendgrid")
STATES = ("open", "pending", "sending", "sent", "failed", "skipped", "cancelled")


def _aad(api_key_id: str, name: str) -> str:
    return f"notification-email:{api_key_id}:{name}"


def _masked(last4: str | None) -> str:
    return "" if not last4 else "****" + last4


def view(row: dict[str, Any] | None) -> dict[str, Any]:
    """The e-mail service as workspace/emailconfig answers it; secrets only as `****` and their last 4."""
    row = row or {"use_email_service": False, "config": {}, "api_key_last4": None, "smtp_password_enc": None}
    config = row["config"]
    shown: dict[str, Any] = {
        "type": config.get("type", "default"), "apiKey": _masked(row["api_key_last4"]),
        **{k: config.get(k, "")
           for k in ("fromEmail", "fromCompany", "commentTemplateId", "tagTemplateId")}
    }
    if "triggers" in config:
        shown["triggers"] = config["triggers"]
    for name in ("smtpHost", "smtpPort", "smtpSecurity", "smtpUsername"):
        if name in config:
            shown[name] = config[name]
    if row["smtp_password_enc"] is not None:
        shown["smtpPassword"] = "****"
    answer = {"useEmailService": row["use_email_service"], "emailServiceConfig": shown}
    if row.get("slack_webhook_hint"):
        answer[slack.FIELD] = row["slack_webhook_hint"]  # collab's Slack webhook (ADR 0050), shown once set
    return answer


async def get_config(svc: Services, *, tenant: Tenant) -> dict[str, Any]:
    """The API key's e-mail service."""
    async with svc.pool.connection() as conn:
        return view(await repo.email_config(conn, api_key_id=tenant.api_key_id))


async def update_config(svc: Services, *, tenant: Tenant, data: UpdateEmailConfig) -> dict[str, Any]:
    """Change the e-mail service (Velt's merge and first-enable defaults) and/or the Slack webhook URL; secrets
    stored encrypted. A new Slack URL is checked before the transaction (it may resolve a name)."""
    hook = data.slackWebhookUrl
    if hook and not slack.masked(hook):
        await slack.check(hook, allow_private=svc.settings.webhooks_allow_private_targets)
    async with transaction(svc.pool, svc.redis) as tx:
        stored = await repo.email_config(tx.conn, api_key_id=tenant.api_key_id)
        if data.useEmailService is not None or data.emailServiceConfig is not None:
            stored = await _update_email(svc, tx, tenant=tenant, data=data, stored=stored)
        if hook is not None:
            stored = await slack.configure(tx.conn, svc=svc, api_key_id=tenant.api_key_id, url=hook, stored=stored,
                                           now=svc.now_ms())
        return view(stored)


async def _update_email(svc: Services, tx: Tx, *, tenant: Tenant, data: UpdateEmailConfig,
                        stored: dict[str, Any] | None) -> dict[str, Any]:
    sent = data.emailServiceConfig.model_dump(exclude_none=True) if data.emailServiceConfig else {}
    config = dict(stored["config"]) if stored else {}
    enabling = data.useEmailService is True or sent.get("type") == "custom"
    use = data.useEmailService if data.useEmailService is not None else bool(stored and stored["use_email_service"])
    if enabling and "triggers" not in config:
        config = {"type": "custom", **config, "triggers": dict(DEFAULT_TRIGGERS)}
        use = True if data.useEmailService is None else data.useEmailService
    secrets = {k: sent.pop(k) for k in SECRETS if k in sent}
    if "triggers" in sent:
        sent["triggers"] = {**config.get("triggers", {}), **sent["triggers"]}
    config.update(sent)
    masked = {"apiKey": _masked(stored["api_key_last4"] if stored else None), "smtpPassword": "****"}
    # A secret sent back as shown (masked) keeps the stored one; "" clears it.
    secrets = {k: v for k, v in secrets.items() if v != masked[k]}
    has_key = secrets.get("apiKey") or (bool(stored and stored["api_key_enc"]) and "apiKey" not in secrets)
    await _check(svc, config=config, use=use, has_key=bool(has_key))
    key, password = secrets.get("apiKey"), secrets.get("smtpPassword")
    saved = await repo.save_email_config(
        tx.conn, api_key_id=tenant.api_key_id, use_email_service=use, config=config,
        api_key_enc=svc.keyring.encrypt(key, _aad(tenant.api_key_id, "apiKey")) if key else None,
        api_key_last4=key[-4:] if key else None,
        smtp_password_enc=svc.keyring.encrypt(password, _aad(tenant.api_key_id, "smtpPassword")) if password else None,
        clear_api_key=secrets.get("apiKey") == "", clear_smtp_password=secrets.get("smtpPassword") == "",
        now=svc.now_ms())
    return saved


async def _check(svc: Services, *, config: dict[str, Any], use: bool, has_key: bool) -> None:
    kind = config.get("type", "default")
    if use and kind == "sendgrid" and not has_key:
        raise invalid("Invalid email service configuration: SendGrid needs apiKey.",
                      [issue(["emailServiceConfig", "apiKey"], "SendGrid needs apiKey")])
    if kind == "smtp":
        if not config.get("smtpHost"):
            raise invalid("Invalid email service configuration: smtp needs smtpHost.",
                          [issue(["emailServiceConfig", "smtpHost"], "smtp needs smtpHost")])
        reason = await mail.check_host(config["smtpHost"], config.get("smtpPort", 587),
                                       allow_private=svc.settings.email_allow_private_hosts)
        if reason:
            raise invalid(f"Invalid email service configuration: {reason}",
                          [issue(["emailServiceConfig", "smtpHost"], reason)])


async def enqueue(conn: Conn, *, settings: Settings, now: int, api_key_id: str, organization_id: str,
                  document_id: str | None, notification_id: str, action_types: list[str] | None,
                  emails: dict[str, str | None], involved: list[str], headline: str, body: str) -> int:
    """Queue a notification for the e-mail of each recipient (userId to e-mail, None: look it up) who takes
    e-mail, and for the Slack message of each who takes Slack (notifications/slack.py); `action_types` (a service
    notification's) must include an enabled trigger. The number of e-mails queued."""
    config = await repo.email_config(conn, api_key_id=api_key_id)
    # Slack follows the e-mail service's triggers once they are set, else the ones first enabling it would seed.
    await slack.enqueue(conn, settings=settings, now=now, config=config,
                        triggers=(config["config"].get("triggers") if config else None) or DEFAULT_TRIGGERS,
                        api_key_id=api_key_id, organization_id=organization_id, document_id=document_id,
                        notification_id=notification_id, action_types=action_types, user_ids=sorted(emails),
                        involved=involved, headline=headline, body=body)
    if not config or not config["use_email_service"] or not emails:
        return 0
    triggers = config["config"].get("triggers") or {}
    if action_types is not None and not any(triggers.get(t) is True for t in action_types):
        return 0
    users = await preferences.allowed(conn, api_key_id=api_key_id, organization_id=organization_id,
                                      document_id=document_id, user_ids=emails, involved=involved, channel="email")
    unknown = [u for u in users if not emails.get(u)]
    known = {u: p["email"] for u, p in (await repo.profiles(conn, api_key_id=api_key_id, ids=unknown)).items()}
    since = now - 86_400_000
    over = (await repo.emails_today(conn, api_key_id=api_key_id, since=since) >= settings.email_max_per_day
            or await repo.workspace_emails_today(conn, api_key_id=api_key_id,
                                                 since=since) >= settings.email_max_per_workspace_per_day)
    queued = 0
    for user in users:
        address = mail.addr_spec(emails.get(user) or known.get(user))
        if not address:
            continue  # nobody knows this user's e-mail (or it is not one address): in-app only
        status = "skipped" if over else "open"
        row = await repo.open_email(conn, api_key_id=api_key_id, id=new_id("ne_"), organization_id=organization_id,
                                    user_id=user, email=address, status=status,
                                    due_at=now + settings.email_batch_window_s * 1000, now=now)
        await repo.add_email_item(conn, api_key_id=api_key_id, email_id=row["id"], email=address,
                                  notification_id=notification_id, document_id=document_id, headline=headline,
                                  body=body, max_size=MAX_ITEMS, now=now)
        queued += not over
    return queued


async def sweep(tx: Tx, *, settings: Settings, now: int) -> int:
    """Hand every due e-mail to a send job (leased, so no other sweep takes it); the number handed over."""
    due = await repo.due_emails(tx.conn, now=now, limit=SWEEP_LIMIT)
    lease = int(settings.email_timeout_s * 1000) + LEASE_MARGIN_MS
    for row in due:
        await repo.mark_email_sending(tx.conn, api_key_id=row["api_key_id"], id=row["id"], lease_until=now + lease,
                                      now=now)
        await tx.enqueue("send_notification_email", api_key_id=row["api_key_id"], email_id=row["id"],
                         attempts=row["attempts"])
    return len(due)


async def send(svc: Services, *, api_key_id: str, email_id: str, attempts: int) -> dict[str, Any] | None:
    """Make one attempt at an e-mail and record it: sent, pending again (a retry), or failed. `attempts` is how many
    were made when it was handed out: a job for an attempt already recorded, or for a cancelled e-mail, does nothing."""
    async with svc.pool.connection() as conn:
        claimed = await repo.claim_email(conn, api_key_id=api_key_id, id=email_id, attempts=attempts)
        if claimed is None:
            return None  # sent, cancelled or taken over since the sweep handed it out
        items = await repo.email_items(conn, api_key_id=api_key_id, email_id=email_id)
        config = await repo.email_config(conn, api_key_id=api_key_id)
    now = svc.now_ms()
    key: dict[str, Any] = {"api_key_id": api_key_id, "id": email_id, "attempts": attempts}
    if not items or not config or not config["use_email_service"]:
        async with svc.pool.connection() as conn:
            await repo.finish_email(conn, **key, status="cancelled", provider=None, subject=None,
                                    error="The e-mail service is off." if items else "Nothing to send.", due_at=None,
                                    now=now)
        return {"status": "cancelled"}
    settings, stored = svc.settings, config["config"]
    token = mail.unsubscribe_token(svc.keyring, api_key_id=api_key_id, organization_id=claimed["organization_id"],
                                   user_id=claimed["user_id"])
    provider, subject = stored.get("type", "default"), None
    if provider in OWN_SERVER:
        from_email, reply_to = stored.get("fromEmail") or settings.email_from, None
    else:  # the deployment's server: the operator's address sends; the tenant's is where replies go
        from_email, reply_to = settings.smtp_from or "", mail.addr_spec(stored.get("fromEmail"))
    try:
        if mail.addr_spec(claimed["email"]) is None:  # stored before addresses were checked this strictly
            raise ValueError("the recipient is not one e-mail address")
        out = mail.compose(to=claimed["email"], from_email=from_email, from_name=stored.get("fromCompany") or None,
                           items=items, reply_to=reply_to,
                           unsubscribe_url=f"{settings.base_url()}{UNSUBSCRIBE}?token={token}")
        subject = out.subject
        error = await _deliver(svc, config=config, provider=provider, out=out)
        permanent = False
    except ValueError as exc:  # a message that cannot be built (an address with a line break): no retry mends it
        error, permanent = f"Refused: {exc}"[:500], True
    made = attempts + 1
    if error is None:
        status, due_at = "sent", None
    elif permanent or made >= MAX_ATTEMPTS:
        status, due_at = "failed", None
    else:
        status, due_at = "pending", svc.now_ms() + mail.RETRY_S[made - 1] * 1000
    if error:
        log.warning("notification e-mail %s (key %s) not sent, try %s: %s", email_id, api_key_id, made, error)
    async with svc.pool.connection() as conn:
        await repo.finish_email(conn, **key, status=status, provider=provider, subject=subject, error=error,
                                due_at=due_at, now=svc.now_ms())
    return {"status": status, "error": error}


async def _deliver(svc: Services, *, config: dict[str, Any], provider: str, out: mail.Outgoing) -> str | None:
    settings, stored, api_key_id = svc.settings, config["config"], config["api_key_id"]
    try:
        if provider == "sendgrid":
            if config["api_key_enc"] is None:
                return "No SendGrid apiKey is set."
            key = svc.keyring.decrypt(config["api_key_enc"], _aad(api_key_id, "apiKey"))
            return await mail.send_sendgrid(out, base_url=settings.sendgrid_base_url, api_key=key,
                                            template_id=stored.get("commentTemplateId") or None,
                                            timeout=settings.email_timeout_s)
        if provider == "smtp":
            password = (svc.keyring.decrypt(config["smtp_password_enc"], _aad(api_key_id, "smtpPassword"))
                        if config["smtp_password_enc"] is not None else None)
            return await mail.send_smtp(out, host=stored["smtpHost"], port=stored.get("smtpPort", 587),
                                        security=stored.get("smtpSecurity",
                                                            "starttls"), username=stored.get("smtpUsername"),
                                        password=password, timeout=settings.email_timeout_s,
                                        allow_private=settings.email_allow_private_hosts)
    except DecryptError:
        return "The stored e-mail secret cannot be read; set it again with workspace/emailconfig/update."
    if not settings.smtp_host:
        return "No e-mail server is configured for this service (COLLAB_SMTP_HOST)."
    if mail.addr_spec(settings.smtp_from) is None:
        return "No sender address is configured for this service's e-mail server (COLLAB_SMTP_FROM)."
    # `default` and `custom`: the deployment's own SMTP server, trusted as configured by its operator, sending
    # from the operator's address (out.from_email is COLLAB_SMTP_FROM).
    return await mail.send_smtp(out, host=settings.smtp_host, port=settings.smtp_port, security=settings.smtp_security,
                                username=settings.smtp_username, password=settings.smtp_password,
                                timeout=settings.email_timeout_s, allow_private=True)


async def status(svc: Services, *, tenant: Tenant, data: EmailStatusQuery) -> tuple[dict[str, Any], str]:
    """What happened to the API key's notification e-mails (and, given ownerEmail, Velt's `verified`)."""
    async with svc.pool.connection() as conn:
        config = await repo.email_config(conn, api_key_id=tenant.api_key_id)
        counts = await repo.email_counts(conn, api_key_id=tenant.api_key_id)
        rows = await repo.recent_emails(conn, api_key_id=tenant.api_key_id, user_id=data.userId, status=data.status,
                                        limit=data.pageSize)
        owner = await repo.workspace_owner(conn, workspace_id=tenant.workspace_id) if data.ownerEmail else None
        slack_status = await slack.status(conn, api_key_id=tenant.api_key_id, config=config, user_id=data.userId,
                                          state=data.status, limit=data.pageSize)
    answer: dict[str, Any] = {
        "useEmailService": bool(config and config["use_email_service"]),
        "type": (config["config"].get("type", "default") if config else "default"),
        "counts": {s: counts.get(s, 0)
                   for s in STATES}, "emails": [_email_view(r) for r in rows], "slack": slack_status
    }
    message = "Email status retrieved successfully."
    if data.ownerEmail is not None:
        answer["verified"] = owner is not None and owner.lower() == data.ownerEmail.strip().lower()
        message = "Email verified" if answer["verified"] else "Email not yet verified"
    return answer, message


def _email_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"], "organizationId": row["organization_id"], "userId": row["user_id"], "to": row["email"],
        "status": row["status"], "notificationIds": list(row["notification_ids"]), "subject": row["subject"],
        "provider": row["provider"], "attempts": row["attempts"], "lastError": row["last_error"],
        "nextAttemptAt": row["due_at"] if row["status"] in ("open", "pending") else None, "sentAt": row["sent_at"],
        "createdAt": row["created_at"]
    }


async def unsubscribe(svc: Services, *, token: str) -> None:
    """Turn e-mail off for the user an unsubscribe link names; INVALID_ARGUMENT for a link this service did not sign."""
    found = mail.read_unsubscribe_token(svc.keyring, token)
    if found is None:
        raise ApiError("INVALID_ARGUMENT", "This unsubscribe link is not valid.")
    api_key_id, organization_id, user_id = found
    now = svc.now_ms()
    async with transaction(svc.pool, svc.redis) as tx:
        if await repo.email_config(tx.conn, api_key_id=api_key_id) is None:
            raise ApiError("INVALID_ARGUMENT", "This unsubscribe link is no longer valid.")
        await repo.email_off(tx.conn, api_key_id=api_key_id, organization_id=organization_id, user_id=user_id, now=now)
        await repo.cancel_emails(tx.conn, api_key_id=api_key_id, organization_id=organization_id, user_ids=[user_id],
                                 reason="The user unsubscribed.", now=now)
