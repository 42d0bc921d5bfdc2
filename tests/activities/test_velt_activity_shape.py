"""activities/get in Velt's shape, beside collab's (issue #51 item 8): each record carries Velt's `metadata` (the
API key, organization and document it belongs to) while the ids at the top stay; read through velt-py."""

from velt_py.models.activity_api import GetActivitiesRequest

from support.factories import activity
from support.factories import add_activities as add
from support.helpers import enable_activities, new_tenant, result


def test_activities_get_answers_velts_metadata(client, sdk):
    t = new_tenant(client)
    enable_activities(client, t)
    result(add(client, t, activity(id="a1", targetEntityId="ann1")))
    result(add(client, t, activity(id="a2"), doc="doc2"))
    answer = sdk(t).api.activities.getActivities(GetActivitiesRequest(organizationId="org1", order="asc"))["result"]
    assert [(r["id"], r["metadata"]) for r in answer["data"]] == [
        ("a1", {"apiKey": t.api_key, "organizationId": "org1", "documentId": "doc1"}),
        ("a2", {"apiKey": t.api_key, "organizationId": "org1", "documentId": "doc2"}),
    ]
    assert [(r["organizationId"], r["documentId"]) for r in answer["data"]] == [("org1", "doc1"), ("org1", "doc2")]
