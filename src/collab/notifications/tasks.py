"""Jobs of notifications: the cron that flushes due batches (the engine is notifications/engine.py), and notification
e-mail and Slack: the sweep cron that hands due e-mails and Slack messages out, and the jobs that send one
(notifications/email.py, notifications/slack.py); the workspace owner's login e-mail (notifications/owner_mail.py)."""

from collab.kit.jobs import job, transaction
from collab.kit.services import Services
from collab.notifications import email, owner_mail, slack
from collab.notifications.engine import FLUSH_LIMIT, flush


async def flush_due(ctx: dict) -> int:
    """Cron: flush every tenant's due batches, a few hundred per transaction, each batch in its own savepoint."""
    svc: Services = ctx["svc"]
    total = 0
    while True:
        async with svc.pool.connection() as conn:
            async with conn.transaction():
                count = await flush(conn, svc=svc)
        total += count
        if count < FLUSH_LIMIT:
            return total


async def email_sweep(ctx: dict) -> int:
    """Cron: queue a send job for every e-mail and Slack message whose window or retry time has come; the number
    queued."""
    svc: Services = ctx["svc"]
    async with transaction(svc.pool, svc.redis) as tx:
        count = await email.sweep(tx, settings=svc.settings, now=svc.now_ms())
    async with transaction(svc.pool, svc.redis) as tx:
        return count + await slack.sweep(tx, settings=svc.settings, now=svc.now_ms())


# One try per job: a failed send is retried by the e-mail's own schedule (mail.RETRY_S), which the status shows.
@job(timeout=lambda settings: settings.email_timeout_s + 10, max_tries=1)
async def send_notification_email(ctx: dict, *, api_key_id: str, email_id: str, attempts: int = 0) -> dict | None:
    """Make one attempt at a notification e-mail (the one after `attempts` made) and record its outcome."""
    return await email.send(ctx["svc"], api_key_id=api_key_id, email_id=email_id, attempts=attempts)


# One try per job, as e-mail: a failed post is retried by the message's own schedule (mail.RETRY_S).
@job(timeout=lambda settings: settings.slack_timeout_s + 10, max_tries=1)
async def send_notification_slack(ctx: dict, *, api_key_id: str, message_id: str, attempts: int = 0) -> dict | None:
    """Make one attempt at a notification Slack message (the one after `attempts` made) and record its outcome."""
    return await slack.send(ctx["svc"], api_key_id=api_key_id, message_id=message_id, attempts=attempts)


# Three tries, a backoff between them (the SMTP server's refusal raises), each within COLLAB_EMAIL_TIMEOUT_S.
@job(timeout=lambda settings: settings.email_timeout_s + 10, max_tries=3)
async def send_login_link(ctx: dict, *, email: str, continue_url: str, api_key_id: str | None = None) -> dict:
    """Send a workspace owner's login e-mail (workspace/email/send-login-link); nothing for another address."""
    return await owner_mail.send_login_link(ctx["svc"], email=email, continue_url=continue_url)
