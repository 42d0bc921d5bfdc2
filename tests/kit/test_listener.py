"""The Redis subscription behind the credential cache: messages handed on as they arrive, and "not live" whenever
messages may have been missed (link closed, Redis not answering a PING), then live again once resubscribed."""

import asyncio

import hiredis

from collab.kit.listener import Listener
from collab.kit.redisclient import redis_client

WAIT_S = 10


class FakeRedis:
    """A Redis stand-in on 127.0.0.1 that records the commands of each connection and answers as told."""

    def __init__(self):
        self.links: asyncio.Queue = asyncio.Queue()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return f"redis://user:secret@127.0.0.1:{self.server.sockets[0].getsockname()[1]}/0"

    async def _accept(self, reader, writer):
        await self.links.put((reader, writer))

    async def subscribed(self, listener: Listener):
        """Start the listener, take its connection and its two commands, and confirm the subscription."""
        await listener.start()
        reader, writer = await asyncio.wait_for(self.links.get(), WAIT_S)
        commands = await FakeRedis.commands(reader, 2)
        writer.write(b"+OK\r\n*3\r\n$9\r\nsubscribe\r\n$11\r\ncollab:test\r\n:1\r\n")
        return reader, writer, commands

    @staticmethod
    async def commands(reader, count: int) -> list:
        parser, found = hiredis.Reader(), []
        while len(found) < count:
            parser.feed(await reader.read(4096))
            while (command := parser.gets()) is not False:
                found.append(command)
        return found


def test_messages_arrive_and_a_lost_link_is_not_live_until_resubscribed():

    async def run():
        fake, messages, states = FakeRedis(), [], asyncio.Queue()
        listener = Listener(redis_client(await fake.start()), "collab:test", on_message=messages.append,
                            on_live=states.put_nowait, ping_s=WAIT_S, retry_s=0)
        await listener.start()
        reader, writer = await asyncio.wait_for(fake.links.get(), WAIT_S)
        assert await FakeRedis.commands(reader, 2) == [[b"AUTH", b"user", b"secret"], [b"SUBSCRIBE", b"collab:test"]]
        assert not listener.live  # nothing is trusted before Redis confirms the subscription
        writer.write(b"+OK\r\n*3\r\n$9\r\nsubscribe\r\n$11\r\ncollab:test\r\n:1\r\n")
        assert await asyncio.wait_for(states.get(), WAIT_S) is True
        writer.write(b"*3\r\n$7\r\nmessage\r\n$11\r\ncollab:test\r\n$5\r\nkey_1\r\n")
        await writer.drain()
        while not messages:
            await asyncio.sleep(0)  # let the loop read what was written (no timing involved)
        assert messages == [b"key_1"]
        writer.close()  # Redis went away: what it published meanwhile is lost to this process
        assert await asyncio.wait_for(states.get(), WAIT_S) is False
        reader, writer = await asyncio.wait_for(fake.links.get(), WAIT_S)  # it connects again at once (retry_s=0)
        await FakeRedis.commands(reader, 2)
        writer.write(b"+OK\r\n*3\r\n$9\r\nsubscribe\r\n$11\r\ncollab:test\r\n:1\r\n")
        assert await asyncio.wait_for(states.get(), WAIT_S) is True
        await listener.stop()
        assert await asyncio.wait_for(states.get(), WAIT_S) is False
        fake.server.close()

    asyncio.run(run())


def test_a_redis_that_stops_answering_pings_is_not_live():

    async def run():
        fake, states = FakeRedis(), asyncio.Queue()
        listener = Listener(redis_client(await fake.start()), "collab:test", on_message=lambda _: None,
                            on_live=states.put_nowait, ping_s=0.01, retry_s=WAIT_S)
        reader, writer, _ = await fake.subscribed(listener)
        assert await asyncio.wait_for(states.get(), WAIT_S) is True
        assert await FakeRedis.commands(reader, 1) == [[b"PING"]]  # never answered: Redis is frozen
        assert await asyncio.wait_for(states.get(), WAIT_S) is False
        assert await asyncio.wait_for(reader.read(), WAIT_S) == b""  # and the link was dropped
        await listener.stop()
        fake.server.close()

    asyncio.run(run())


def test_an_error_from_redis_drops_the_link():

    async def run():
        fake, states = FakeRedis(), asyncio.Queue()
        listener = Listener(redis_client(await fake.start()), "collab:test", on_message=lambda _: None,
                            on_live=states.put_nowait, ping_s=WAIT_S, retry_s=WAIT_S)
        await listener.start()
        reader, writer = await asyncio.wait_for(fake.links.get(), WAIT_S)
        await FakeRedis.commands(reader, 2)
        writer.write(b"-WRONGPASS invalid username-password pair\r\n")
        assert await asyncio.wait_for(reader.read(), WAIT_S) == b""
        assert not listener.live and states.empty()
        await listener.stop()
        fake.server.close()

    asyncio.run(run())
