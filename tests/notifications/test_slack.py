"""Notifications delivered to Slack (ADR 0050, "Slack"): the API key's incoming webhook (`slackWebhookUrl` of
workspace/emailconfig/update), sealed and checked by the webhook SSRF guard; each user's `slack` choice honoured;
batched, retried and reported (workspace/email/status's `slack`), against a real receiver on loopback."""

import json

from velt_py.models.notification_api import AddNotificationsRequest, SetNotificationConfigRequest

from collab.notifications.tasks import email_sweep
from support.factories import tenant_with_users
from support.helpers import error, issue_paths, post, result, settle_jobs, velt

ACTOR = {"userId": "u0", "name": "Ana"}
SECRET_PATH = "/services/T0001/B0002/s3cr3tT0ken"


def slack_tenant(client, sdk, receiver, tune, **choices):
    """A tenant whose users u1..u3 are named, its Slack webhook the receiver, and each user's `slack` choice set
    through velt-py (a user left out of `choices` never chose)."""
    tune(webhooks_allow_private_targets=True, email_batch_window_s=0)
    t = tenant_with_users(client)
    users = [{"userId": u, "name": name} for u, name in (("u1", "Bea"), ("u2", "Cy"), ("u3", "Dee"))]
    result(post(client, "/v2/users/add", {"organizationId": "o1", "users": users}, t.headers))
    result(post(client, "/v2/workspace/emailconfig/update", {"slackWebhookUrl": receiver.url(SECRET_PATH)}, t.headers))
    api = sdk(t).api
    for user, level in choices.items():
        answer = api.notifications.setNotificationConfig(
            SetNotificationConfigRequest(organizationId="o1", userIds=[user], config={"slack": level}))
        assert answer["result"]["data"][user]["success"] is True
    return t, api


def notify(api, notification_id, users=("u1", "u2", "u3"), doc_name="Plan"):
    body = {
        "organizationId": "o1", "documentId": "d1", "actionUser": ACTOR, "notifyAll": False,
        "notificationId": notification_id, "notifyUsers": [{"userId": u} for u in users],
        "displayHeadlineMessageTemplate": "{actionUser} shared {docName}",
        "displayHeadlineMessageTemplateData": {"docName": doc_name}, "displayBodyMessage": f"Body {notification_id}"
    }
    assert api.notifications.addNotifications(AddNotificationsRequest(**body))["result"]["status"] == "success"


def send_due(live, t):
    live.run(email_sweep({"svc": live.svc}))
    settle_jobs(live, t)


def slack_status(client, t, **filters):
    return result(post(client, "/v2/workspace/email/status", filters, velt(t)))["slack"]


def test_slack_gets_the_notifications_of_users_who_ask_for_them(client, sdk, live, receiver, tune, db):
    t, api = slack_tenant(client, sdk, receiver, tune, u1="ALL", u2="NONE")
    # The URL is sealed and shown masked; the preference is read back as set.
    shown = result(post(client, "/v2/workspace/emailconfig/get", {}, t.headers))["slackWebhookUrl"]
    assert shown == f"http://127.0.0.1:{receiver.port}/****0ken"
    [row] = db.execute("select slack_webhook_enc from notification_email_configs where api_key_id = %s",
                       (t.api_key, )).fetchall()
    assert b"s3cr3t" not in bytes(row["slack_webhook_enc"])
    notify(api, "n1", doc_name="Q&A <draft>")
    send_due(live, t)
    # One message: for u1 (ALL); none for u2 (NONE) nor u3 (never chose: Slack is off until asked for).
    [got] = receiver.to(SECRET_PATH)
    assert got.method == "POST" and got.headers["content-type"] == "application/json"
    text = json.loads(got.body)["text"]
    assert "Bea" in text and "Cy" not in text and "Dee" not in text
    assert "Ana shared Q&amp;A &lt;draft&gt;" in text and "Body n1" in text and "<draft>" not in text
    answer = slack_status(client, t)
    assert answer["configured"] is True and answer["counts"]["sent"] == 1
    assert [(m["userId"], m["status"], m["notificationIds"]) for m in answer["messages"]] == [("u1", "sent", ["n1"])]
    # MINE takes only what names the user; a user who turns Slack off gets nothing more.
    api.notifications.setNotificationConfig(
        SetNotificationConfigRequest(organizationId="o1", userIds=["u3"], config={"slack": "MINE"}))
    notify(api, "n2", users=("u3", ))
    send_due(live, t)
    assert "Dee" in json.loads(receiver.to(SECRET_PATH)[-1].body)["text"]
    api.notifications.setNotificationConfig(
        SetNotificationConfigRequest(organizationId="o1", userIds=["u1", "u3"], config={"slack": "NONE"}))
    notify(api, "n3")
    send_due(live, t)
    assert len(receiver.to(SECRET_PATH)) == 2


def test_a_failing_slack_webhook_is_retried_and_reported(client, sdk, live, receiver, tune, clock):
    t, api = slack_tenant(client, sdk, receiver, tune, u1="ALL")
    receiver.reply(404, body=b"no_service")
    notify(api, "n1")
    send_due(live, t)
    [failed] = slack_status(client, t)["messages"]
    assert failed["status"] == "pending" and failed["attempts"] == 1
    assert failed["lastError"] == "Rejected: the Slack webhook answered 404 (no_service)."
    send_due(live, t)
    assert len(receiver.to(SECRET_PATH)) == 1  # the retry waits for its backoff
    clock["now"] += 61
    send_due(live, t)
    [sent] = slack_status(client, t)["messages"]
    assert sent["status"] == "sent" and sent["attempts"] == 2 and len(receiver.to(SECRET_PATH)) == 2
    # A redirect is not followed; every try fails, then the message is `failed`.
    receiver.reply(302, {"location": receiver.url("/elsewhere")}, times=5)
    notify(api, "n2")
    for _ in range(5):
        send_due(live, t)
        clock["now"] += 7_200
    answer = slack_status(client, t, status="failed")
    assert answer["messages"][0]["attempts"] == 5 and answer["counts"]["failed"] == 1
    assert answer["messages"][0]["lastError"] == "Rejected: the Slack webhook answered 302."
    assert receiver.to("/elsewhere") == []


def test_a_private_slack_url_is_refused_unless_allowed(client, sdk, live, receiver, tune):
    tune(webhooks_allow_private_targets=False)  # as in production (the test settings allow them)
    t = tenant_with_users(client)
    for url in ("https://127.0.0.1/hook", "https://localhost/hook", "https://10.0.0.8/hook", receiver.url()):
        err = error(post(client, "/v2/workspace/emailconfig/update", {"slackWebhookUrl": url}, t.headers),
                    "INVALID_ARGUMENT")
        assert issue_paths(err) == [["slackWebhookUrl"]]
    assert "slackWebhookUrl" not in result(post(client, "/v2/workspace/emailconfig/get", {}, t.headers))
    # The operator allows private targets (self-hosting beside the receiver): accepted, and cleared with "".
    t, api = slack_tenant(client, sdk, receiver, tune, u1="ALL")
    # Turned off again, a stored private URL is refused when sent too (the address is checked at connect time).
    tune(webhooks_allow_private_targets=False)
    notify(api, "n1")
    send_due(live, t)
    [refused] = slack_status(client, t)["messages"]
    assert refused["status"] == "pending" and refused["lastError"].startswith("Refused:")
    assert receiver.requests == []
    answer = result(post(client, "/v2/workspace/emailconfig/update", {"slackWebhookUrl": ""}, t.headers))
    assert "slackWebhookUrl" not in answer and slack_status(client, t)["configured"] is False


def test_bad_slack_input_is_invalid_argument(client, sdk, receiver, tune):
    t, api = slack_tenant(client, sdk, receiver, tune)
    shown = result(post(client, "/v2/workspace/emailconfig/get", {}, t.headers))["slackWebhookUrl"]
    for value in (123, "not a url", "ftp://hooks.slack.com/x", "https://user:pw@hooks.slack.com/x",
                  "https://hooks.slack.com/" + "x" * 2000, "https://hooks.slack.com/****abcd"):
        err = error(post(client, "/v2/workspace/emailconfig/update", {"slackWebhookUrl": value}, t.headers),
                    "INVALID_ARGUMENT")
        assert issue_paths(err) == [["slackWebhookUrl"]], value
    # The value shown, sent back, keeps the stored URL.
    kept = result(post(client, "/v2/workspace/emailconfig/update", {"slackWebhookUrl": shown}, t.headers))
    assert kept["slackWebhookUrl"] == shown
    err = error(
        post(client, "/v2/notifications/config/set",
             {"organizationId": "o1", "userIds": ["u1"], "config": {"slack": "SOMETIMES"}}, t.headers),
        "INVALID_ARGUMENT")
    assert issue_paths(err) == [["config", "slack"]]
