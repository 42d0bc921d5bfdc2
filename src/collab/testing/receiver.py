"""A webhook receiver for tests: a real HTTP server on 127.0.0.1 that records requests and answers a script."""

import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from collab.kit.db.queries import Queries

_q = Queries.beside(__file__, "receiver.sql")


@dataclass
class Received:
    """One request as the receiver saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """Records every request; answers each from the script (status, headers, body), then 200 "ok"."""

    def __init__(self):
        self.requests: list[Received] = []
        self.script: deque[tuple[int, dict[str, str], bytes]] = deque()
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with receiver.lock:
                    receiver.requests.append(
                        Received(self.command, self.path, {k.lower(): v
                                                           for k, v in self.headers.items()}, body))
                    status, headers, reply = receiver.script.popleft() if receiver.script else (200, {}, b"ok")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_POST = do_GET = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "Receiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def reply(self, status: int, headers: dict[str, str] | None = None, body: bytes = b"", times: int = 1) -> None:
        """Answer the next `times` requests with this status."""
        with self.lock:
            self.script.extend([(status, headers or {}, body)] * times)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.script.clear()

    def to(self, path: str) -> list[Received]:
        """The requests received on one path."""
        with self.lock:
            return [r for r in self.requests if r.path == path]


async def settle_webhooks(svc, api_key_id: str, *, rounds: int = 100) -> None:
    """Sweep and wait until none of a tenant's webhook deliveries is due or under way (by the injected clock)."""
    import asyncio

    from arq.jobs import Job, ResultNotFound

    from collab.webhooks.tasks import sweep

    for _ in range(rounds):
        await sweep({"svc": svc})
        async with svc.pool.connection() as conn:
            cur = await conn.execute(_q.unfinished_jobs, {"api_key_id": api_key_id})
            job_ids = [row["id"] for row in await cur.fetchall()]
            for job_id in job_ids:
                try:
                    await Job(job_id, svc.redis).result(timeout=60, poll_delay=0.005)
                except ResultNotFound:
                    pass  # committed but not on the queue yet: the next round waits for it
            cur = await conn.execute(_q.webhook_work_left, {"api_key_id": api_key_id, "now": svc.now_ms()})
            if not job_ids and all(row["n"] == 0 for row in await cur.fetchall()):
                return
        await asyncio.sleep(0.01)  # a concurrent cron holds rows: let it commit
    raise AssertionError("webhook deliveries did not settle")
