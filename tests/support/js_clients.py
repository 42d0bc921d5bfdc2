"""The real Yjs client (yjs + y-websocket in Node, tests/js/client.mjs) driven from a test over JSON lines."""

import itertools
import json
import queue
import subprocess
import threading
from typing import Any
from urllib.parse import quote

from support.clients import JS_DIR, node

# A command answers when its event happened; this only bounds a broken run.
TIMEOUT_MS = 15_000


class ClientError(AssertionError):
    """A command failed (a wait timed out): the message carries the client's state for the failure report."""


class YjsClient:
    """One WebsocketProvider on one room, in its own Node process."""

    def __init__(self, http_url: str, *, organization: str, document: str, editor: str, token: str, type: str = "text",
                 key: str = "content", version: str = "v2"):
        base = http_url.replace("http://", "ws://", 1) + f"/{version}/realtime"
        room = "/".join(quote(part, safe="") for part in (organization, document, editor))
        options = json.dumps({"type": type, "key": key, "maxBackoffTime": 300})
        self.process = subprocess.Popen([node(), str(JS_DIR / "client.mjs"), base, room, token, options], cwd=JS_DIR,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self._ids = itertools.count(1)
        self._answers: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self._stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            body = json.loads(line)
            with self._lock:
                box = self._answers.pop(body.get("id"), None)
            if box is not None:
                box.put(body)

    def _drain_stderr(self) -> None:
        for line in self.process.stderr:
            self._stderr.append(line.rstrip())

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Run one command and return its answer; raises ClientError when it failed."""
        command_id = next(self._ids)
        box: queue.Queue = queue.Queue()
        with self._lock:
            self._answers[command_id] = box
        self.process.stdin.write(json.dumps({"id": command_id, "op": op, **args}) + "\n")
        self.process.stdin.flush()
        timeout_ms = args.get("timeout_ms", TIMEOUT_MS)
        try:
            body = box.get(timeout=timeout_ms / 1000 + 10)
        except queue.Empty:
            raise ClientError(f"{op}: the client did not answer; stderr: {self._stderr[-5:]}") from None
        if not body["ok"]:
            raise ClientError(f"{op} {args}: {body['error']}; client state: {body.get('state')}")
        return body

    # The commands the tests use, by name.
    def synced(self, connects: int = 1) -> "YjsClient":
        self.call("wait_synced", connects=connects)
        return self

    def insert(self, index: int | str, text: str) -> None:
        self.call("insert", index=index, text=text)

    def text(self) -> str:
        return self.call("text")["text"]

    def wait_text(self, equals: str | None = None, *, includes: str | None = None) -> str:
        args = {"equals": equals} if equals is not None else {"includes": includes}
        return self.call("wait_text", **args)["text"]

    def state(self) -> dict[str, Any]:
        return self.call("state")

    def close(self) -> None:
        """Leave the room (a clean close) and end the process."""
        if self.process.poll() is None:
            try:
                self.call("exit", timeout_ms=5000)
            except (ClientError, OSError, ValueError):
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass


class Clients:
    """Every client a test opened, closed at its end."""

    def __init__(self):
        self.opened: list[YjsClient] = []

    def open(self, http_url: str, **kw: Any) -> YjsClient:
        client = YjsClient(http_url, **kw)
        self.opened.append(client)
        return client

    def close_all(self) -> None:
        for client in self.opened:
            client.close()
