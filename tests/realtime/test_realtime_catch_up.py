"""Realtime catch-up: after the fan-out link to Redis is lost and made again, sockets get what they missed."""

import asyncio
import dataclasses

import redis

from collab.crdt import service as crdt_service
from collab.crdt.schemas import UpdateCrdt
from collab.kit.auth import Tenant
from support.helpers import new_tenant
from support.realtime_support import YClient, crdt_text, room, token_for, url


def test_a_socket_gets_what_was_stored_while_its_process_was_not_subscribed(client, live):
    t = new_tenant(client)
    room(client, t, text="Hello")
    token = token_for(client, t, "alice", "org", "doc")
    hub = live.app.state.realtime.hub
    # An edit stored while this process heard nothing: through services without Redis, so nothing is published
    # (as when another process's publish went to a Redis this one was not subscribed to, during a failover).
    deaf = dataclasses.replace(live.svc, redis=None)
    tenant = Tenant(api_key_id=t.api_key, workspace_id=t.workspace["id"])
    edit = UpdateCrdt(organizationId="org", documentId="doc", editorId="e1", data="Hello, world")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", token))
        assert str(a.text) == "Hello"
        live.run(crdt_service.update(deaf, tenant=tenant, data=edit))
        await a.handled()
        assert str(a.text) == "Hello"  # nothing reached the socket: no publish was made
        subscribed = hub.subscriptions
        # The process's subscriber connection is cut (a Redis restart or failover does this); the reader connects
        # again, resubscribes, and sends every socket the stored document.
        with redis.Redis.from_url(live.settings.redis_url) as admin:
            assert admin.client_kill_filter(_type="pubsub") >= 1
        await a.until(lambda: hub.subscriptions > subscribed)
        await a.until(lambda: str(a.text) == "Hello, world")
        await a.close()

    asyncio.run(scenario())
    assert crdt_text(client, t) == "Hello, world"


def test_a_sync_that_rebuilds_the_document_sends_every_socket_what_storage_held_that_it_had_not_seen(client, live):
    t = new_tenant(client)
    room(client, t, text="Hello")
    alice, bob = (token_for(client, t, user, "org", "doc") for user in ("alice", "bob"))
    hub = live.app.state.realtime.hub
    # Stored by a process cut off from Redis: its publish never came (no publish at all here).
    deaf = dataclasses.replace(live.svc, redis=None)
    tenant = Tenant(api_key_id=t.api_key, workspace_id=t.workspace["id"])
    edit = UpdateCrdt(organizationId="org", documentId="doc", editorId="e1", data="Hello, world")

    async def scenario():
        a = await YClient.open(url(live, "org", "doc", "e1", alice))
        live.run(crdt_service.update(deaf, tenant=tenant, data=edit))
        await a.handled()
        assert str(a.text) == "Hello"
        # The room's copy is old enough to be built again for the next sync (SYNC_MAX_AGE_S): a client that
        # connects (a socket moving here from a node that failed) is answered from storage, and the sockets already
        # here get what storage held beyond their copy.
        hub.rooms[(t.api_key, "org", "doc")].docs["e1"].built -= 3600
        b = await YClient.open(url(live, "org", "doc", "e1", bob))
        await b.until(lambda: str(b.text) == "Hello, world")
        await a.until(lambda: str(a.text) == "Hello, world")
        await a.close()
        await b.close()

    asyncio.run(scenario())
