"""The app and a worker served on 127.0.0.1 in a background event loop (tests, benchmarks)."""

import asyncio
import socket
import threading

import uvicorn

from collab.app import create_app
from collab.config import Settings
from collab.kit.services import build_services, close_services
from collab.realtime.protocol import server_options
from collab.worker import Lanes, make_worker


class Live:
    """The running service: base URL, settings, services, and a way to run coroutines in its loop."""

    def __init__(self, settings: Settings, *, worker: bool = True):
        """`worker=False` serves the app alone (fault drills run their workers in processes of their own)."""
        self.settings = settings
        self.with_worker = worker
        self.worker: Lanes | None = None
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP (else ~40 ms
        # delayed-ACK stalls per request).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        # The service's own address, as `collab api` tells its settings (the base of URLs built without a request).
        settings.host, settings.port = "127.0.0.1", self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._main, daemon=True)
        self.error: BaseException | None = None

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        except BaseException as exc:  # surfaced by start()
            self.error = exc
            self.ready.set()
        finally:
            # Background tasks of libraries (litellm's log worker) end with the loop, not at exit.
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

    async def _serve(self) -> None:
        self.svc = await build_services(self.settings)
        self.app = create_app(self.settings, svc=self.svc)
        config = uvicorn.Config(self.app, log_config=None, access_log=False, proxy_headers=True,
                                forwarded_allow_ips="127.0.0.1", lifespan="on",
                                **server_options(self.settings.realtime_max_message_bytes))
        self.server = uvicorn.Server(config)
        worker_task = None
        if self.with_worker:
            assert self.settings.redis_url is not None  # tests always name their Redis
            worker = self.worker = make_worker(self.settings, self.svc, redis_url=self.settings.redis_url,
                                               handle_signals=False)
            worker_task = asyncio.ensure_future(worker.main())
        serve_task = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            await asyncio.sleep(0.01)
        self.ready.set()
        await serve_task
        if worker_task is not None and self.worker is not None:
            await self.worker.close()
            worker_task.cancel()
        await close_services(self.svc)

    def start(self) -> "Live":
        self.thread.start()
        self.ready.wait(60)
        if self.error:
            raise self.error
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def run(self, coro, timeout: float = 30):
        """Run a coroutine in the server loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)
