"""Velt's v1 location operations (issue #51 item 10): a document's threads at one location moved to a new location
object (merged or replaced), and every thread and notification at a location deleted; one tenant's calls never
touch another's data."""

from support.helpers import add_organization, enable_advanced_queries, error, issue_paths, new_tenant, post, result

L = "/v1/organizations/documents/locations"
WHERE = {"organizationId": "org", "documentId": "doc"}


def thread(client, t, annotation_id, location):
    result(
        post(
            client, "/v2/commentannotations/add", {
                **WHERE, "commentAnnotations": [{
                    "annotationId": annotation_id, "location": location,
                    "commentData": [{"commentText": f"on {annotation_id}", "from": {"userId": "u1"}}]
                }]
            }, t.headers))


def locations(client, t):
    threads = result(post(client, "/v2/commentannotations/get", WHERE, t.headers))
    return {a["annotationId"]: a.get("location") for a in threads}


def notify(client, t, notification_id, location_id):
    result(
        post(
            client, "/v2/notifications/add", {
                **WHERE, "notificationId": notification_id, "locationId": location_id, "actionUser": {"userId": "u1"},
                "displayHeadlineMessageTemplate": "x", "displayBodyMessage": "y", "notifyUsers": [{"userId": "u2"}]
            }, t.headers))


def scene(client):
    t = new_tenant(client)
    add_organization(client, t, "org", "doc")
    thread(client, t, "a1", {"id": "scene_1", "locationName": "Untitled scene", "version": 1})
    thread(client, t, "a2", {"id": "scene_1", "locationName": "Untitled scene", "version": 1})
    thread(client, t, "b1", {"id": "scene_2", "locationName": "Other"})
    return t


def test_update_moves_every_thread_at_the_location_merged_or_replaced(client):
    t = scene(client)
    other = scene(client)
    body = {
        "documentId": "doc", "migrate": {
            "oldLocation": {"id": "scene_1", "locationName": "Untitled scene"},
            "newLocation": {"id": "scene_1", "locationName": "White scene"}
        }, "merge": True
    }
    answer = post(client, f"{L}/update", body, t.headers)
    assert answer.status_code == 200 and answer.json()["result"]["message"] == "Location updated."
    merged = {"id": "scene_1", "locationName": "White scene", "version": 1}
    assert locations(client, t) == {"a1": merged, "a2": merged, "b1": {"id": "scene_2", "locationName": "Other"}}
    # Without merge the new object replaces the old one, a new id included: the threads follow it.
    result(
        post(client, f"{L}/update",
             {**WHERE, "migrate": {"oldLocation": {"id": "scene_1"}, "newLocation": {"id": "scene_9", "name": "New"}}},
             t.headers))
    assert locations(client, t)["a1"] == {"id": "scene_9", "name": "New"}
    threads = result(post(client, "/v2/commentannotations/get", {**WHERE, "locationIds": ["scene_9"]}, t.headers))
    assert sorted(a["annotationId"] for a in threads) == ["a1", "a2"]
    # Another tenant's threads at the same location are not touched.
    assert locations(client, other)["a1"] == {"id": "scene_1", "locationName": "Untitled scene", "version": 1}


def test_data_delete_removes_threads_and_notifications_at_the_location(client):
    t = scene(client)
    other = scene(client)
    enable_advanced_queries(client, t)
    notify(client, t, "n1", "scene_1")
    notify(client, t, "n2", "scene_2")
    answer = post(client, f"{L}/data/delete",
                  {"documentId": "doc", "location": {"id": "scene_1", "locationName": "White scene"}}, t.headers)
    assert answer.status_code == 200 and answer.json()["result"]["message"] == "Data deleted successfully."
    assert set(locations(client, t)) == {"b1"}
    left = result(post(client, "/v2/notifications/get", WHERE, t.headers))
    assert [n["id"] for n in left] == ["n2"]
    assert set(locations(client, other)) == {"a1", "a2", "b1"}


def test_bad_requests_name_their_field(client):
    t = scene(client)
    for body, path in (({"documentId": "doc", "location": {"name": "no id"}}, ["location"]),
                       ({"documentId": "doc"}, ["location"]), ({"location": {"id": "x"}}, ["documentId"])):
        err = error(post(client, f"{L}/data/delete", body, t.headers), "INVALID_ARGUMENT")
        assert path in issue_paths(err), body
    err = error(post(client, f"{L}/update", {"documentId": "doc", "migrate": {"newLocation": {"id": "x"}}}, t.headers),
                "INVALID_ARGUMENT")
    assert ["migrate", "oldLocation"] in issue_paths(err)
    error(
        post(client, f"{L}/update",
             {"documentId": "nowhere", "migrate": {"oldLocation": {"id": "a"}, "newLocation": {"id": "b"}}}, t.headers),
        "NOT_FOUND")
    error(post(client, f"{L}/data/delete", {"documentId": "doc", "location": {"id": "x"}}, {}), "UNAUTHENTICATED")
