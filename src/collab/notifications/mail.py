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
import socket
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formataddr, make_msgid
from typing import Any

import httpx

from collab.kit import safety, threads
from collab.kit.crypto import Keyring

MAX_SUBJECT = 200  # characters of a subject line
MAX_ITEM_BODY = 2_000  # characters of one notification's body in an e-mail
RETRY_S = (60, 300, 1_800, 7_200)  # waits before the 2nd..5th attempt; then the e-mail is `failed`
MAX_ADDRESS = 254  # characters of one e-mail address (RFC 5321's path limit less its brackets)
MAX_ADDRESSES_TRIED = 3  # of a resolved SMTP host's (checked) addresses, when the first cannot be reached
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# The domain of a recipient or sender: two or more DNS labels, the last one starting with a letter (no IP, no bare
# host such as `localhost`).
_DOMAIN = re.compile(r"^(?=.{3,253}$)(?:(?!-)[A-Za-z0-9-]{1,63}(?<!-)\.)+[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


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
    reply_to: str | None = None

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


def compose(*, to: str, from_email: str, from_name: str | None, items: list[dict[str, Any]], unsubscribe_url: str,
            reply_to: str | None = None) -> Outgoing:
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
                    unsubscribe_url=unsubscribe_url, items=items, reply_to=reply_to)


def as_message(out: Outgoing) -> EmailMessage:
    """The MIME message of an e-mail (SMTP)."""
    message = EmailMessage()
    message["From"] = formataddr((out.from_name or "", out.from_email)) if out.from_name else out.from_email
    message["To"] = out.to
    if out.reply_to:
        message["Reply-To"] = out.reply_to
    message["Subject"] = out.subject
    message["Message-ID"] = make_msgid(domain=Address(addr_spec=out.from_email).domain or None)
    for name, value in out.headers.items():
        message[name] = value
    message.set_content(out.text)
    message.add_alternative(out.html, subtype="html")
    return message


def addr_spec(value: Any) -> str | None:
    """`value` when it is exactly one addr-spec (`name@example.com`): it parses back to itself (no display name,
    list, group, comment or space), has a local part and a domain of dotted DNS labels (not an address literal, not a
    bare name such as `postmaster` or `root@localhost`); None otherwise."""
    if not isinstance(value, str) or not 3 <= len(value) <= MAX_ADDRESS or not value.isascii():
        return None
    if any(c.isspace() or not c.isprintable() for c in value):
        return None
    try:
        parsed = Address(addr_spec=value)
    except Exception:  # the parser raises ValueError, IndexError and its own defect and parse errors
        return None
    if parsed.addr_spec != value or not parsed.username or not _DOMAIN.match(parsed.domain):
        return None
    return value


class _Pinned(smtplib.SMTP):
    """SMTP to a checked address: the socket goes to `address` (never to what the name resolves to now), while
    smtplib keeps the server's name, so TLS (from the first byte with `tls`, or after STARTTLS) checks the
    certificate against the name and sends it as SNI."""

    def __init__(self, name: str, port: int, *, address: str, timeout: float, tls: ssl.SSLContext | None = None):
        self.address, self.tls = address, tls
        super().__init__(name, port, timeout=timeout)

    def connect(self, host: str = "localhost", port: int = 0, source_address: Any = None) -> tuple[int, bytes]:
        """Connect to the checked address and read the greeting (smtplib calls this with the name)."""
        sock = socket.create_connection((self.address, port), self.timeout)
        if self.tls is not None:
            try:
                sock = self.tls.wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        self.sock, self.file = sock, None
        return self.getreply()


def _smtp_send(message: EmailMessage, *, name: str, addresses: list[str], port: int, security: str,
               username: str | None, password: str | None, timeout: float, sender: str, recipient: str) -> None:
    context = ssl.create_default_context()
    smtp: smtplib.SMTP | None = None
    failure: OSError | None = None
    for address in addresses[:MAX_ADDRESSES_TRIED]:  # each one checked; the next only when this one cannot be reached
        try:
            smtp = _Pinned(name, port, address=address, timeout=timeout, tls=context if security == "tls" else None)
            break
        except (ssl.SSLError, ssl.CertificateError, smtplib.SMTPException):
            raise
        except OSError as exc:
            failure = exc
    if smtp is None:
        raise failure or OSError("no address to connect to")
    with smtp:
        if security == "starttls":
            smtp.starttls(context=context)
        if username:
            smtp.login(username, password or "")
        smtp.send_message(message, from_addr=sender, to_addrs=[recipient])


def failure_category(exc: BaseException) -> str:
    """What `lastError` says of a failed SMTP exchange: a category and at most the reply's code, never the server's
    own words (a banner or an error text could be anything the address answers)."""
    code = getattr(exc, "smtp_code", None)
    shown = f" (code {code})" if isinstance(code, int) and 200 <= code <= 599 else ""
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return f"Auth: the SMTP server refused the login{shown}."
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "Rejected: the SMTP server refused the recipient."
    if isinstance(exc, smtplib.SMTPSenderRefused):
        return f"Rejected: the SMTP server refused the sender{shown}."
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        return "TLS: the SMTP server does not offer STARTTLS (or the login it was asked for)."
    if isinstance(exc, smtplib.SMTPServerDisconnected):
        if isinstance(exc.__context__, TimeoutError):  # smtplib reports a read that timed out as a disconnect
            return "Timed out: the SMTP server did not answer in time."
        return "Rejected: the SMTP server closed the connection."
    if isinstance(exc, smtplib.SMTPResponseException):
        return f"Rejected: the SMTP server refused the e-mail{shown}."
    if isinstance(exc, (ssl.SSLError, ssl.CertificateError)):
        return "TLS: the secure connection to the SMTP server failed (handshake or certificate)."
    if isinstance(exc, TimeoutError):
        return "Timed out: the SMTP server did not answer in time."
    if isinstance(exc, ConnectionRefusedError):
        return "Refused: the SMTP server's address refused the connection."
    if isinstance(exc, OSError):
        return "Unreachable: the SMTP server could not be reached."
    return "Rejected: the SMTP exchange failed."


Resolver = Callable[[str, int], Awaitable[list[safety.Address]]]


async def send_smtp(out: Outgoing, *, host: str, port: int, security: str, username: str | None, password: str | None,
                    timeout: float, allow_private: bool, resolver: Resolver | None = None) -> str | None:
    """Send over SMTP in a worker thread (smtplib blocks), bounded by `timeout`; None when it went out. The host is
    resolved once, its addresses checked (unless `allow_private`), and the connection made to a checked address."""
    recipient, sender = addr_spec(out.to), addr_spec(out.from_email)
    if recipient is None:
        return "Refused: the recipient is not one e-mail address."
    if sender is None:
        return "Refused: the sender is not one e-mail address."
    found = await _addresses(host, port, allow_private=allow_private, resolver=resolver or safety.resolve)
    if isinstance(found, str):
        return found
    name, addresses = found
    try:
        await asyncio.wait_for(
            threads.run("smtp", _smtp_send, as_message(out), name=name, addresses=addresses, port=port,
                        security=security, username=username, password=password, timeout=timeout, sender=sender,
                        recipient=recipient), timeout + 5)
    except (smtplib.SMTPException, OSError, TimeoutError, ssl.SSLError) as exc:
        return failure_category(exc)
    return None


async def _addresses(host: str, port: int, *, allow_private: bool, resolver: Resolver) -> tuple[str, list[str]] | str:
    """(the host's name, the addresses to connect to) resolved once and checked, or why the host is refused."""
    try:
        name = safety.host_name(host)
    except safety.Refused as exc:
        return f"Refused: {exc}"
    if not allow_private and (name == "localhost" or name.endswith(".localhost")):
        return f"Refused: {name} is a loopback name."
    try:
        addresses = await resolver(name, port)
    except Exception:  # any resolver failure (OSError, a timeout, an IDNA error) is one answer: it does not resolve
        return f"Refused: {name} does not resolve."
    if not addresses:
        return f"Refused: {name} does not resolve."
    bad = [a for a in addresses if safety.refused_address(a)] if not allow_private else []
    if bad:
        return f"Refused: {name} resolves to a private or reserved address ({bad[0]})."
    return name, [str(a) for a in addresses]


async def check_host(host: str, port: int, *, allow_private: bool) -> str | None:
    """Why an API key's own SMTP host is refused at configuration time, or None: it must be a DNS name or an IP
    literal, resolve, and (unless `allow_private`) only to public addresses."""
    found = await _addresses(host, port, allow_private=allow_private, resolver=safety.resolve)
    return found if isinstance(found, str) else None


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
