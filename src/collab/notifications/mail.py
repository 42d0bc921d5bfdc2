"""Sending notification e-mails: the message (text, HTML, List-Unsubscribe), SMTP in a thread, SendGrid over HTTP.

Each sender answers None when the e-mail went out, else the reason it did not (shown by workspace/email/status);
nothing here raises for a failed send, so a send job always records its outcome.
"""

import asyncio
import base64
import html
import json
import re
import smtplib
import ssl
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formataddr, make_msgid
from typing import Any

import httpx

from collab.kit.crypto import Keyring
from collab.webhooks import safety

MAX_SUBJECT = 200  # characters of a subject line
MAX_ITEM_BODY = 2_000  # characters of one notification's body in an e-mail
RETRY_S = (60, 300, 1_800, 7_200)  # waits before the 2nd..5th attempt; then the e-mail is `failed`
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass
class Outgoing:
    """One e-mail as both senders take it."""

    to: str
    from_email: str
    from_name: str | None
    subject: str
    text: str
    html: str
    unsubscribe_url: str
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        """RFC 8058 one-click unsubscribe: mail clients show an unsubscribe button and POST to the link."""
        return {"List-Unsubscribe": f"<{self.unsubscribe_url}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}


def _who(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or value.get("email") or value.get("userId") or "Someone")
    return str(value) if value is not None else ""


def render(template: str, data: dict[str, Any] | None, action_user: dict[str, Any] | None) -> str:
    """A headline template with its placeholders filled (`{actionUser}` by name); unknown ones stay as written."""
    values = {**(data or {})}
    values.setdefault("actionUser", action_user)
    return _PLACEHOLDER.sub(lambda m: _who(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def compose(*, to: str, from_email: str, from_name: str | None, items: list[dict[str, Any]],
            unsubscribe_url: str) -> Outgoing:
    """The e-mail that reports some notifications (one or a batch) to one user."""
    subject = items[0]["headline"] if len(items) == 1 else f"You have {len(items)} new notifications"
    subject = _clip(" ".join(subject.split()) or "New notification", MAX_SUBJECT)
    text_parts, html_parts = [], []
    for item in items:
        body = _clip(item["body"], MAX_ITEM_BODY)
        text_parts.append(item["headline"] + ("\n" + body if body else ""))
        html_parts.append(f"<p><strong>{html.escape(item['headline'])}</strong>" +
                          (f"<br>{html.escape(body)}" if body else "") + "</p>")
    footer = f"You get these e-mails for your notifications. Unsubscribe: {unsubscribe_url}"
    text = "\n\n".join(text_parts) + "\n\n--\n" + footer + "\n"
    page = ("<html><body>" + "".join(html_parts) + f'<hr><p><a href="{html.escape(unsubscribe_url)}">Unsubscribe'
            "</a> from these e-mails.</p></body></html>")
    return Outgoing(to=to, from_email=from_email, from_name=from_name, subject=subject, text=text, html=page,
                    unsubscribe_url=unsubscribe_url, items=items)


def as_message(out: Outgoing) -> EmailMessage:
    """The MIME message of an e-mail (SMTP)."""
    message = EmailMessage()
    message["From"] = formataddr((out.from_name or "", out.from_email)) if out.from_name else out.from_email
    message["To"] = out.to
    message["Subject"] = out.subject
    message["Message-ID"] = make_msgid(domain=Address(addr_spec=out.from_email).domain or None)
    for name, value in out.headers.items():
        message[name] = value
    message.set_content(out.text)
    message.add_alternative(out.html, subtype="html")
    return message


def _smtp_send(message: EmailMessage, *, host: str, port: int, security: str, username: str | None,
               password: str | None, timeout: float) -> None:
    context = ssl.create_default_context()
    smtp: smtplib.SMTP = (smtplib.SMTP_SSL(host, port, timeout=timeout, context=context)
                          if security == "tls" else smtplib.SMTP(host, port, timeout=timeout))
    with smtp:
        if security == "starttls":
            smtp.starttls(context=context)
        if username:
            smtp.login(username, password or "")
        smtp.send_message(message)


async def send_smtp(out: Outgoing, *, host: str, port: int, security: str, username: str | None, password: str | None,
                    timeout: float, allow_private: bool) -> str | None:
    """Send over SMTP in a worker thread (smtplib blocks), bounded by `timeout`; None when it went out."""
    try:
        if not allow_private:
            safety_error = await _refused(host, port)
            if safety_error:
                return safety_error
        await asyncio.wait_for(
            asyncio.to_thread(_smtp_send, as_message(out), host=host, port=port, security=security, username=username,
                              password=password, timeout=timeout), timeout + 5)
    except smtplib.SMTPAuthenticationError as exc:
        return f"SMTP authentication refused ({exc.smtp_code})"
    except smtplib.SMTPRecipientsRefused as exc:
        return f"SMTP server refused the recipient: {_first(exc.recipients)}"[:500]
    except smtplib.SMTPResponseException as exc:
        return f"SMTP error {exc.smtp_code}: {exc.smtp_error!r}"[:500]
    except (smtplib.SMTPException, OSError, TimeoutError, ssl.SSLError) as exc:
        kind = "Timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
        return f"{kind}: {exc}"[:500]
    return None


def _first(recipients: Any) -> str:
    for address, (code, reply) in dict(recipients).items():
        return f"{address} ({code})"
    return ""


async def _refused(host: str, port: int) -> str | None:
    """Why an SMTP host may not be used (a private or loopback address), or None."""
    bare = host.strip("[]")
    if bare == "localhost" or bare.endswith(".localhost"):
        return f"Refused: {host} is a loopback name."
    try:
        addresses = await safety.resolve(bare, port)
    except (OSError, TimeoutError) as exc:
        return f"Refused: {host} does not resolve ({exc})"[:500]
    bad = [a for a in addresses if safety.refused_address(a)]
    return f"Refused: {host} resolves to a private or reserved address ({bad[0]})." if bad else None


async def check_host(host: str, port: int, *, allow_private: bool) -> str | None:
    """Why an API key's own SMTP host is refused at configuration time, or None."""
    return None if allow_private else await _refused(host, port)


def sendgrid_body(out: Outgoing, *, template_id: str | None) -> dict[str, Any]:
    """SendGrid's v3 mail/send request for an e-mail (a dynamic template when the config names one)."""
    sender: dict[str, Any] = {"email": out.from_email, **({"name": out.from_name} if out.from_name else {})}
    personalization: dict[str, Any] = {"to": [{"email": out.to}]}
    body: dict[str, Any] = {"personalizations": [personalization], "from": sender, "headers": out.headers}
    if template_id:
        body["template_id"] = template_id
        personalization["dynamic_template_data"] = {
            "subject": out.subject, "unsubscribeUrl": out.unsubscribe_url,
            "notifications": [{"headline": i["headline"], "body": i["body"]} for i in out.items]
        }
    else:
        body["subject"] = out.subject
        body["content"] = [{"type": "text/plain", "value": out.text}, {"type": "text/html", "value": out.html}]
    return body


async def send_sendgrid(out: Outgoing, *, base_url: str, api_key: str, template_id: str | None,
                        timeout: float) -> str | None:
    """POST to SendGrid's mail/send; None when it took the e-mail (2xx)."""
    try:
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=timeout) as client:
            response = await client.post(
                base_url.rstrip("/") + "/v3/mail/send", content=json.dumps(sendgrid_body(out, template_id=template_id)),
                headers={"authorization": f"Bearer {api_key}", "content-type": "application/json"})
    except httpx.HTTPError as exc:
        kind = "Timed out" if isinstance(exc, httpx.TimeoutException) else type(exc).__name__
        return f"{kind}: {exc}"[:500]
    if 200 <= response.status_code < 300:
        return None
    return f"SendGrid answered {response.status_code}: {response.text[:300]}"


# One-click unsubscribe links: the API key, organization and user, signed with the service's keyring.


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def unsubscribe_token(keyring: Keyring, *, api_key_id: str, organization_id: str, user_id: str) -> str:
    """A token that turns this user's e-mail off in this organization, and nothing else."""
    payload = _b64(json.dumps([api_key_id, organization_id, user_id], separators=(",", ":")).encode())
    return payload + "." + _b64(keyring.sign(b"unsubscribe\x00" + payload.encode()))


def read_unsubscribe_token(keyring: Keyring, token: str) -> tuple[str, str, str] | None:
    """(api key, organization, user) of a token this service signed; None for anything else."""
    try:
        payload, signature = token.split(".")
        if not keyring.signed(b"unsubscribe\x00" + payload.encode(), _unb64(signature)):
            return None
        values = json.loads(_unb64(payload))
    except (ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(values, list) and len(values) == 3 and all(isinstance(v, str) for v in values)):
        return None
    return values[0], values[1], values[2]
