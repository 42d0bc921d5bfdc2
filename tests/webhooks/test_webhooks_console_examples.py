"""Test events (the console's "send a test event"): an example message to one endpoint, signed, delivered and
logged with its attempt like any other message; refused for a disabled, unknown or other tenant's endpoint."""

import json

import pytest
from standardwebhooks.webhooks import Webhook

from collab.kit.auth import Tenant as KitTenant
from collab.kit.errors import ApiError
from collab.webhooks import examples
from support.factories import create_endpoint, messages, secret_of, settle, webhook_tenant
from support.helpers import new_tenant


def send(live, t, endpoint_id, event_type="comment.add"):
    tenant = KitTenant(api_key_id=t.api_key, workspace_id=t.workspace["id"])
    return live.run(examples.send_test(live.svc, tenant=tenant, endpoint_id=endpoint_id, event_type=event_type))


def test_a_test_event_reaches_only_its_endpoint_signed_and_is_logged(client, live, receiver):
    t, endpoint = webhook_tenant(client, receiver, filterTypes=["notification.add"])
    other = create_endpoint(client, t, receiver.url("/other"))
    queued = send(live, t, endpoint["id"], "comment.add")  # outside the endpoint's filter: a test goes regardless
    assert queued == {"messageId": queued["messageId"], "endpointId": endpoint["id"], "status": "queued"}
    settle(live, t)
    assert [r.path for r in receiver.requests] == ["/hook"]  # not /other
    request = receiver.requests[0]
    body = Webhook(secret_of(client, t, endpoint["id"])).verify(request.body, request.headers)
    assert body["type"] == "comment.add" and body["data"]["payload"]["test"] is True
    assert json.loads(request.body)["id"] == queued["messageId"]
    log = messages(client, t, endpointId=endpoint["id"])["messages"]
    assert [(m["id"], m["status"]) for m in log] == [(queued["messageId"], "succeeded")]
    assert log[0]["attempts"][0]["statusCode"] == 200 and log[0]["attempts"][0]["response"] == "ok"
    assert messages(client, t, endpointId=other["id"])["messages"] == []


def test_a_test_event_is_refused_for_disabled_unknown_or_foreign_endpoints(client, live, receiver):
    t, endpoint = webhook_tenant(client, receiver, disabled=True)
    stranger = new_tenant(client)
    for who, endpoint_id, event_type, code in [
        (t, endpoint["id"], "comment.add", "FAILED_PRECONDITION"),  # disabled
        (t, "ep_missing", "comment.add", "NOT_FOUND"),
        (t, endpoint["id"], "no.such_type", "INVALID_ARGUMENT"),
        (stranger, endpoint["id"], "comment.add", "FAILED_PRECONDITION")  # webhooks off there: never learns of it
    ]:
        with pytest.raises(ApiError) as caught:
            send(live, who, endpoint_id, event_type)
        assert caught.value.code == code
    assert messages(client, t)["messages"] == [] and receiver.requests == []
