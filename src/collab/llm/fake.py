"""Stand-in model providers for offline runs: fake OpenAI, Anthropic and Gemini servers, and a stand-in model.

Product code, not test code: `collab eval extraction --provider fake` and `--replay` serve their answers
from here, and the test harness (collab.testing) reuses the same server.

One HTTP server on 127.0.0.1; the first path segment names the provider (`/openai/...`, `/anthropic/...`,
`/gemini/...`, and the servers teams run: `/ollama/api/chat`, `/openai-compatible/chat/completions`), so each
provider's base URL points at its own prefix. Every request is recorded, and each
provider replays a script of actions before falling back to a responder. `answer` is a deterministic
responder for the extraction prompts: it groups tasks by their category hint and skips lines that are not
checks, so the whole pipeline (chunking, merging, capping, persistence) runs end to end without a real model.
It measures the pipeline, never prompt quality.
"""

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections import deque
from typing import Any, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

PROVIDERS = ("openai", "anthropic", "gemini", "ollama", "openai-compatible")


def _openai(model: str, text: str) -> dict:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    }


def _anthropic(model: str, text: str) -> dict:
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7}
    }


def _gemini(model: str, text: str) -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7,
                          "totalTokenCount": 18}, "modelVersion": model
    }


def _ollama(model: str, text: str) -> dict:
    # Ollama's /api/chat, not streamed (litellm's ollama_chat route).
    return {
        "model": model, "created_at": "2026-01-01T00:00:00Z", "message": {"role": "assistant", "content": text},
        "done": True, "done_reason": "stop", "prompt_eval_count": 11, "eval_count": 7
    }


def _anthropic_tool(model: str, text: str) -> dict:
    # litellm asks Anthropic for structured output through a forced tool call; answer in kind.
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError:
        return _anthropic(model, text)
    body = _anthropic(model, "")
    body["content"] = [{"type": "tool_use", "id": "toolu_fake", "name": "json_tool_call", "input": arguments}]
    body["stop_reason"] = "tool_use"
    return body


_BODIES = {
    "openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "ollama": _ollama, "openai-compatible": _openai
}


def last_user_text(provider: str, body: dict) -> str:
    """The text of the last user turn, in any of the three formats."""
    if provider == "gemini":
        parts = body["contents"][-1]["parts"]
        return "".join(p.get("text", "") for p in parts)
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content)
    return content


class FakeProviders:
    """The running fake: base URLs, recorded requests, and scripts."""

    def __init__(self):
        self.requests: list[dict[str, Any]] = []
        self.scripts: dict[str, deque] = {p: deque() for p in PROVIDERS}
        self.responder: Callable[[str, dict],
                                 str] = lambda provider, body: ("rewritten: " + last_user_text(provider, body))
        self.release = None  # set in the server loop; hanging requests wait on it
        self.held_keys: set[str] = set()  # a request carrying one of these credentials waits for release_held()
        self.held = 0  # requests waiting now because of held_keys, whose callers still wait
        self._held_release: asyncio.Event | None = None
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP (else ~40 ms
        # delayed-ACK stalls per request).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.root = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.durations_ms: list[float] = []
        app = Starlette(routes=[
            Route("/_stats", self._stats, methods=["GET"]),
            Route("/{path:path}", self._handle, methods=["POST"])
        ])
        self.server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="off"))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, daemon=True)

    def base_url(self, provider: str) -> str:
        return f"{self.root}/{provider}"

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.release = asyncio.Event()
        self.loop.run_until_complete(self.server.serve(sockets=[self.sock]))

    def start(self) -> "FakeProviders":
        self.thread.start()
        while not self.server.started:
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.release.set)
        self.server.should_exit = True
        self.thread.join(10)

    def reset(self) -> None:
        self.release_held()
        self.requests.clear()
        for script in self.scripts.values():
            script.clear()
        self.responder = lambda provider, body: "rewritten: " + last_user_text(provider, body)

    def hold(self, key: str) -> None:
        """Every later call made with this provider key waits, unanswered, until `release_held()` (one tenant's
        model that never answers, while other tenants' calls are answered at once)."""
        self.held_keys.add(key)

    def release_held(self) -> None:
        """Answer every held call (as usual) and hold no key any more."""
        self.held_keys.clear()
        if self._held_release is not None:
            self.loop.call_soon_threadsafe(self._held_release.set)

    def script(self, provider: str, *actions: dict) -> None:
        """Queue actions for the next calls: {"status": 429}, {"hang": True}, {"text": "..."}, {"json": {...}},
        {"raw": "..."} (a 200 that is not JSON: a proxy's page, a server that is something else)."""
        self.scripts[provider].extend(actions)

    def of(self, provider: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["provider"] == provider]

    async def _stats(self, request: Request):
        """The server-side time of each call since the last look (benchmarks subtract it)."""
        durations, self.durations_ms = self.durations_ms, []
        return JSONResponse({"durations_ms": durations})

    async def _handle(self, request: Request):
        started = time.perf_counter()
        response = await self._respond(request)
        self.durations_ms.append((time.perf_counter() - started) * 1000)
        return response

    async def _respond(self, request: Request):
        path = request.path_params["path"]
        if path.endswith("api/show"):  # litellm asks an Ollama server what a model can do: nothing special
            return JSONResponse({"model_info": {}, "capabilities": ["completion"]})
        provider = path.split("/", 1)[0]
        body = json.loads(await request.body() or b"{}")
        model = body.get("model") or path.rsplit("/models/", 1)[-1].split(":", 1)[0]
        self.requests.append(
            {"provider": provider, "path": "/" + path, "headers": dict(request.headers), "json": body, "model": model})
        if self.held_keys and any(key in value for value in request.headers.values() for key in self.held_keys):
            if self._held_release is None or self._held_release.is_set():
                self._held_release = asyncio.Event()
            release = self._held_release
            self.held += 1  # counted while its caller still waits (a caller that gave up is not held any more)
            try:
                while not release.is_set():
                    if await request.is_disconnected():
                        return JSONResponse({"error": {"message": "the caller went away"}}, 499)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(release.wait(), 0.1)
            finally:
                self.held -= 1
        action = self.scripts[provider].popleft() if self.scripts[provider] else {}
        if action.get("hang"):
            await self.release.wait()
        if "status" in action:
            return JSONResponse({"error": {"message": f"fake {action['status']}", "type": "fake_error"}},
                                action["status"])
        if "json" in action:
            return JSONResponse(action["json"])
        if "raw" in action:
            return HTMLResponse(action["raw"])
        text = action.get("text") or self.responder(provider, body)
        if provider == "anthropic" and (body.get("tool_choice") or {}).get("name") == "json_tool_call":
            return JSONResponse(_anthropic_tool(model, text))
        return JSONResponse(_BODIES[provider](model, text))


# The stand-in extraction model (a responder for FakeProviders).

_TASK = re.compile(r"^\[(\d+)\] \((.*?)\) (.*)$")
_AGENT = re.compile(r"^\[(\d+)\] (.*?): (.*)$")


def _name(category: str) -> str:
    words = re.sub(r"[^A-Za-z0-9 ]+", " ", category).split()[:4] or ["General"]
    return " ".join(w.capitalize() for w in words) + " Review"


def _user_text(provider: str, body: dict) -> str:
    if provider == "gemini":
        return last_user_text(provider, body)
    user = [m for m in body["messages"] if m["role"] == "user"]
    content = user[0]["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def answer(provider: str, body: dict) -> str:
    """The JSON answer to an extract_agents or merge_agents request."""
    text = _user_text(provider, body)
    if "Agents (" in text:
        return _merge(text)
    return _extract(text)


def _extract(text: str) -> str:
    groups: dict[str, list[int]] = {}
    skipped = []
    for line in text.splitlines():
        match = _TASK.match(line.strip())
        if not match:
            continue
        task_id, category, task = int(match.group(1)), match.group(2), match.group(3)
        if len(task.split()) < 2:
            skipped.append({"taskId": task_id, "reason": "Not a check."})
            continue
        groups.setdefault(category if category != "-" else "General", []).append(task_id)
    agents = [{
        "name": _name(category),
        "description": f"Checks content against the {category.lower()} items of the checklist.",
        "prompt": f"Review the content for {category.lower()} issues for {{{{brand_name}}}}"
        " and report each failed check.", "taskIds": ids,
        "userContextFields": [{"id": "brand_name", "title": "Brand name", "type": "text", "example": "Acme"}]
    } for category, ids in groups.items()]
    return json.dumps({"agents": agents, "skipped": skipped, "summary": "A review checklist."})


def _merge(text: str) -> str:
    by_name: dict[str, list[int]] = {}
    for line in text.splitlines():
        match = _AGENT.match(line.strip())
        if match:
            by_name.setdefault(match.group(2).lower(), []).append(int(match.group(1)))
    groups = [{
        "name": name.title(), "description": f"Checks {name}.", "prompt": f"Review the content for {name}.",
        "members": ids
    } for name, ids in by_name.items()]
    return json.dumps({"groups": groups})
