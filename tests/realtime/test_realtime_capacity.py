"""Capacity (review findings 13 and 16): sockets are capped per user, per workspace and per process as well as per
document and API key; the access recheck runs on its own schedule, an organization at a time, whatever presence
writes do."""

import asyncio

from collab.presence import service as presence
from collab.realtime import access
from support.helpers import add_organization, new_tenant, post, result
from support.realtime_support import YClient, refused, room, token_for, url

LIMITED, NO_ACCESS = 4429, 4403


def test_sockets_are_capped_per_user_per_workspace_and_per_process(client, live, tune):
    t = new_tenant(client)
    room(client, t)
    alice = token_for(client, t, "alice", "org", "doc")
    bob = token_for(client, t, "bob", "org", "doc")
    rt = live.app.state.realtime

    async def scenario():
        tune(realtime_max_connections_per_user=2)
        mine = [await YClient.open(url(live, "org", "doc", "e1", alice)) for _ in range(2)]
        assert await refused(url(live, "org", "doc", "e1", alice)) == LIMITED
        other = await YClient.open(url(live, "org", "doc", "e1", bob))  # another user of the key still gets in
        tune(realtime_max_connections_per_user=50, realtime_max_connections_per_workspace=3)
        assert await refused(url(live, "org", "doc", "e1", bob)) == LIMITED
        # This test's three sockets alone pass a process cap of 1, whatever other sockets come and go meanwhile.
        tune(realtime_max_connections_per_workspace=4000, realtime_max_connections=1)
        assert await refused(url(live, "org", "doc", "e1", bob)) == LIMITED
        tune(realtime_max_connections=10_000)
        for c in [*mine, other]:
            await c.close()
        # Closed sockets no longer count: the user may open two again.
        live.run(rt.until(lambda: (t.api_key, "alice") not in rt.hub.by_user))
        again = [await YClient.open(url(live, "org", "doc", "e1", alice)) for _ in range(2)]
        for c in again:
            await c.close()

    asyncio.run(scenario())


def test_the_access_recheck_runs_whatever_presence_writes_do(client, live, tune, monkeypatch):
    """Presence writes that fail every tick no longer take the recheck (revocation, expiry) down with them."""
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "alice", "org", "doc")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))

        async def broken(*args, **kwargs):
            raise RuntimeError("presence store down")

        monkeypatch.setattr(presence, "set_live", broken)
        # A write is due at every tick (presence rows refresh at a third of presence_away_s), and every one fails.
        tune(realtime_heartbeat_s=0.05, realtime_access_recheck_s=0.1, presence_away_s=0.03)
        result(
            post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["org"], "disabled": True},
                 t.headers))
        assert await a.closed(timeout=20) == NO_ACCESS

    asyncio.run(scenario())


def test_one_organization_failing_its_recheck_does_not_hold_back_another(client, live, monkeypatch):
    t = new_tenant(client)
    room(client, t, org="broken")
    add_organization(client, t, "org", "doc")
    result(
        post(client, "/v2/crdt/add",
             {"organizationId": "org", "documentId": "doc", "editorId": "e1", "type": "text", "data": ""}, t.headers))
    first = token_for(client, t, "alice", "broken", "doc")
    second = token_for(client, t, "alice", "org", "doc")
    rt = live.app.state.realtime
    real = access.roles

    async def roles(svc, db, *, organization_id, **kw):
        if organization_id == "broken":
            raise RuntimeError("this organization's access read fails")
        return await real(svc, db, organization_id=organization_id, **kw)

    async def scenario():
        a = await YClient.open(url(live, "broken", "doc", "e1", first))
        b = await YClient.open(url(live, "org", "doc", "e1", second))
        monkeypatch.setattr(access, "roles", roles)
        result(
            post(client, "/v2/organizations/access/disablestate/update", {"organizationIds": ["org"], "disabled": True},
                 t.headers))
        live.run(rt.upkeep.recheck())
        assert await b.closed() == NO_ACCESS
        await a.close()

    asyncio.run(scenario())
