"""organizations/get and organizations/documents/get in Velt's shapes, beside collab's (issue #51 item 8): each
record's `id` beside `organizationId`/`documentId`, and the page token under `nextPageToken` beside `pageToken`, read
and paged through velt-py's own service classes."""

from velt_py.models.document import AddDocumentsRequest, GetDocumentsRequest
from velt_py.models.organization import AddOrganizationsRequest, GetOrganizationsRequest

from support.helpers import new_tenant


def test_organizations_get_pages_by_velts_names(client, sdk):
    t = new_tenant(client)
    api = sdk(t).api
    api.organizations.addOrganizations(
        AddOrganizationsRequest(organizations=[{"organizationId": o} for o in ("o1", "o2", "o3")]))
    seen, token = [], None
    for _ in range(4):
        page = api.organizations.getOrganizations(GetOrganizationsRequest(pageSize=2, pageToken=token))["result"]
        assert page["nextPageToken"] == page["pageToken"]
        assert all(o["id"] == o["organizationId"] for o in page["data"])
        seen += [o["id"] for o in page["data"]]
        token = page["nextPageToken"]
        if token is None:
            break
    assert seen == ["o1", "o2", "o3"]


def test_documents_get_pages_by_velts_names(client, sdk):
    t = new_tenant(client)
    api = sdk(t).api
    api.organizations.addOrganizations(AddOrganizationsRequest(organizations=[{"organizationId": "o1"}]))
    api.documents.addDocuments(
        AddDocumentsRequest(organizationId="o1",
                            documents=[{"documentId": d, "documentName": d.upper()} for d in ("d1", "d2", "d3")]))
    first = api.documents.getDocuments(GetDocumentsRequest(organizationId="o1", pageSize=2))["result"]
    assert [(d["id"], d["documentId"], d["documentName"]) for d in first["data"]] == [("d1", "d1", "D1"),
                                                                                      ("d2", "d2", "D2")]
    assert first["nextPageToken"] == first["pageToken"] is not None
    rest = api.documents.getDocuments(
        GetDocumentsRequest(organizationId="o1", pageSize=2, pageToken=first["nextPageToken"]))["result"]
    assert [d["id"] for d in rest["data"]] == ["d3"] and rest["nextPageToken"] is None
