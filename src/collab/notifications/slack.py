"""Notifications to Slack: the API key's Slack incoming webhook (`slackWebhookUrl` of workspace/emailconfig), the
messages batched for it, sending, status (ADR 0050, "Slack").

Velt documents the `slack` channel of notifications/config (ALL / MINE / NONE) and leaves the integration to the
customer; collab posts to one incoming webhook per API key. A notification puts one item per recipient whose Slack
choice takes it into that user's open Slack message of the organization; the message goes out when its window
(`email_batch_window_s`, the e-mail one) ends or it holds MAX_ITEMS notifications. The e-mail sweep hands due
messages to send jobs; a failed post is tried again on mail.RETRY_S, then recorded `failed`. The webhook URL is
sealed (kit/crypto) and checked like a webhook endpoint (kit/safety: https, public addresses, pinned).
"""

import asyncio
import json
import logging
import re
from typing import Any

import httpx

from collab.config import Settings
from collab.kit import safety
from collab.kit.crypto import DecryptError, new_id
from collab.kit.db.pool import Conn
from collab.kit.errors import invalid, issue
from collab.kit.jobs import Tx
from collab.kit.services import Services
from collab.notifications import mail, preferences
from collab.notifications import repository as repo

log = logging.getLogger("collab.notifications.slack")
MAX_ITEMS = 50  # notifications in one Slack message; a full one goes out at once
MAX_ITEM_BODY = 1_000  # characters of one notification's body in a message
MAX_TEXT = 38_000  # characters of a message's text (Slack truncates past 40,000)
SWEEP_LIMIT = 200
LEASE_MARGIN_MS = 30_000
MAX_ATTEMPTS = len(mail.RETRY_S) + 1
EXCERPT_BYTES = 200  # of Slack's answer, read to name its error code
STATES = ("open", "pending", "sending", "sent", "failed", "skipped", "cancelled")
FIELD = "slackWebhookUrl"
_MASK = "/****"
_SLACK_ERROR = re.compile(r"^[a-z_]{1,60}$")  # Slack's error answers are codes such as `no_service`


def aad(api_key_id: str) -> str:
    return f"notification-slack:{api_key_id}:webhook"


def hint(url: str) -> str:
    """How a stored webhook URL is shown: scheme and host, then `****` and its last 4 characters."""
    parsed = safety.parse(url).url
    return f"{parsed.scheme}://{parsed.netloc.decode('ascii')}{_MASK}{url[-4:]}"


def escape(text: str) -> str:
    """Text as Slack takes it in a message: `&`, `<` and `>` escaped (Slack's rules), nothing else changed."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def compose(items: list[dict[str, Any]], *, recipient: str) -> str:
    """The text of the Slack message that reports some notifications (one or a batch) for one user."""
    head = (f"New notification for {recipient}"
            if len(items) == 1 else f"{len(items)} new notifications for {recipient}")
    parts = [f"*{escape(head)}*"]
    for item in items:
        body = item["body"] if len(item["body"]) <= MAX_ITEM_BODY else item["body"][:MAX_ITEM_BODY - 1] + "…"
        parts.append(f"• *{escape(item['headline'])}*" + (f"\n{escape(body)}" if body else ""))
    text = "\n".join(parts)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _refused(url: str, *, allow_private: bool) -> str | None:
    """Why a URL cannot be posted to before any lookup (it must parse and, unless private targets are allowed, be
    https), or None."""
    try:
        parsed = safety.parse(url)
    except safety.Refused as exc:
        return str(exc)
    if not allow_private and parsed.url.scheme != "https":
        return "The Slack webhook URL must use https."
    return None


async def check(url: str, *, allow_private: bool) -> None:
    """INVALID_ARGUMENT on `slackWebhookUrl` when the URL is refused (webhooks' SSRF guard and https)."""
    reason = _refused(url, allow_private=allow_private) or await safety.check_registration(
        url, allow_private=allow_private)
    if reason:
        raise invalid(f"Invalid Slack webhook URL: {reason}", [issue([FIELD], reason)])


def masked(url: str) -> bool:
    """Whether `url` is a stored URL as shown (sent back unchanged)."""
    return _MASK in url


async def configure(conn: Conn, *, svc: Services, api_key_id: str, url: str, stored: dict[str, Any] | None,
                    now: int) -> dict[str, Any]:
    """Store the API key's webhook URL sealed (already checked by `check`); the value shown keeps it, "" clears it."""
    if masked(url):
        if stored is None or stored.get("slack_webhook_hint") != url:
            raise invalid("Invalid Slack webhook URL: send the whole URL (only the stored one comes back as shown).",
                          [issue([FIELD], "send the whole URL")])
        return stored
    if url == "":
        return await repo.save_slack_webhook(conn, api_key_id=api_key_id, webhook_enc=None, webhook_hint=None, now=now)
    return await repo.save_slack_webhook(conn, api_key_id=api_key_id,
                                         webhook_enc=svc.keyring.encrypt(url, aad(api_key_id)), webhook_hint=hint(url),
                                         now=now)


async def enqueue(conn: Conn, *, settings: Settings, now: int, config: dict[str, Any] | None, triggers: dict[str, Any],
                  api_key_id: str, organization_id: str, document_id: str | None, notification_id: str,
                  action_types: list[str] | None, user_ids: list[str], involved: list[str], headline: str,
                  body: str) -> int:
    """Queue a notification for the Slack message of each recipient whose Slack choice takes it (unset is NONE);
    `action_types` (a service notification's) must include an enabled trigger. The number queued."""
    if not config or config.get("slack_webhook_enc") is None or not user_ids:
        return 0
    if action_types is not None and not any(triggers.get(t) is True for t in action_types):
        return 0
    users = await preferences.allowed(conn, api_key_id=api_key_id, organization_id=organization_id,
                                      document_id=document_id, user_ids=user_ids, involved=involved, channel="slack")
    if not users:
        return 0
    over = await repo.slack_today(conn, api_key_id=api_key_id, since=now - 86_400_000) >= settings.slack_max_per_day
    status = "skipped" if over else "open"
    for user in users:
        row = await repo.open_slack(conn, api_key_id=api_key_id, id=new_id("ns_"), organization_id=organization_id,
                                    user_id=user, status=status, due_at=now + settings.email_batch_window_s * 1000,
                                    now=now)
        await repo.add_slack_item(conn, api_key_id=api_key_id, message_id=row["id"], notification_id=notification_id,
                                  document_id=document_id, headline=headline, body=body, max_size=MAX_ITEMS, now=now)
    return 0 if over else len(users)


async def sweep(tx: Tx, *, settings: Settings, now: int) -> int:
    """Hand every due Slack message to a send job (leased, so no other sweep takes it); the number handed over."""
    due = await repo.due_slack(tx.conn, now=now, limit=SWEEP_LIMIT)
    lease = int(settings.slack_timeout_s * 1000) + LEASE_MARGIN_MS
    for row in due:
        await repo.mark_slack_sending(tx.conn, api_key_id=row["api_key_id"], id=row["id"], lease_until=now + lease,
                                      now=now)
        await tx.enqueue("send_notification_slack", api_key_id=row["api_key_id"], message_id=row["id"],
                         attempts=row["attempts"])
    return len(due)


async def send(svc: Services, *, api_key_id: str, message_id: str, attempts: int) -> dict[str, Any] | None:
    """Make one attempt at a Slack message and record it: sent, pending again (a retry), or failed. A job for an
    attempt already recorded, or for a cancelled message, does nothing. No connection is held while it posts."""
    async with svc.pool.connection() as conn:
        claimed = await repo.claim_slack(conn, api_key_id=api_key_id, id=message_id, attempts=attempts)
        if claimed is None:
            return None
        items = await repo.slack_items(conn, api_key_id=api_key_id, message_id=message_id)
        config = await repo.email_config(conn, api_key_id=api_key_id)
        profile = (await repo.profiles(conn, api_key_id=api_key_id, ids=[claimed["user_id"]])).get(claimed["user_id"])
    key: dict[str, Any] = {"api_key_id": api_key_id, "id": message_id, "attempts": attempts}
    if not items or not config or config.get("slack_webhook_enc") is None:
        async with svc.pool.connection() as conn:
            await repo.finish_slack(conn, **key, status="cancelled", due_at=None, now=svc.now_ms(),
                                    error="No Slack webhook is set." if items else "Nothing to send.")
        return {"status": "cancelled"}
    try:
        url: str | None = svc.keyring.decrypt(config["slack_webhook_enc"], aad(api_key_id))
    except DecryptError:
        url = None
    if url is None:
        error: str | None = ("The stored Slack webhook URL cannot be read; set it again with "
                             "workspace/emailconfig/update.")
    else:
        recipient = (profile or {}).get("name") or claimed["user_id"]
        error = await post(url, text=compose(items, recipient=recipient), timeout=svc.settings.slack_timeout_s,
                           allow_private=svc.settings.webhooks_allow_private_targets)
    made = attempts + 1
    if error is None:
        status, due_at = "sent", None
    elif made >= MAX_ATTEMPTS:
        status, due_at = "failed", None
    else:
        status, due_at = "pending", svc.now_ms() + mail.RETRY_S[made - 1] * 1000
    if error:
        log.warning("notification Slack message %s (key %s) not sent, try %s: %s", message_id, api_key_id, made, error)
    async with svc.pool.connection() as conn:
        await repo.finish_slack(conn, **key, status=status, error=error, due_at=due_at, now=svc.now_ms())
    return {"status": status, "error": error}


async def post(url: str, *, text: str, timeout: float, allow_private: bool) -> str | None:
    """POST Slack's incoming-webhook JSON (`{"text": ...}`) to the pinned, checked address, redirects not followed,
    within `timeout`; None when Slack took it (2xx), else why not (a category, a status code and Slack's error
    code, never the answer's free text)."""
    reason = _refused(url, allow_private=allow_private)
    if reason:
        return f"Refused: {reason}"
    try:
        target = await safety.pin(url, allow_private=allow_private)
        # trust_env off: a proxy from the environment would connect somewhere that was not checked.
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout) as client:
            async with asyncio.timeout(timeout):
                request = client.build_request("POST", target.url, content=json.dumps({"text": text}).encode(),
                                               headers={"content-type": "application/json",
                                                        **target.headers}, extensions=target.extensions)
                response = await client.send(request, stream=True)
                try:
                    excerpt = b""
                    async for chunk in response.aiter_raw():
                        excerpt += chunk
                        if len(excerpt) >= EXCERPT_BYTES:
                            break
                finally:
                    await response.aclose()
    except safety.Refused as exc:
        return f"Refused: {exc}"[:500]
    except (TimeoutError, httpx.TimeoutException):
        return "Timed out: the Slack webhook did not answer in time."
    except (httpx.HTTPError, OSError):
        return "Unreachable: the Slack webhook could not be reached."
    except (httpx.InvalidURL, ValueError):
        return "Refused: the Slack webhook URL cannot be used."
    if 200 <= response.status_code < 300:
        return None
    word = excerpt[:EXCERPT_BYTES].decode("ascii", "replace").strip()
    shown = f" ({word})" if _SLACK_ERROR.match(word) else ""
    return f"Rejected: the Slack webhook answered {response.status_code}{shown}."


async def status(conn: Conn, *, api_key_id: str, config: dict[str, Any] | None, user_id: str | None, state: str | None,
                 limit: int) -> dict[str, Any]:
    """What happened to the API key's Slack messages (workspace/email/status's `slack`)."""
    counts = await repo.slack_counts(conn, api_key_id=api_key_id)
    rows = await repo.recent_slack(conn, api_key_id=api_key_id, user_id=user_id, status=state, limit=limit)
    return {
        "configured": bool(config and config.get("slack_webhook_enc") is not None),
        "counts": {s: counts.get(s, 0)
                   for s in STATES}, "messages": [_view(r) for r in rows]
    }


def _view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"], "organizationId": row["organization_id"], "userId": row["user_id"], "status": row["status"],
        "notificationIds": list(row["notification_ids"]), "attempts": row["attempts"], "lastError": row["last_error"],
        "nextAttemptAt": row["due_at"] if row["status"] in ("open", "pending") else None, "sentAt": row["sent_at"],
        "createdAt": row["created_at"]
    }
