"""Allowed domains (Velt's `workspace/domains/*`): Velt's shapes through velt-py, and their enforcement on realtime
sockets' Origin and on console pages a foreign Origin asks for (ADR 0049)."""

import asyncio

from velt_py.models.workspace import AddDomainsRequest, CreateApiKeyRequest, DeleteDomainsRequest, GetDomainsRequest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from support.console_http import signed_in
from support.helpers import error, new_tenant, post, result, velt
from support.realtime_support import room, token_for, url

ADD, DELETE, GET = "/v2/workspace/domains/add", "/v2/workspace/domains/delete", "/v2/workspace/domains/get"


def test_velt_py_adds_lists_and_deletes_domains_as_velt_stores_them(client, sdk):
    t = new_tenant(client)
    api = sdk(t).api.workspace
    assert api.getDomains(GetDomainsRequest())["result"]["data"] == {"allowedDomains": []}
    added = api.addDomains(
        AddDomainsRequest(domains=[
            "https://www.google.com", "https://*.firebase.com", "Example.COM:8080/path", "bücher.de",
            "http://[::1]:3000", "127.0.0.1"
        ]))["result"]
    assert added["message"] == "Domain(s) added successfully to allowed domains."
    stored = ["google.com", "*.firebase.com", "example.com", "xn--bcher-kva.de", "::1", "127.0.0.1"]
    assert added["data"] == {"domainsAdded": stored}
    assert api.getDomains(GetDomainsRequest())["result"]["data"] == {"allowedDomains": stored}
    # Some already there: added ones named, the others skipped (a success; Velt answers an INTERNAL error here).
    again = result(post(client, "/v1/workspace/domains/add", {"domains": ["google.com", "velt.dev"]}, velt(t)))
    assert again == {"domainsAdded": ["velt.dev"], "skippedDomains": ["google.com"]}
    removed = api.deleteDomains(DeleteDomainsRequest(domains=["https://www.google.com", "nothere.com"]))["result"]
    assert removed["data"] == {"domainsRemoved": ["google.com"], "skippedDomains": ["nothere.com"]}
    assert removed["message"].endswith("Skipped non-existing domains.")
    assert result(post(client, "/v1/workspace/domains/delete", {"domains": ["velt.dev"]},
                       velt(t))) == {"domainsRemoved": ["velt.dev"]}
    assert "velt.dev" not in result(post(client, GET, {}, t.headers))["allowedDomains"]


def test_apikey_create_honours_allowed_domains_and_localhost(client, sdk):
    t = new_tenant(client)
    api = sdk(t, workspaceId=t.workspace["id"], workspaceAuthToken=t.workspace["authToken"]).api.workspace
    key = api.createApiKey(
        CreateApiKeyRequest(ownerEmail="o@example.com", type="testing", allowedDomains=["https://www.app.example.com"],
                            addLocalHostToAllowedDomains=True, persistenceDBRegion="eur3"))["result"]["data"]["apiKey"]
    token = result(post(client, "/v2/workspace/authtokens/get", {"apiKey": key}, t.workspace_headers))
    headers = {"x-velt-api-key": key, "x-velt-auth-token": token["authTokens"][0]["token"]}
    assert result(post(client, GET, {}, headers))["allowedDomains"] == ["app.example.com", "localhost", "127.0.0.1"]
    bad = error(
        post(client, "/v2/workspace/apikey/create",
             {"ownerEmail": "o@example.com", "type": "testing", "allowedDomains": ["ok.com", "bad domain"]},
             t.workspace_headers), "INVALID_ARGUMENT")
    assert "Entry 1" in bad["message"] or "Entry 1" in str(bad.get("details"))
    assert error(
        post(client, "/v2/workspace/apikey/create",
             {"ownerEmail": "o@example.com", "type": "testing", "persistenceDBRegion": ""}, t.workspace_headers),
        "INVALID_ARGUMENT")


def test_bad_domain_input_is_refused_clearly(client):
    t = new_tenant(client)
    pathological = [
        "", " ", "exa mple.com", "a\u0001b.com", "*.com", "*", "foo.*.com", "user@example.com", "ftp://example.com",
        "-bad-.com", "a" * 64 + ".com", ".".join(["a"] * 200), "x" * 2001, "[::zz]", "*.1.2.3.4", "exa_mple.com",
        "\u202eevil.com", "..", "https://"
    ]
    for value in pathological:
        assert error(post(client, ADD, {"domains": [value]}, t.headers), "INVALID_ARGUMENT"), value
    for body in ({}, {"domains": []}, {"domains": "example.com"}, {"domains": [7]}, {"domains": [None]},
                 {"domains": ["a.com"] * 101}):
        assert error(post(client, ADD, body, t.headers), "INVALID_ARGUMENT"), body
        assert error(post(client, DELETE, body, t.headers), "INVALID_ARGUMENT"), body
    assert result(post(client, GET, {}, t.headers)) == {"allowedDomains": []}
    assert error(post(client, GET, {}, {"x-velt-api-key": t.api_key, "x-velt-auth-token": "wrong"}),
                 "PERMISSION_DENIED")


def test_domains_belong_to_one_api_key(client):
    a, b = new_tenant(client), new_tenant(client)
    result(post(client, ADD, {"domains": ["a.example.com"]}, a.headers))
    assert result(post(client, GET, {}, b.headers)) == {"allowedDomains": []}
    assert result(post(client, DELETE, {"domains": ["a.example.com"]},
                       b.headers)) == {"domainsRemoved": [], "skippedDomains": ["a.example.com"]}
    assert result(post(client, GET, {}, a.headers)) == {"allowedDomains": ["a.example.com"]}


async def _opened(address: str, origin: str | None) -> tuple[int, str]:
    """(0, "") when the server admitted the socket (its sync step 1 arrived), else (close code, reason)."""
    async with connect(address, max_size=None, origin=origin) as ws:  # type: ignore[arg-type]
        try:
            await asyncio.wait_for(ws.recv(), 10)
            return 0, ""
        except ConnectionClosed as exc:
            return (exc.rcvd.code, exc.rcvd.reason) if exc.rcvd else (1006, "")


def test_socket_origins_are_checked_against_the_allowed_domains(client, live):
    t = new_tenant(client)
    room(client, t)
    address = url(live, "org", "doc", "e1", token_for(client, t, "ana", "org", "doc"))

    def opened(origin):
        return asyncio.run(_opened(address, origin))

    # No list: every origin, as before.
    assert opened("https://anything.example") == (0, "")
    result(post(client, ADD, {"domains": ["app.example.com", "*.preview.example.com", "localhost"]}, t.headers))
    for allowed in ("https://app.example.com", "https://www.app.example.com", "https://app.example.com:8443",
                    "https://a.b.preview.example.com", "https://www.preview.example.com", "http://localhost:3000",
                    None):
        assert opened(allowed) == (0, ""), allowed
    for other in ("https://evil.example", "https://app.example.com.evil.example", "https://preview.example.com", "null",
                  "http://127.0.0.1:3000", "garbage"):
        code, reason = opened(other)
        assert code == 4403 and "allowed domain" in reason, other
    # Without a valid token nothing is learnt of the key's domains: a forged token from any origin is 4401.
    forged = url(live, "org", "doc", "e1", token_for(client, t, "ana", "org", "doc")[:-4] + "AAAA")
    assert asyncio.run(_opened(forged, "https://evil.example"))[0] == 4401
    # Deleting the last domain allows every origin again.
    result(post(client, DELETE, {"domains": ["app.example.com", "*.preview.example.com", "localhost"]}, t.headers))
    assert opened("https://evil.example") == (0, "")


def test_console_pages_of_a_key_refuse_a_foreign_origin_outside_its_domains(client, live):
    t = new_tenant(client)
    page = f"/console/settings?key={t.api_key}"
    with signed_in(live, t) as web:
        assert web.get(page).status_code == 200  # the console's own Origin
        assert web.get(page, headers={"origin": "https://embed.example.com"}).status_code == 200  # no list: any
        result(post(client, ADD, {"domains": ["embed.example.com"]}, t.headers))
        assert web.get(page).status_code == 200
        assert web.get(page, headers={"origin": "https://embed.example.com"}).status_code == 200
        refused = web.get(page, headers={"origin": "https://evil.example"})
        assert refused.status_code == 403 and "not an allowed domain" in refused.text
        assert web.get("/console/keys", headers={"origin": "https://evil.example"}).status_code == 403
