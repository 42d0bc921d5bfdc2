"""The absolute URLs the service hands out name the address that serves them (issue #51 item 4): with
COLLAB_PUBLIC_URL unset, a URL in an answer starts with the address the request reached, and one built in a job
(an e-mail's unsubscribe link) with the address the API listens on; set, the setting is their base."""

import warnings
from urllib.parse import urlsplit

import httpx
import pytest
from velt_py.models.notification_api import AddNotificationsRequest
from velt_py.models.workspace import UpdateEmailConfigRequest

from collab.notifications.tasks import email_sweep
from collab.testing.mail import Mailbox
from support.factories import tenant_with_users
from support.helpers import new_tenant, post, result, settle_jobs

UPLOAD = "/v2/memory/knowledge/upload-url"
PROSE = b"Our audience is enterprise buyers in regulated industries."


@pytest.fixture
def mailbox():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = Mailbox().start()
    yield box
    box.stop()


def upload_url(client, t) -> str:
    answer = post(client, UPLOAD, {"mimeType": "text/plain", "fileSize": len(PROSE)}, t.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["uploadUrl"]


def test_signed_urls_name_the_address_the_request_reached(client, live, contract, tune):
    assert live.svc.settings.public_url is None  # the default: unset
    t = new_tenant(client)
    url = upload_url(client, t)
    assert url.startswith(live.url + "/knowledge/uploads/")
    put = httpx.put(url, content=PROSE, headers={"Content-Type": "text/plain"}, timeout=30)
    assert put.status_code == 200, put.text  # the URL opens where it says
    # The same service reached by another name of this host: the URL names that one (what the caller can reach).
    port = urlsplit(live.url).port
    with httpx.Client(base_url=f"http://localhost:{port}", timeout=30,
                      event_hooks={"response": [contract.check]}) as by_name:
        assert upload_url(by_name, t).startswith(f"http://localhost:{port}/knowledge/uploads/")
    # Configured, the setting is the base of every URL, whatever the request's address.
    tune(public_url="https://collab.example.com/")
    assert upload_url(client, t).startswith("https://collab.example.com/knowledge/uploads/")


def test_an_emails_unsubscribe_link_names_the_address_the_api_listens_on(client, sdk, live, mailbox, clock, tune):
    assert live.svc.settings.public_url is None
    tune(email_batch_window_s=0)
    t = tenant_with_users(client, "u1")
    result(
        post(client, "/v2/users/add", {"organizationId": "o1", "users": [{"userId": "u1", "email": "u1@example.com"}]},
             t.headers))
    api = sdk(t).api
    config = {
        "type": "smtp", "smtpHost": "127.0.0.1", "smtpPort": mailbox.port, "smtpSecurity": "none",
        "fromEmail": "bot@example.com"
    }
    assert api.workspace.updateEmailConfig(UpdateEmailConfigRequest(
        useEmailService=True, emailServiceConfig=config))["result"]["status"] == "success"
    added = api.notifications.addNotifications(
        AddNotificationsRequest(organizationId="o1", documentId="d1", notificationId="n1", actionUser={"userId": "u0"},
                                notifyAll=False, notifyUsers=[{"userId": "u1"}], displayHeadlineMessageTemplate="Hi",
                                displayBodyMessage="Body"))
    assert added["result"]["status"] == "success"
    clock["now"] += 1
    live.run(email_sweep({"svc": live.svc}))
    settle_jobs(live, t)
    [sent] = mailbox.messages
    link = sent.message["List-Unsubscribe"].strip("<>")
    assert link.startswith(live.url + "/email/unsubscribe?token="), link
    assert httpx.post(link, data={"List-Unsubscribe": "One-Click"}, timeout=30).status_code == 200
