"""Recordings: import with versions, get in the spec's shape with filters and paging, delete, tenants."""

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from collab.kit.jobs import transaction
from collab.recordings import repository as recordings_repo
from support.factories import page_of
from support.helpers import error, issue_paths, new_tenant, post, result

ADD, GET, DELETE = (f"/v2/recordings/{op}" for op in ("add", "get", "delete"))
VIDEO = {
    "url": "https://cdn.example.com/r1.webm", "mimeType": "video/webm", "name": "r1.webm", "type": "video",
    "size": 1_048_576
}
THUMB = {"url": "http://cdn.example.com/r1.png", "mimeType": "image/png", "name": "r1.png", "type": "image", "size": 0}


def recording(annotation_id=None, **fields):
    record = {
        "recordingType": "screen", "mode": "floating", "displayName": "Walkthrough",
        "recordedTime": {"duration": 3_723_000}, "attachments": [VIDEO], **fields
    }
    if annotation_id is not None:
        record["annotationId"] = annotation_id
    return record


def add(client, t, *recordings, org="o1", doc="d1"):
    return post(client, ADD, {"organizationId": org, "documentId": doc, "recordings": list(recordings)}, t.headers)


def listed(client, t, **filters):
    return page_of(client, GET, t, **{"organizationId": "o1", **filters})


def got(client, t, **filters):
    return listed(client, t, **filters)["data"]


def test_add_and_get_in_the_spec_shape(client):
    t = new_tenant(client)
    added = result(add(client, t, recording("ann1", attachments=[VIDEO, THUMB], **{"from": {"userId": "u1"}})))
    assert added == {"ann1": {"success": True, "id": "ann1", "message": "Recording added."}}
    page = listed(client, t)
    assert page["pageToken"] is None
    assert page["data"] == [{
        "type": "recorder", "recordingType": "screen", "mode": "floating",
        "metadata": {"apiKey": t.api_key, "documentId": "d1",
                     "organizationId": "o1"}, "recordedTime": {"duration": 3_723_000, "display": "01:02:03"},
        "displayName": "Walkthrough", "annotationId": "ann1", "attachments": [{"attachmentId": 1, **VIDEO},
                                                                              {"attachmentId": 2,
                                                                               **THUMB}], "latestVersion": 1
    }]
    v1 = post(client, "/v1/recordings/get", {"organizationId": "o1"}, t.headers)
    assert v1.json()["result"]["data"] == page["data"]


def test_generated_annotation_ids(client):
    t = new_tenant(client)
    added = result(add(client, t, recording(), recording()))
    assert len(added) == 2
    for key, item in added.items():
        assert key.startswith("rec_") and item == {"success": True, "id": key, "message": "Recording added."}
    assert sorted(r["annotationId"] for r in got(client, t)) == sorted(added)


def test_versions_and_latest_version(client, db):
    t = new_tenant(client)
    result(add(client, t, recording("ann1", attachments=[VIDEO, THUMB])))
    second = recording("ann1", displayName="Take 2", mode="thread", attachments=[THUMB],
                       recordedTime={"duration": 5_000})
    assert result(add(client, t,
                      second)) == {"ann1": {"success": True, "id": "ann1", "message": "Recording version 2 added."}}
    [record] = got(client, t)
    assert record["latestVersion"] == 2 and record["displayName"] == "Take 2" and record["mode"] == "thread"
    assert record["attachments"] == [{"attachmentId": 1, **THUMB}]
    assert record["recordedTime"] == {"duration": 5_000, "display": "00:00:05"}
    assert result(add(client, t, recording("ann1")))["ann1"]["message"] == "Recording version 3 added."
    assert got(client, t)[0]["latestVersion"] == 3
    rows = db.execute("select version from recordings where api_key_id = %s order by version", (t.api_key, )).fetchall()
    assert [r["version"] for r in rows] == [1, 2, 3]


def test_display_is_hh_mm_ss_from_milliseconds(client):
    t = new_tenant(client)
    cases = {
        0: "00:00:00", 999: "00:00:00", 59_999: "00:00:59", 60_000: "00:01:00", 3_723_000: "01:02:03",
        86_399_000: "23:59:59", 97_200_000: "27:00:00", 360_000_000: "100:00:00"
    }
    result(add(client, t, *(recording(f"ann{d:012d}", recordedTime={"duration": d}) for d in cases)))
    assert {r["recordedTime"]["duration"]: r["recordedTime"]["display"] for r in got(client, t)} == cases


def test_concurrent_imports_take_distinct_versions(client, live):
    t = new_tenant(client)

    def import_(i):
        # Every writer names the shared annotations, in a different order each.
        ids = ["same", "also-same", f"own{i}"]
        with httpx.Client(base_url=live.url, timeout=30) as c:
            ordered = ids if i % 2 else ids[::-1]
            return add(c, t, *(recording(a, displayName=f"take {i}") for a in ordered)).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(import_, range(8))) == {200}
    latest = {r["annotationId"]: r["latestVersion"] for r in got(client, t)}
    assert latest == {"same": 8, "also-same": 8, **{f"own{i}": 1 for i in range(8)}}


def test_annotation_on_another_document_is_refused_per_item(client):
    t = new_tenant(client)
    result(add(client, t, recording("ann1")))
    moved = result(add(client, t, recording("ann1"), recording("ann2"), doc="d2"))
    assert moved == {
        "ann1": {"success": False, "id": "ann1", "message": "Recording belongs to another document."},
        "ann2": {"success": True, "id": "ann2", "message": "Recording added."}
    }
    assert [(r["annotationId"], r["metadata"]["documentId"], r["latestVersion"])
            for r in got(client, t)] == [("ann1", "d1", 1), ("ann2", "d2", 1)]
    # The same annotationId in another organization is another recording.
    assert result(add(client, t, recording("ann1"), org="o2", doc="d2"))["ann1"]["message"] == "Recording added."


def test_get_filters(client):
    t = new_tenant(client)
    result(add(client, t, recording("a1"), recording("a2")))
    result(add(client, t, recording("b1"), doc="d2"))
    result(add(client, t, recording("c1"), org="o2"))
    ids = lambda **f: [r["annotationId"] for r in got(client, t, **f)]  # noqa: E731
    assert ids() == ["a1", "a2", "b1"]
    assert ids(documentId="d1") == ["a1", "a2"]
    assert ids(documentId="d2") == ["b1"]
    assert ids(recordingIds=["b1", "a2", "c1", "zz"]) == ["a2", "b1"]
    assert ids(documentId="d1", recordingIds=["b1", "a2"]) == ["a2"]
    assert ids(organizationId="o2") == ["c1"]
    assert ids(organizationId="nope") == []


def test_paging_has_no_duplicates_or_gaps(client):
    t = new_tenant(client)
    all_ids = [f"r{i:02d}" for i in range(7)]
    result(add(client, t, *(recording(i) for i in all_ids)))
    result(add(client, t, recording("r03")))  # a second version is still one record
    seen, token, sizes = [], None, []
    while True:
        page = listed(client, t, pageSize=3, **({"pageToken": token} if token else {}))
        sizes.append(len(page["data"]))
        seen += [r["annotationId"] for r in page["data"]]
        token = page["pageToken"]
        if token is None:
            break
    assert sizes == [3, 3, 1] and seen == all_ids
    first = listed(client, t, pageSize=7)
    assert len(first["data"]) == 7 and first["pageToken"] is None
    # Paging with a filter.
    filtered = listed(client, t, pageSize=1, recordingIds=["r05", "r01"])
    assert [r["annotationId"] for r in filtered["data"]] == ["r01"]
    rest = listed(client, t, pageSize=1, recordingIds=["r05", "r01"], pageToken=filtered["pageToken"])
    assert [r["annotationId"] for r in rest["data"]] == ["r05"] and rest["pageToken"] is None
    # A made-up token, or one issued for another organization, is refused.
    err = error(post(client, GET, {"organizationId": "o1", "pageToken": "garbage!"}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["pageToken"]]
    o1_token = listed(client, t, pageSize=1)["pageToken"]
    err = error(post(client, GET, {"organizationId": "o2", "pageToken": o1_token}, t.headers), "INVALID_ARGUMENT")
    assert issue_paths(err) == [["pageToken"]]


def test_delete_removes_every_version(client, db):
    t = new_tenant(client)
    result(add(client, t, recording("ann1"), recording("ann2")))
    result(add(client, t, recording("ann1")))
    gone = result(post(client, DELETE, {"organizationId": "o1", "annotationIds": ["ann1", "zz"]}, t.headers))
    assert gone == {
        "ann1": {"success": True, "id": "ann1", "message": "Recording deleted."},
        "zz": {"success": False, "id": "zz", "message": "Recording does not exist."}
    }
    assert [r["annotationId"] for r in got(client, t)] == ["ann2"]
    count = db.execute("select count(*) as n from recordings where api_key_id = %s and annotation_id = 'ann1'",
                       (t.api_key, )).fetchone()["n"]
    assert count == 0
    # Deleted means gone: the id starts again at version 1, on any document.
    assert result(add(client, t, recording("ann1"), doc="d9"))["ann1"]["message"] == "Recording added."
    again = post(client, DELETE, {"organizationId": "o2", "annotationIds": ["ann2"]}, t.headers)
    assert result(again)["ann2"]["success"] is False


def _attachment(**change):
    return recording("x", attachments=[{**VIDEO, **change}])


def _without(key):
    return recording("x", attachments=[{k: v for k, v in VIDEO.items() if k != key}])


@pytest.mark.parametrize(
    "body, paths",
    [({}, [["documentId"], ["organizationId"], ["recordings"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": []}, [["recordings"]]),
     ({"organizationId": 7, "documentId": "d1", "recordings": [recording("x")]}, [["organizationId"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [{"annotationId": "x"}]
       }, [["recordings", "0", "attachments"], ["recordings", "0", "displayName"], ["recordings", "0", "mode"],
           ["recordings", "0", "recordedTime"], ["recordings", "0", "recordingType"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x"), recording("x")]}, [["recordings"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x" * 201)]
       }, [["recordings", "0", "annotationId"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", recordingType="s" * 51)]
       }, [["recordings", "0", "recordingType"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", displayName="")]
       }, [["recordings", "0", "displayName"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", displayName="n" * 501)]
       }, [["recordings", "0", "displayName"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", recordedTime={"duration": -1})]
       }, [["recordings", "0", "recordedTime", "duration"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", recordedTime={"duration": 1.5})]
       }, [["recordings", "0", "recordedTime", "duration"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", recordedTime={"duration": "10"})]
       }, [["recordings", "0", "recordedTime", "duration"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", recordedTime={"duration": 2**53})]
       }, [["recordings", "0", "recordedTime", "duration"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", recordedTime={})]
       }, [["recordings", "0", "recordedTime", "duration"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", attachments=[])]
       }, [["recordings", "0", "attachments"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(url="ftp://cdn.example.com/r.webm")]
       }, [["recordings", "0", "attachments", "0", "url"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(url="javascript:alert(1)")]
       }, [["recordings", "0", "attachments", "0", "url"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(url="https://" + "a" * 2000)]
       }, [["recordings", "0", "attachments", "0", "url"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(size=-1)]
       }, [["recordings", "0", "attachments", "0", "size"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(size=10.5)]
       }, [["recordings", "0", "attachments", "0", "size"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(size="10")]
       }, [["recordings", "0", "attachments", "0", "size"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_without("mimeType")]
       }, [["recordings", "0", "attachments", "0", "mimeType"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [_attachment(type="t" * 51)]
       }, [["recordings", "0", "attachments", "0", "type"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", attachments=[VIDEO] * 101)]
       }, [["recordings", "0", "attachments"]]),
     ({"organizationId": "o1", "documentId": "d1", "recordings": [recording("x", **{"from": {"name": "Ana"}})]
       }, [["recordings", "0", "from", "userId"]])])
def test_add_validation(client, body, paths):
    t = new_tenant(client)
    err = error(post(client, ADD, body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == paths
    assert got(client, t) == []


@pytest.mark.parametrize("path, body, paths",
                         [(GET, {}, [["organizationId"]]),
                          (GET, {"organizationId": "o1", "pageSize": 0}, [["pageSize"]]),
                          (GET, {"organizationId": "o1", "pageSize": 1001}, [["pageSize"]]),
                          (GET, {"organizationId": "o1", "pageSize": "10"}, [["pageSize"]]),
                          (GET, {"organizationId": "o1", "recordingIds": []}, [["recordingIds"]]),
                          (GET, {"organizationId": "o1", "recordingIds": "ann1"}, [["recordingIds"]]),
                          (GET, {"organizationId": "o1", "recordingIds": [f"a{i}"
                                                                          for i in range(101)]}, [["recordingIds"]]),
                          (GET, {"organizationId": "o1", "documentId": 3}, [["documentId"]]),
                          (DELETE, {"organizationId": "o1"}, [["annotationIds"]]),
                          (DELETE, {"organizationId": "o1", "annotationIds": ["a", "a"]}, [["annotationIds"]]),
                          (DELETE, {"annotationIds": ["a"]}, [["organizationId"]])])
def test_get_and_delete_validation(client, path, body, paths):
    t = new_tenant(client)
    err = error(post(client, path, body, t.headers), "INVALID_ARGUMENT")
    assert sorted(issue_paths(err)) == paths


def test_another_tenants_ids_are_invisible_and_independent(client):
    a, b = new_tenant(client), new_tenant(client)
    result(add(client, a, recording("ann1")))
    assert got(client, b) == []
    assert got(client, b, recordingIds=["ann1"]) == []
    gone = result(post(client, DELETE, {"organizationId": "o1", "annotationIds": ["ann1"]}, b.headers))
    assert gone == {"ann1": {"success": False, "id": "ann1", "message": "Recording does not exist."}}
    # b's ann1 is b's own first version, even on another document.
    assert result(add(client, b, recording("ann1", displayName="B's"),
                      doc="d2"))["ann1"] == {"success": True, "id": "ann1", "message": "Recording added."}
    [mine] = got(client, a)
    assert (mine["displayName"], mine["latestVersion"],
            mine["metadata"]) == ("Walkthrough", 1, {"apiKey": a.api_key, "documentId": "d1", "organizationId": "o1"})
    [theirs] = got(client, b)
    assert (theirs["displayName"], theirs["latestVersion"], theirs["metadata"]["apiKey"]) == ("B's", 1, b.api_key)


def test_forget_user_deletes_what_they_recorded(client, live):
    t = new_tenant(client)
    u1, u2 = {"from": {"userId": "u1", "name": "Ana"}}, {"from": {"userId": "u2"}}
    result(add(client, t, recording("mine", **u1), recording("theirs", **u2), recording("nobody")))
    result(add(client, t, recording("theirs", displayName="u1's take", **u1)))
    result(add(client, t, recording("elsewhere", **u1), org="o2"))

    def forget(organization_ids):

        async def run():
            async with transaction(live.svc.pool, None) as tx:
                return await recordings_repo.forget_user(tx.conn, api_key_id=t.api_key, user_ids=["u1"],
                                                         organization_ids=organization_ids)

        return live.run(run())

    assert forget(["o1"]) == 2
    # u2's annotation keeps u2's version; u1's own annotation is gone; o2 is untouched.
    assert [(r["annotationId"], r["latestVersion"], r["displayName"])
            for r in got(client, t)] == [("nobody", 1, "Walkthrough"), ("theirs", 1, "Walkthrough")]
    assert [r["annotationId"] for r in got(client, t, organizationId="o2")] == ["elsewhere"]
    assert forget(None) == 1
    assert got(client, t, organizationId="o2") == []
