"""Mail servers for tests: a real SMTP server (aiosmtpd) and a fake SendGrid, both on 127.0.0.1."""

import json
import socket
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class Received:
    """One message as the SMTP server took it."""

    sender: str
    recipients: list[str]
    message: EmailMessage

    def text(self) -> str:
        """The plain-text part."""
        part = self.message.get_body(preferencelist=("plain", ))
        return part.get_content() if part is not None else ""


class _Handler:

    def __init__(self, box: "Mailbox"):
        self.box = box

    async def handle_DATA(self, server, session, envelope):
        parsed = message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
        self.box.messages.append(Received(envelope.mail_from, list(envelope.rcpt_tos), parsed))
        return "250 OK"


class Mailbox:
    """An SMTP server on 127.0.0.1 that keeps what it receives; with `login`, it asks for that user and password."""

    def __init__(self, *, login: tuple[str, str] | None = None, host: str = "127.0.0.1", port: int | None = None):
        self.messages: list[Received] = []
        self.port = port or _free_port(host)
        self.login = login
        kwargs: dict[str, Any] = {}
        if login is not None:
            kwargs = {"authenticator": self._authenticate, "auth_require_tls": False, "auth_required": True}
        self.controller = Controller(_Handler(self), hostname=host, port=self.port, **kwargs)

    def _authenticate(self, server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data,
                        LoginPassword) and self.login is not None and (auth_data.login.decode(),
                                                                       auth_data.password.decode()) == self.login
        return AuthResult(success=ok)

    def start(self) -> "Mailbox":
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()


@dataclass
class SendGridCall:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeSendGrid:
    """SendGrid's v3 mail/send on 127.0.0.1: records each call and answers `status` (202 as SendGrid does)."""

    status: int = 202
    calls: list[SendGridCall] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "FakeSendGrid":
        fake = self

        class Handler(BaseHTTPRequestHandler):

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.calls.append(
                    SendGridCall(self.path, {k.lower(): v
                                             for k, v in self.headers.items()}, json.loads(raw or b"null")))
                self.send_response(fake.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
