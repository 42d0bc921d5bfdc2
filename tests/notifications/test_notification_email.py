"""Per-user preferences (notifications/config), the e-mail service (workspace/emailconfig), real e-mail over SMTP
(aiosmtpd) and SendGrid (a fake), batching on the injected clock, retries, email/status and unsubscribe."""

import warnings

import httpx
import pytest
from velt_py.models.notification_api import (
    AddNotificationsRequest,
    GetNotificationConfigRequest,
    GetNotificationsRequest,
    SetNotificationConfigRequest,
)
from velt_py.models.workspace import GetEmailConfigRequest, GetEmailStatusRequest, UpdateEmailConfigRequest

from collab.notifications import email, mail
from collab.notifications import repository as notifications_repo
from collab.notifications.tasks import email_sweep
from collab.testing.mail import FakeSendGrid, Mailbox
from support.factories import tenant_with_users
from support.helpers import error, issue_paths, new_tenant, post, result, settle_jobs, velt

ACTOR = {"userId": "u0", "name": "Ana"}


@pytest.fixture
def mailbox():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = Mailbox().start()
    yield box
    box.stop()


@pytest.fixture
def sendgrid():
    fake = FakeSendGrid().start()
    yield fake
    fake.stop()


def smtp_tenant(client, sdk, mailbox, **more):
    t = tenant_with_users(client, "u1", "u2")
    for u, address in (("u1", "u1@example.com"), ("u2", "u2@example.com")):
        result(
            post(client, "/v2/users/add", {"organizationId": "o1", "users": [{"userId": u, "email": address}]},
                 t.headers))
    config = {
        "type": "smtp", "smtpHost": "127.0.0.1", "smtpPort": mailbox.port, "smtpSecurity": "none",
        "fromEmail": "bot@example.com", "fromCompany": "Acme", **more
    }
    answer = sdk(t).api.workspace.updateEmailConfig(
        UpdateEmailConfigRequest(useEmailService=True, emailServiceConfig=config))
    assert answer["result"]["status"] == "success", answer
    return t


def notify(api, notification_id, users=("u1", ), **more):
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "notifyAll": False,
        "notificationId": notification_id, "notifyUsers": [{"userId": u} for u in users],
        "displayHeadlineMessageTemplate": "{actionUser} shared {docName}",
        "displayHeadlineMessageTemplateData": {"docName": "Plan"}, "displayBodyMessage": f"Body {notification_id}",
        **more
    }
    assert api.notifications.addNotifications(AddNotificationsRequest(**body))["result"]["status"] == "success"


def filtered(client, t, **filters):
    """email/status with collab's filters (velt-py sends only ownerEmail)."""
    return result(post(client, "/v2/workspace/email/status", filters, velt(t)))


def send_due(live, t):
    live.run(email_sweep({"svc": live.svc}))
    settle_jobs(live, t)


def status(api, ownerEmail=None):
    answer = api.workspace.getEmailStatus(GetEmailStatusRequest(ownerEmail=ownerEmail))
    assert answer["result"]["status"] == "success", answer
    return answer["result"]["data"]


def test_preferences_round_trip_and_levels(client, sdk):
    t = tenant_with_users(client)
    api = sdk(t).api
    set_ = api.notifications.setNotificationConfig(
        SetNotificationConfigRequest(organizationId="o1", userIds=["u1"], config={"email": "NONE", "slack": "MINE"}))
    assert set_["result"]["data"]["u1"] == {"success": True, "userId": "u1", "message": "User config set successfully."}
    api.notifications.setNotificationConfig(
        SetNotificationConfigRequest(organizationId="o1", userIds=["u1"], documentIds=["d1"], config={"inbox": "MINE"}))
    got = api.notifications.getNotificationConfig(
        GetNotificationConfigRequest(organizationId="o1", userId="u1", documentIds=["d1"], getOrganizationConfig=True))
    org, doc = got["result"]["data"]
    assert org["config"] == {"inbox": "ALL", "email": "NONE", "slack": "MINE"} and "documentId" not in org["metadata"]
    assert doc["config"] == {"inbox": "MINE", "email": "NONE", "slack": "MINE"}
    assert doc["metadata"] == {"organizationId": "o1", "apiKey": t.api_key, "documentId": "d1", "userId": "u1"}
    # Bad input: clear errors, another tenant's organization is not found.
    cases = [({"config": {"inbox": "SOME"}}, ["config", "inbox"]), ({"config": {}}, ["config"]),
             ({"userIds": "u1"}, ["userIds"]), ({"documentIds": [str(i) for i in range(31)]}, ["documentIds"])]
    for change, path in cases:
        body = {"organizationId": "o1", "userIds": ["u1"], "config": {"inbox": "ALL"}, **change}
        assert issue_paths(error(post(client, "/v2/notifications/config/set", body, t.headers),
                                 "INVALID_ARGUMENT")) == [path]
    err = error(post(client, "/v2/notifications/config/get", {"organizationId": "o1", "userId": "u1"}, t.headers),
                "INVALID_ARGUMENT")
    assert issue_paths(err) == [["documentIds"]]
    other = new_tenant(client)
    error(
        post(client, "/v2/notifications/config/get",
             {"organizationId": "o1", "userId": "u1", "getOrganizationConfig": True}, other.headers), "NOT_FOUND")


def test_inbox_preference_is_honoured(client, sdk):
    t = tenant_with_users(client, "u1", "u2", "u3")
    api = sdk(t).api
    api.notifications.setNotificationConfig(
        SetNotificationConfigRequest(organizationId="o1", userIds=["u2"], config={"inbox": "NONE"}))
    api.notifications.setNotificationConfig(
        SetNotificationConfigRequest(organizationId="o1", userIds=["u3"], config={"inbox": "MINE"}))
    notify(api, "n1", users=("u1", "u2"), notifyAll=True)
    answer = api.notifications.getNotifications(GetNotificationsRequest(organizationId="o1", documentId="d1"))
    # u2 turned the inbox off; u3 (MINE) was reached only through notifyAll, not named.
    assert answer["result"]["data"][0]["notifyUsersByUserId"] == {"u1": True}


def test_email_config_secrets_are_encrypted_and_masked(client, sdk, db):
    t = new_tenant(client)
    api = sdk(t).api
    assert api.workspace.getEmailConfig(GetEmailConfigRequest())["result"]["data"] == {
        "useEmailService": False, "emailServiceConfig": {
            "type": "default", "apiKey": "", "fromEmail": "", "fromCompany": "", "commentTemplateId": "",
            "tagTemplateId": ""
        }
    }
    answer = api.workspace.updateEmailConfig(
        UpdateEmailConfigRequest(
            useEmailService=True,
            emailServiceConfig={"type": "sendgrid", "apiKey": "SG.secret-key-1234",
                                "fromEmail": "noreply@example.com"}))["result"]["data"]
    assert answer["emailServiceConfig"]["apiKey"] == "****1234" and answer["useEmailService"] is True
    assert answer["emailServiceConfig"]["triggers"]["comment.add"] is True  # seeded on first enable
    [row] = db.execute("select * from notification_email_configs where api_key_id = %s", (t.api_key, )).fetchall()
    assert b"SG.secret" not in bytes(row["api_key_enc"]) and "SG.secret" not in str(row["config"])
    # Sending the masked value back keeps the key.
    api.workspace.updateEmailConfig(UpdateEmailConfigRequest(emailServiceConfig={"apiKey": "****1234"}))
    assert api.workspace.getEmailConfig(
        GetEmailConfigRequest())["result"]["data"]["emailServiceConfig"]["apiKey"] == "****1234"
    for body, path in (({}, []), ({"useEmailService": "yes"}, ["useEmailService"]),
                       ({"emailServiceConfig": {"type": "pigeon"}},
                        ["emailServiceConfig",
                         "type"]), ({"emailServiceConfig": {"fromEmail": "nope"}}, ["emailServiceConfig", "fromEmail"]),
                       ({"emailServiceConfig": {"type": "smtp"}}, ["emailServiceConfig", "smtpHost"])):
        err = error(post(client, "/v2/workspace/emailconfig/update", body, t.headers), "INVALID_ARGUMENT")
        assert issue_paths(err) == [path]


def test_smtp_batches_one_email_per_user_with_unsubscribe(client, sdk, live, mailbox, clock, tune):
    tune(public_url=live.url, email_batch_window_s=60)
    t = smtp_tenant(client, sdk, mailbox)
    api = sdk(t).api
    notify(api, "n1", users=("u1", "u2"))
    clock["now"] += 30
    notify(api, "n2", users=("u1", ))
    send_due(live, t)
    assert mailbox.messages == []  # the window is still open
    clock["now"] += 31
    send_due(live, t)
    by_to = {m.recipients[0]: m for m in mailbox.messages}
    assert sorted(by_to) == ["u1@example.com", "u2@example.com"]
    first = by_to["u1@example.com"]
    assert first.message["Subject"] == "You have 2 new notifications"
    assert first.message["From"] == "Acme <bot@example.com>"
    assert "Ana shared Plan" in first.text() and "Body n2" in first.text()
    assert by_to["u2@example.com"].message["Subject"] == "Ana shared Plan"
    link = first.message["List-Unsubscribe"].strip("<>")
    assert link.startswith(live.url + "/email/unsubscribe?token=")
    assert first.message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    sent = status(api)
    assert sent["counts"]["sent"] == 2 and {e["to"] for e in sent["emails"]} == set(by_to)
    # One-click unsubscribe over HTTP (a forged token is refused); the user gets no more e-mail.
    page = httpx.get(link)
    assert page.status_code == 200 and "Unsubscribe" in page.text
    opened = api.notifications.getNotificationConfig(
        GetNotificationConfigRequest(organizationId="o1", userId="u1", getOrganizationConfig=True))
    # A GET (a mail scanner following the link) changes nothing.
    assert opened["result"]["data"][0]["config"]["email"] == "ALL"
    forged = link[:-3] + ("AAA" if not link.endswith("AAA") else "BBB")
    assert httpx.post(forged).json()["error"]["status"] == "INVALID_ARGUMENT"
    assert httpx.post(link, data={"List-Unsubscribe": "One-Click"}).status_code == 200
    got = api.notifications.getNotificationConfig(
        GetNotificationConfigRequest(organizationId="o1", userId="u1", getOrganizationConfig=True))
    assert got["result"]["data"][0]["config"]["email"] == "NONE"
    notify(api, "n3", users=("u1", "u2"))
    clock["now"] += 61
    send_due(live, t)
    assert [m.recipients for m in mailbox.messages[2:]] == [["u2@example.com"]]


def test_smtp_failures_are_retried_and_reported(client, sdk, live, clock, tune):
    tune(email_batch_window_s=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = Mailbox(login=("mailer", "right")).start()
    try:
        t = smtp_tenant(client, sdk, box, smtpUsername="mailer", smtpPassword="wrong")
        api = sdk(t).api
        notify(api, "n1")
        send_due(live, t)
        [failed] = status(api)["emails"]
        assert failed["status"] == "pending" and failed["attempts"] == 1 and failed["lastError"]
        assert box.messages == []
        # The operator fixes the password; the retry (after its backoff) goes out.
        api.workspace.updateEmailConfig(UpdateEmailConfigRequest(emailServiceConfig={"smtpPassword": "right"}))
        send_due(live, t)
        assert status(api)["emails"][0]["attempts"] == 1  # not due yet
        clock["now"] += 61
        send_due(live, t)
        answer = status(api, ownerEmail=t.workspace["owner"]["email"])
        [sent] = answer["emails"]
        assert sent["status"] == "sent" and sent["attempts"] == 2 and len(box.messages) == 1
        assert answer["verified"] is True and status(api, ownerEmail="someone@example.com")["verified"] is False
    finally:
        box.stop()
    # The server is gone: every try fails, then the e-mail is `failed`.
    notify(api, "n2")
    for _ in range(5):
        send_due(live, t)
        clock["now"] += 7_200
    answer = filtered(client, t, status="failed")
    assert answer["emails"][0]["attempts"] == 5 and answer["counts"]["failed"] == 1


def test_sendgrid_gets_the_email_with_its_key(client, sdk, live, sendgrid, tune):
    tune(public_url=live.url, email_batch_window_s=0, sendgrid_base_url=sendgrid.url)
    t = tenant_with_users(client, "u1")
    api = sdk(t).api
    api.workspace.updateEmailConfig(
        UpdateEmailConfigRequest(
            useEmailService=True, emailServiceConfig={
                "type": "sendgrid", "apiKey": "SG.abc-123", "fromEmail": "noreply@example.com", "fromCompany": "Acme"
            }))
    notify(api, "n1", notifyUsers=[{"userId": "u1", "email": "u1@example.com"}])
    send_due(live, t)
    [call] = sendgrid.calls
    assert call.path == "/v3/mail/send" and call.headers["authorization"] == "Bearer SG.abc-123"
    assert call.body["personalizations"] == [{"to": [{"email": "u1@example.com"}]}]
    assert call.body["from"] == {"email": "noreply@example.com", "name": "Acme"}
    assert call.body["subject"] == "Ana shared Plan"
    assert call.body["headers"]["List-Unsubscribe"].startswith(f"<{live.url}/email/unsubscribe")
    sendgrid.status = 401
    notify(api, "n2", notifyUsers=[{"userId": "u1", "email": "u1@example.com"}])
    send_due(live, t)
    failed = filtered(client, t, status="pending")["emails"][0]
    assert failed["lastError"].startswith("SendGrid answered 401") and failed["provider"] == "sendgrid"


def test_an_unsubscribe_during_a_send_is_not_undone_by_its_outcome(client, sdk, live, mailbox, db, tune):
    tune(public_url=live.url, email_batch_window_s=3600)
    t = smtp_tenant(client, sdk, mailbox)
    api = sdk(t).api
    notify(api, "n1")
    # The e-mail as a sweep leaves it for its send job (handed out, nothing tried yet); no job runs here.
    [row] = db.execute("update notification_emails set status = 'sending' where api_key_id = %s returning id",
                       (t.api_key, )).fetchall()
    token = mail.unsubscribe_token(live.svc.keyring, api_key_id=t.api_key, organization_id="o1", user_id="u1")
    assert httpx.post(f"{live.url}/email/unsubscribe?token={token}").status_code == 200
    # The job that was handed it finds it cancelled: it sends nothing and records nothing over it.
    assert live.run(email.send(live.svc, api_key_id=t.api_key, email_id=row["id"], attempts=0)) is None

    # A job that had claimed it before (its outcome arriving after the unsubscribe) cannot make it pending again.
    async def late_outcome():
        async with live.svc.pool.connection() as conn:
            await notifications_repo.finish_email(conn, api_key_id=t.api_key, id=row["id"], attempts=0,
                                                  status="pending", provider="smtp", subject="s", error="timed out",
                                                  due_at=0, now=0)

    live.run(late_outcome())
    assert mailbox.messages == []
    [cancelled] = status(api)["emails"]
    assert cancelled["status"] == "cancelled" and cancelled["attempts"] == 0


def test_an_address_that_could_inject_headers_is_refused(client, sdk):
    t = tenant_with_users(client, "u1")
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "notificationId": "n1",
        "notifyUsers": [{"userId": "u1", "email": "a@b.com\nBcc: x@y.com"}], "displayHeadlineMessageTemplate": "h",
        "displayBodyMessage": "b"
    }
    err = error(post(client, "/v2/notifications/add", body, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["notifyUsers", "0", "email"]]
