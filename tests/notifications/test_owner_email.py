"""The workspace owner's public e-mail operations as Velt documents them, driven by velt-py without credentials:
`workspace/email/status` answers `{verified}` for an owner's address and NOT_FOUND otherwise, rate limited per
address, while the API key's delivery report stays behind its credentials; `workspace/email/send-login-link` mails
an owner's address, checks `continueUrl` and is rate limited per address."""

import warnings

import pytest
from velt_py import VeltSDK
from velt_py.models.workspace import GetEmailStatusRequest, SendLoginLinkRequest

from collab.testing.mail import Mailbox
from support.helpers import error, fresh_email, issue_paths, new_tenant, post, result


@pytest.fixture
def mailbox():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        box = Mailbox().start()
    yield box
    box.stop()


@pytest.fixture
def public(sdk):
    """velt-py with no credentials configured (empty headers count as absent)."""
    del sdk  # points velt-py at this service
    return VeltSDK.initialize({"apiKey": "", "authToken": ""}).api.workspace


def test_email_status_is_public_for_an_owner_and_not_found_otherwise(client, public, tune):
    tune(rate_limit_owner_email_status="3/hour")
    owner = fresh_email()
    t = new_tenant(client, ownerEmail=owner)
    answer = public.getEmailStatus(GetEmailStatusRequest(ownerEmail=owner.upper()))
    assert answer["result"] == {"status": "success", "message": "Email verified", "data": {"verified": True}}
    stranger = fresh_email()
    answer = public.getEmailStatus(GetEmailStatusRequest(ownerEmail=stranger))
    assert answer["error"]["status"] == "NOT_FOUND" and answer["error"]["message"] == "User not found"
    # Per address: the owner's fourth call in the window is refused; another address is not.
    public.getEmailStatus(GetEmailStatusRequest(ownerEmail=owner))
    public.getEmailStatus(GetEmailStatusRequest(ownerEmail=owner))
    answer = public.getEmailStatus(GetEmailStatusRequest(ownerEmail=owner))
    assert answer["error"]["status"] == "RESOURCE_EXHAUSTED", answer
    assert public.getEmailStatus(GetEmailStatusRequest(ownerEmail=stranger))["error"]["status"] == "NOT_FOUND"
    # The delivery report needs the API key; with it, it answers as before (with `verified` beside it).
    err = error(post(client, "/v2/workspace/email/status", {"status": "sent"}), "UNAUTHENTICATED")
    assert "x-service-api-key" in err["message"]
    err = error(post(client, "/v2/workspace/email/status", {}), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["ownerEmail"]]
    report = result(post(client, "/v2/workspace/email/status", {"ownerEmail": owner}, t.headers))
    assert report["verified"] is True and report["counts"]["sent"] == 0 and report["emails"] == []


def test_send_login_link_mails_an_owner_only(client, public, live, mailbox, tune, db):
    tune(smtp_host="127.0.0.1", smtp_port=mailbox.port, smtp_security="none", smtp_username=None, smtp_password=None,
         smtp_from="login@collab.example", public_url="https://collab.example.com", rate_limit_login_link="2/hour")
    owner = fresh_email()
    t = new_tenant(client, ownerEmail=owner, name="Acme")
    for address in (owner, fresh_email()):
        answer = public.sendLoginLink(SendLoginLinkRequest(email=address, continueUrl="http://localhost:3000/x"))
        assert answer["result"] == {"status": "success", "message": "Login link sent successfully", "data": None}
    wait_for_login_jobs(live, db)
    [message] = mailbox.messages  # the owner's, not the stranger's
    assert message.recipients == [owner] and message.sender == "login@collab.example"
    text = message.text()
    assert t.workspace["id"] in text and "https://collab.example.com/console/sign-in" in text
    assert "http://localhost:3000/x" in text
    # continueUrl: a URL, on this service's host or a local one.
    for url, words in (("not a url", "Invalid url for continueUrl"), ("https://evil.example/",
                                                                      "The continueUrl domain is not allowed.")):
        err = error(post(client, "/v2/workspace/email/send-login-link", {"email": owner, "continueUrl": url}),
                    "INVALID_ARGUMENT")
        assert err["message"] == words and issue_paths(err) == [["continueUrl"]]
    result(
        post(client, "/v2/workspace/email/send-login-link",
             {"email": owner, "continueUrl": "https://collab.example.com/console"}))
    # Per address: the owner's third request in the window is refused, and nothing more is queued.
    answer = public.sendLoginLink(SendLoginLinkRequest(email=owner, continueUrl="http://localhost:3000/x"))
    assert answer["error"]["status"] == "RESOURCE_EXHAUSTED", answer
    err = error(post(client, "/v2/workspace/email/send-login-link", {"email": "not-an-address", "continueUrl": "x"}),
                "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == [["email"]]


def wait_for_login_jobs(live, db):
    """Wait (on the queue, not the clock) for the login-link jobs queued so far."""
    from arq.jobs import Job

    from collab.kit.jobs import lane

    rows = db.execute(
        "select id from jobs where function = 'send_login_link' and status in ('queued', 'running')").fetchall()

    async def wait():
        for row in rows:
            await Job(row["id"], live.svc.redis,
                      _queue_name=lane("send_login_link").queue).result(timeout=60, poll_delay=0.01)

    live.run(wait(), timeout=90)
