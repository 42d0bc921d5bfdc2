"""Drain on SIGTERM (kit/drain.py): not ready at once, still serving for COLLAB_DRAIN_S, then sockets closed with
1001 and the process gone; a second signal stops at once. Real `collab api` processes."""

import asyncio
import signal

import httpx

from support.api_process import ApiProcess
from support.faults_env import wait_for
from support.helpers import new_tenant, post, result
from support.realtime_support import YClient, room, token_for
from support.settings import make_settings

CONFIG_GET = "/v2/workspace/activityconfig/get"


def _readyz(api: ApiProcess) -> httpx.Response:
    return httpx.get(api.url + "/readyz", timeout=10)


def test_sigterm_drains_then_closes_sockets_with_1001(servers, fake_providers):
    api = ApiProcess(make_settings(servers, fake_providers), drain_s=3).start()
    try:
        with httpx.Client(base_url=api.url, timeout=30) as client:
            t = new_tenant(client)
            room(client, t)
            token = token_for(client, t, "alice", "org", "doc")
            ws = api.url.replace("http://", "ws://") + f"/v2/realtime/org/doc/e1?token={token}"

            async def scenario():
                a = await YClient.open(ws)
                api.process.send_signal(signal.SIGTERM)
                # Not ready at once (the load balancer takes it out), while requests are still answered.
                # The signal is handled on the server's next turn.
                ready = wait_for(lambda: (r := _readyz(api)).status_code == 503 and r, timeout=30, what="503")
                assert ready.json()["error"]["details"]["checks"]["drain"] == "draining"
                result(post(client, CONFIG_GET, {}, t.headers))
                await a.handled()  # the socket is still served
                assert api.process.poll() is None
                # Then the socket is told the server is going away, and the process ends.
                assert await a.closed(timeout=30) == 1001

            asyncio.run(scenario())
        api.process.wait(30)
    finally:
        api.stop(kill=True)


def test_a_second_signal_stops_without_waiting_out_the_drain(servers, fake_providers):
    api = ApiProcess(make_settings(servers, fake_providers), drain_s=600).start()
    try:
        api.process.send_signal(signal.SIGTERM)
        wait_for(lambda: _readyz(api).status_code == 503, timeout=30, what="the first signal handled")
        api.process.send_signal(signal.SIGTERM)
        api.process.wait(60)  # far less than the 600 s drain
    finally:
        api.stop(kill=True)
