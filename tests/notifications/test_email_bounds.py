"""What a tenant can make the e-mail service do: the deployment's server sends from the operator's address to one
addr-spec per e-mail, within a per-workspace daily cap; an SMTP host is resolved once and the connection goes to the
checked address; `lastError` names a category; a malformed `smtpHost` is INVALID_ARGUMENT, never a 500."""

import asyncio
import ipaddress
import socket
import socketserver
import threading
import warnings

import pytest
from velt_py.models.workspace import UpdateEmailConfigRequest

from collab.kit import safety
from collab.notifications import mail
from collab.notifications.tasks import email_sweep
from collab.testing.mail import Mailbox
from support.factories import tenant_with_users
from support.helpers import (
    Tenant,
    add_organization,
    enable_advanced_queries,
    error,
    issue_paths,
    post,
    result,
    settle_jobs,
    velt,
)

BAD_ADDRESSES = ("victim1@outside.example,postmaster", "postmaster", "root@localhost", "Team: a@b.example;",
                 "Ana <a@b.example>", "a@b.example (x)", "a@[127.0.0.1]")


@pytest.fixture
def mailbox():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = Mailbox().start()
    yield box
    box.stop()


def with_users(client, sdk, t, config, users=("u1", "u2"), domain="example.com"):
    """Give a tenant's o1 these users (with e-mail addresses at `domain`) and an e-mail service."""
    result(
        post(client, "/v2/users/add",
             {"organizationId": "o1", "users": [{"userId": u, "email": f"{u}@{domain}"} for u in users]}, t.headers))
    answer = sdk(t).api.workspace.updateEmailConfig(
        UpdateEmailConfigRequest(useEmailService=True, emailServiceConfig=config))
    assert answer["result"]["status"] == "success", answer
    return t


def own_server(port):
    return {
        "type": "smtp", "smtpHost": "127.0.0.1", "smtpPort": port, "smtpSecurity": "none",
        "fromEmail": "bot@example.com"
    }


def notify(client, t, notification_id, users=("u1", )):
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": {"userId": "u0", "name": "Ana"}, "notifyAll": False,
        "notificationId": notification_id, "notifyUsers": [{"userId": u} for u in users],
        "displayHeadlineMessageTemplate": "Your account is locked", "displayBodyMessage": "Verify now"
    }
    result(post(client, "/v2/notifications/add", body, t.headers))


def send_due(live, t):
    live.run(email_sweep({"svc": live.svc}))
    settle_jobs(live, t)


def filtered(client, t, **filters):
    return result(post(client, "/v2/workspace/email/status", filters, velt(t)))


def test_the_deployment_server_sends_from_the_operator_to_exactly_one_address(client, sdk, live, mailbox, tune, db):
    tune(public_url=live.url, email_batch_window_s=0, smtp_host="127.0.0.1", smtp_port=mailbox.port,
         smtp_security="none", smtp_username=None, smtp_password=None, smtp_from="notify@collab.example")
    t = with_users(client, sdk, tenant_with_users(client, "u1", "u2"),
                   {"type": "custom", "fromEmail": "security@bank.example", "fromCompany": "Bank Security Team"})
    # An address that is not exactly one addr-spec is refused where a user's e-mail is set.
    for bad in BAD_ADDRESSES:
        users = {"organizationId": "o1", "users": [{"userId": "u1", "email": bad}]}
        err = error(post(client, "/v2/users/add", users, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["users", "0", "email"]], bad
        body = {
            "organizationId": "o1", "documentId": "d1", "actionUser": {"userId": "u0"}, "notificationId": "nx",
            "notifyUsers": [{"userId": "u1",
                             "email": bad}], "displayHeadlineMessageTemplate": "h", "displayBodyMessage": "b"
        }
        err = error(post(client, "/v2/notifications/add", body, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [["notifyUsers", "0", "email"]], bad
    # One stored before addresses were checked this strictly is skipped when e-mail is queued.
    db.execute("update users set email = 'u2@example.com,postmaster' where api_key_id = %s and id = 'u2'",
               (t.api_key, ))
    notify(client, t, "n1", users=("u1", "u2"))
    send_due(live, t)
    [received] = mailbox.messages
    assert received.sender == "notify@collab.example" and received.recipients == ["u1@example.com"]
    assert received.message["From"] == "Bank Security Team <notify@collab.example>"
    assert received.message["Reply-To"] == "security@bank.example"
    assert received.message["Message-ID"].endswith("@collab.example>")
    assert [e["to"] for e in filtered(client, t)["emails"]] == ["u1@example.com"]
    # Without the operator's sender address nothing goes out through the deployment's server.
    tune(smtp_from=None)
    notify(client, t, "n2")
    send_due(live, t)
    assert len(mailbox.messages) == 1
    pending = filtered(client, t, status="pending")["emails"][0]
    assert "COLLAB_SMTP_FROM" in pending["lastError"]


def test_the_keys_of_one_workspace_share_a_daily_cap(client, sdk, live, mailbox, tune):
    tune(public_url=live.url, email_batch_window_s=0, email_max_per_day=100, email_max_per_workspace_per_day=2)
    first = with_users(client, sdk, tenant_with_users(client, "u1", "u2"), own_server(mailbox.port))
    data = {"ownerEmail": "ops@example.com", "type": "testing", "createAuthToken": False}
    key = result(post(client, "/v2/workspace/apikey/create", data, first.workspace_headers))["apiKey"]
    token = result(post(client, "/v2/workspace/authtoken/reset", {"apiKey": key},
                        first.workspace_headers))["newAuthToken"]["token"]
    second = Tenant(first.workspace, key, token)
    add_organization(client, second, "o1", "d1")
    enable_advanced_queries(client, second)
    with_users(client, sdk, second, own_server(mailbox.port), domain="example.org")
    notify(client, first, "n1")
    send_due(live, first)
    notify(client, second, "n2")
    send_due(live, second)
    notify(client, second, "n3", users=("u2", ))
    send_due(live, second)
    # Each key is far from its own cap; the workspace's third e-mail of the day is past the workspace's.
    counts = filtered(client, second)["counts"]
    assert counts["sent"] == 1 and counts["skipped"] == 1
    assert sorted(r for m in mailbox.messages for r in m.recipients) == ["u1@example.com", "u1@example.org"]


def test_the_smtp_host_is_resolved_once_and_the_checked_address_is_the_one_connected(monkeypatch):
    """A name whose answer changes (DNS rebinding): 127.0.0.2 stands for a public address here (the check is told
    so), 127.0.0.1 for an internal one. The check sees the first answer; the connection must go there too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        public = Mailbox(host="127.0.0.2").start()
        internal = Mailbox(host="127.0.0.1", port=public.port).start()
    answers = ["127.0.0.2", "127.0.0.1", "127.0.0.1", "127.0.0.1"]
    asked: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, port, *args, **kwargs):
        if host != "rebind.example":
            return real(host, port, *args, **kwargs)
        asked.append(host)
        address = answers[min(len(asked) - 1, len(answers) - 1)]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    monkeypatch.setattr(safety, "refused_address", lambda a: a == ipaddress.ip_address("127.0.0.1"))
    out = mail.compose(to="u1@example.com", from_email="bot@example.com", from_name=None,
                       items=[{"headline": "Hi", "body": "b"}], unsubscribe_url="https://collab.example/u")
    try:
        error_text = asyncio.run(
            mail.send_smtp(out, host="rebind.example", port=public.port, security="none", username=None, password=None,
                           timeout=10, allow_private=False))
        assert error_text is None
        assert [m.recipients for m in public.messages] == [["u1@example.com"]] and internal.messages == []
        assert asked == ["rebind.example"]  # resolved once
        # A port that refuses: a category in lastError, not what (or whether) something answered.
        assert asyncio.run(
            mail.send_smtp(out, host="127.0.0.2", port=closed_port(), security="none", username=None, password=None,
                           timeout=10,
                           allow_private=True)) == "Refused: the SMTP server's address refused the connection."
    finally:
        public.stop()
        internal.stop()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        return s.getsockname()[1]


class Banner(socketserver.BaseRequestHandler):
    """Something that is not a mail server, answering what an internal service might: its own words."""

    def handle(self):
        self.request.sendall(b"554 internal-db-01.corp PostgreSQL 15.2 secret banner\r\n")


def test_a_server_s_own_words_never_reach_last_error(client, sdk, live, tune):
    tune(email_batch_window_s=0)
    server = socketserver.TCPServer(("127.0.0.1", 0), Banner)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = own_server(server.server_address[1])
        t = with_users(client, sdk, tenant_with_users(client, "u1"), config, users=("u1", ))
        notify(client, t, "n1")
        send_due(live, t)
        [failed] = filtered(client, t)["emails"]
        assert failed["status"] == "pending"
        assert failed["lastError"] == "Rejected: the SMTP server refused the e-mail (code 554)."
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("host",
                         ["a..b", ".", "...", "a" * 64 + ".example", "x." * 127 + "example", "[::1", "fe80::1%eth0"])
def test_a_malformed_smtp_host_is_invalid_argument_on_the_field(client, host):
    t = tenant_with_users(client)
    body = {"emailServiceConfig": {"type": "smtp", "smtpHost": host}}
    err = error(post(client, "/v2/workspace/emailconfig/update", body, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["emailServiceConfig", "smtpHost"]]


def test_a_resolver_failure_of_any_kind_is_invalid_argument_on_the_field(client, monkeypatch):

    async def broken(host, port):
        raise UnicodeError("label empty or too long")

    monkeypatch.setattr(safety, "resolve", broken)
    t = tenant_with_users(client)
    body = {"emailServiceConfig": {"type": "smtp", "smtpHost": "mail.example.com"}}
    err = error(post(client, "/v2/workspace/emailconfig/update", body, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["emailServiceConfig", "smtpHost"]]
