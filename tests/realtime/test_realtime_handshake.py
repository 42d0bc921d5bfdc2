"""The socket handshake under abuse: bad tokens are limited per address, ids are checked before any query, every
refusal is a close code, and tokens never reach the log."""

import asyncio
import base64
import json
import logging

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from support.helpers import fresh_ip, new_tenant
from support.realtime_support import YClient, refused, room, token_for, url


def _forged(claims: dict) -> str:
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()  # noqa: E731
    return f"{part({'alg': 'EdDSA', 'typ': 'JWT'})}.{part(claims)}.AAAA"


async def _close_code(address: str, ip: str) -> int:
    """The close code the server answers a socket from `ip` with (X-Forwarded-For, trusted from 127.0.0.1); 0 when
    it was admitted (its first message, the sync step 1, arrived)."""
    async with connect(address, max_size=None, additional_headers={"x-forwarded-for": ip}) as ws:
        try:
            await asyncio.wait_for(ws.recv(), 10)
            return 0
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd else 1006


def test_ids_and_audiences_with_control_characters_are_refused_with_a_close_code(client, live, caplog):
    """The review's NUL audience and `%00` room id reached Postgres and ended in a traceback and an abnormal close."""
    t = new_tenant(client)
    room(client, t)
    ours = token_for(client, t, "ana", "org", "doc")
    caplog.set_level(logging.INFO)

    async def scenario():
        assert await refused(url(live, "org", "doc", "e1", _forged({"aud": "k\u0000", "sub": "x"}))) == 4401
        assert await refused(url(live, "org", "doc", "e1", _forged({"aud": "k" * 201, "sub": "x"}))) == 4401
        assert await refused(url(live, "org", "doc", "e1", _forged({"aud": ["k"], "sub": "x"}))) == 4401
        assert await refused(url(live, "org\u0000", "doc", "e1", ours)) == 4404
        assert await refused(url(live, "org", "doc\u001b[2J", "e1", ours)) == 4404
        c = await YClient.open(url(live, "org", "doc", "e1", ours))  # the valid room still opens
        await c.close()

    asyncio.run(scenario())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR
    ]


def test_bad_socket_tokens_count_against_the_address(client, live, clock, tune):
    tune(auth_failures_per_address="3/minute")
    t = new_tenant(client)
    room(client, t)
    ip = fresh_ip()
    known = token_for(client, t, "ana", "org", "doc")
    fresh = token_for(client, t, "ben", "org", "doc")

    async def scenario():
        assert await _close_code(url(live, "org", "doc", "e1", known), ip) == 0  # a token that worked from there
        for bad in ("not-a-jwt", _forged({"aud": t.api_key, "sub": "x"}), fresh[:-4] + "AAAA"):
            assert await _close_code(url(live, "org", "doc", "e1", bad), ip) == 4401
        # Past the limit the address is refused before any query, even with a valid token it never proved...
        assert await _close_code(url(live, "org", "doc", "e1", fresh), ip) == 4429
        # ...while other addresses are not, and a token that authenticated before still opens from it.
        assert await _close_code(url(live, "org", "doc", "e1", fresh), fresh_ip()) == 0
        assert await _close_code(url(live, "org", "doc", "e1", known), ip) == 0
        clock["now"] += 60  # the next window starts afresh
        assert await _close_code(url(live, "org", "doc", "e1", _forged({"aud": "x", "sub": "x"})), ip) == 4401

    asyncio.run(scenario())


def test_tokens_never_reach_the_log(client, live, caplog):
    t = new_tenant(client)
    room(client, t)
    token = token_for(client, t, "ana", "org", "doc")
    caplog.set_level(logging.INFO)

    async def scenario():
        c = await YClient.open(url(live, "org", "doc", "e1", token))
        await c.close()
        assert await refused(url(live, "org", "doc", "e1", token[:-4] + "AAAA")) == 4401

    asyncio.run(scenario())
    lines = [r.getMessage() for r in caplog.records]
    assert not [line for line in lines if token[:40] in line or token[-40:] in line]
    assert any("WebSocket" in line and "token=[redacted]" in line for line in lines), lines[-20:]
