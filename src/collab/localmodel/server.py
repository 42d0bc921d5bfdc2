"""A small OpenAI-compatible HTTP server over one local GGUF model (the `cyllama` runtime, prebuilt llama.cpp).

Endpoints: `GET /health`, `GET /v1/models` and `POST /v1/chat/completions` (non-streaming). The request's messages
go through the model's own chat template. `response_format` `{"type": "json_schema", "json_schema": {"schema": …}}`
constrains the answer with a grammar built from that schema, `{"type": "json_object"}` with a grammar for any JSON
object; any other type is unconstrained. Decoding is greedy unless the request sets a temperature.

Bounds, so that it cannot take a small host from the API beside it:
- `threads` for generation (at most the cores this process may use) and a lower priority (`nice`, in `serve`);
- one generation at a time, on a worker thread (and a request's templating and tokenizing on another), never on
  the event loop;
- `queue`: at most that many requests wait while one generates; beyond it 503 with `Retry-After`;
- `max_tokens`: a request asking for more is capped (and so is one that would overflow the context);
- `timeout_s`: a generation stops when it has run that long (from its start, not counting the wait in the queue)
  and answers 200 with what it produced so far and `finish_reason` "length";
- a generation stops, between tokens or inside a prompt's prefill, when its client disconnects, so an abandoned
  answer does not hold the next caller.
Malformed requests (no messages, wrong types, a body over 1 MiB, a prompt longer than the context) answer 400 in
OpenAI's error shape; a full queue 503 in the same shape.
"""

import asyncio
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from collab.localmodel import models

MAX_BODY = 1 << 20
POLL_S = 0.05  # how often a waiting request looks at its client and its deadline
READY = "collab-localmodel listening on "


def default_threads() -> int:
    """Two generation threads, or fewer where the machine has fewer cores."""
    return min(2, _cores())


def _cores() -> int:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


class BadRequest(Exception):
    """A request this server refuses with 400; the message says why."""

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code


@dataclass
class Job:
    """One generation: the prompt's tokens and how to sample; `stop()` ends it from another thread."""

    tokens: list[int]
    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    grammar: str | None = None
    stop_strings: list[str] = field(default_factory=list)
    deadline: float = float("inf")
    stopped: threading.Event = field(default_factory=threading.Event)
    why: str = ""


@dataclass
class Result:
    """What one generation produced."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    seconds: float


class Engine:
    """One loaded model and its context; `generate` runs one job at a time on the caller's thread."""

    def __init__(self, path: Path, *, context: int, threads: int):
        from cyllama.llama import llama_cpp

        self.llama = llama_cpp
        self.errors = 0  # llama.cpp's error messages so far (a grammar it cannot parse is one, not an exception)
        self.checked: dict[str, bool] = {}  # grammars known to parse
        self.checking = threading.Lock()
        llama_cpp.set_log_callback(self._on_log)
        llama_cpp.ggml_backend_load_all()
        self.model = llama_cpp.LlamaModel(str(path), llama_cpp.LlamaModelParams())
        self.vocab = self.model.get_vocab()
        params = llama_cpp.LlamaContextParams()
        params.n_ctx = self.context = min(context, self.model.n_ctx_train)
        params.n_batch = params.n_ubatch = self.batch = 512
        params.n_threads = params.n_threads_batch = threads
        self.ctx = llama_cpp.LlamaContext(self.model, params)
        self.ctx.install_cancel_callback()  # ctx.cancel = True aborts a decode in progress
        self.template = _compile_template(self.model.get_default_chat_template() or "")
        self.bos = self._piece(self.vocab.token_bos())
        self.eos = self._piece(self.vocab.token_eos())

    def _on_log(self, level: int, text: str) -> None:
        """llama.cpp's log: its errors (level 4) counted and written to stderr, the rest dropped."""
        if level == 4:
            self.errors += 1
            print(f"collab-localmodel: llama.cpp: {text.strip()}", file=sys.stderr, flush=True)

    def _piece(self, token: int) -> str:
        return self.vocab.token_to_piece(token, special=True) if token >= 0 else ""

    def prompt(self, messages: list[dict[str, str]]) -> list[int]:
        """The tokens of `messages` under the model's chat template (400 when the template refuses them)."""
        if self.template is None:
            chat = [self.llama.LlamaChatMessage(role=m["role"], content=m["content"]) for m in messages]
            text = self.model.chat_apply_template("chatml", chat, True)
        else:
            from jinja2 import TemplateError

            try:
                text = self.template.render(messages=messages, bos_token=self.bos, eos_token=self.eos,
                                            add_generation_prompt=True)
            except TemplateError as exc:
                raise BadRequest(f"the model's chat template refused the messages: {exc}") from None
        return self.vocab.tokenize(text, add_special=self.vocab.get_add_bos(), parse_special=True)

    def grammar(self, schema: dict[str, Any]) -> str:
        """A GBNF grammar that accepts exactly the JSON values `schema` describes; BadRequest when the schema cannot
        be converted or llama.cpp cannot parse the result (it would crash the sampler, not raise)."""
        from cyllama.utils.json_schema_to_grammar import json_schema_to_grammar

        try:
            grammar = json_schema_to_grammar(schema)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise BadRequest(f"response_format.json_schema.schema cannot be used: {exc}") from None
        with self.checking:
            if grammar not in self.checked:
                errors = self.errors
                probe = self.llama.LlamaSampler(self.llama.LlamaSamplerChainParams())
                probe.add_grammar(self.vocab, grammar, "root")
                if self.errors != errors:
                    raise BadRequest("response_format.json_schema.schema gives a grammar llama.cpp cannot use (for "
                                     "example more than 2000 repetitions in minItems, maxItems or a length)")
                if len(self.checked) >= 256:
                    self.checked.clear()
                self.checked[grammar] = True
        return grammar

    def stop(self, job: Job, why: str) -> None:
        """End `job` soon, from any thread: between tokens, or inside the decode running now."""
        if not job.stopped.is_set():
            job.why = why
            job.stopped.set()
            self.ctx.cancel = True

    def _sampler(self, job: Job) -> Any:
        sampler = self.llama.LlamaSampler(self.llama.LlamaSamplerChainParams())
        if job.grammar is not None:
            sampler.add_grammar(self.vocab, job.grammar, "root")  # first: later links choose among allowed tokens
        if job.frequency_penalty or job.presence_penalty:
            sampler.add_penalties(64, 1.0, job.frequency_penalty, job.presence_penalty)
        if job.temperature == 0:
            sampler.add_greedy()
        else:
            sampler.add_top_p(job.top_p, 1)
            sampler.add_temp(job.temperature)
            sampler.add_dist(job.seed)
        return sampler

    def generate(self, job: Job) -> Result:
        """Run `job` to its end: the end of the answer ("stop"), or its token cap, its deadline or `stop()`
        ("length")."""
        started = time.monotonic()
        self.ctx.kv_cache_clear()
        self.ctx.cancel = job.stopped.is_set()
        sampler = self._sampler(job)
        out: list[int] = []
        finish = "length"
        try:
            for start in range(0, len(job.tokens), self.batch):
                if job.stopped.is_set():
                    raise InterruptedError
                self.ctx.decode(self.llama.llama_batch_get_one(job.tokens[start:start + self.batch], start))
            while len(out) < job.max_tokens:
                if job.stopped.is_set():
                    break
                if time.monotonic() >= job.deadline:
                    job.why = "timeout"
                    break
                token = sampler.sample(self.ctx, -1)
                if self.vocab.is_eog(token):
                    finish = "stop"
                    break
                out.append(token)
                if job.stop_strings and self._stopped_by_string(out, job.stop_strings):
                    finish = "stop"
                    break
                self.ctx.decode(self.llama.llama_batch_get_one([token], len(job.tokens) + len(out) - 1))
        except InterruptedError:  # stop() during a decode
            pass
        text = self.vocab.detokenize(out) if out else ""
        if finish == "stop" and job.stop_strings:
            text = _cut(text, job.stop_strings)
        return Result(text, len(job.tokens), len(out), finish, time.monotonic() - started)

    def _stopped_by_string(self, out: list[int], stop_strings: list[str]) -> bool:
        tail = self.vocab.detokenize(out[-32:])
        return any(s in tail for s in stop_strings)


def _cut(text: str, stop_strings: list[str]) -> str:
    """`text` up to the first stop string in it."""
    cuts = [text.find(s) for s in stop_strings if s in text]
    return text[:min(cuts)] if cuts else text


def _compile_template(source: str) -> Any:
    """The model's chat template (Jinja, as in its tokenizer config), rendered in a sandbox; None if it has none."""
    if not source:
        return None
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> str:
        raise TemplateError(message)

    def tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False, **_: Any) -> str:
        return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source)


def error(status: int, message: str, kind: str, code: str | None = None, headers: dict | None = None) -> JSONResponse:
    """An answer in OpenAI's error shape."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


class LocalModelServer:
    """The HTTP side: validates requests, queues them for the one generation slot and answers in OpenAI's shapes.
    `engine` is loaded by the caller (`load`), so that the server object itself is cheap to build in tests."""

    def __init__(self, name: str, engine: Engine, *, queue: int = 4, max_tokens: int = 512, timeout_s: float = 120.0,
                 log: Callable[[str], None] | None = None):
        self.spec = models.get(name)
        self.name = name
        self.engine = engine
        self.queue = queue
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.waiting = 0
        self.running: Job | None = None
        self.slot = asyncio.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="localmodel")
        self.app = Starlette(
            routes=[
                Route("/health", self.health),
                Route("/v1/models", self.list_models),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
            ], exception_handlers={HTTPException: self.http_error})

    async def http_error(self, request: Request, exc: Exception) -> JSONResponse:
        """Starlette's own errors (404, 405) in OpenAI's shape."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        return error(status, str(getattr(exc, "detail", exc)), "invalid_request_error")

    async def health(self, request: Request) -> JSONResponse:
        """200 once loaded: the model, how many requests wait and whether one is generating."""
        return JSONResponse({"model": self.name, "ready": True, "queued": self.waiting, "busy": bool(self.running)})

    async def list_models(self, request: Request) -> JSONResponse:
        """The one model this server answers with."""
        entry = {"id": self.name, "object": "model", "created": 0, "owned_by": "collab-localmodel"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def chat(self, request: Request) -> JSONResponse:
        """`POST /v1/chat/completions`, non-streaming."""
        try:
            body = await _body(request)
            job = await asyncio.to_thread(self.job, body)  # templating, tokenizing: ~1 s for a 1 MiB prompt
        except BadRequest as exc:
            return error(400, str(exc), "invalid_request_error", exc.code)
        if self.waiting + (1 if self.slot.locked() else 0) > self.queue:
            return error(503, f"the local model is busy ({self.waiting} requests waiting); retry later", "server_error",
                         "overloaded", headers={"Retry-After": str(self._retry_after())})
        self.waiting += 1
        try:
            turn = await self._turn(request)
        finally:
            self.waiting -= 1
        if not turn:
            return error(499, "the client went away while waiting", "invalid_request_error")
        try:
            job.deadline = time.monotonic() + self.timeout_s
            self.running = job
            result = await self._generate(job, request)
        except Exception as exc:  # the runtime failed: an OpenAI-shaped 500, and the server goes on
            self.log(f"collab-localmodel: generation failed: {type(exc).__name__}: {exc}")
            return error(500, f"the local model failed: {type(exc).__name__}", "server_error")
        finally:
            self.running = None
            self.slot.release()
        self.log(f"collab-localmodel: {result.prompt_tokens} tokens in, {result.completion_tokens} out in "
                 f"{result.seconds:.2f} s, {result.finish_reason}{' (' + job.why + ')' if job.why else ''}"
                 f"{', grammar' if job.grammar else ''}")
        return JSONResponse(self.completion(result))

    def _retry_after(self) -> int:
        """Seconds a refused caller should wait: about one answer's time, at least 1."""
        return max(1, min(int(self.timeout_s), 5 * (self.waiting + 1)))

    async def _turn(self, request: Request) -> bool:
        """Wait for the generation slot; False (and no slot held) if the client disconnects first."""
        acquiring = asyncio.ensure_future(self.slot.acquire())
        while True:
            done, _ = await asyncio.wait({acquiring}, timeout=POLL_S)
            if done:
                return True
            if await request.is_disconnected():
                acquiring.cancel()
                try:
                    await acquiring
                except asyncio.CancelledError:
                    return False
                self.slot.release()  # it was granted just before the cancel
                return False

    async def _generate(self, job: Job, request: Request) -> Result:
        """Run `job` on the worker thread, stopping it at its deadline or when the client disconnects."""
        future = asyncio.get_running_loop().run_in_executor(self.executor, self.engine.generate, job)
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=POLL_S)
                if done:
                    return future.result()
                if time.monotonic() >= job.deadline:
                    self.engine.stop(job, "timeout")
                elif await request.is_disconnected():
                    self.engine.stop(job, "client disconnected")
        finally:
            if not future.done():  # cancelled (shutdown): the thread must not go on generating
                self.engine.stop(job, "cancelled")

    def stop_all(self) -> None:
        """Stop the generation in progress, if any (at shutdown)."""
        if self.running is not None:
            self.engine.stop(self.running, "shutdown")
        self.executor.shutdown(wait=True, cancel_futures=True)

    def completion(self, result: Result) -> dict[str, Any]:
        """A chat completion in OpenAI's shape."""
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": result.text},
                "finish_reason": result.finish_reason,
                "logprobs": None,
            }],
            "usage": {
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "total_tokens": result.prompt_tokens + result.completion_tokens,
            },
        }

    def job(self, body: Any) -> Job:
        """The generation a request body asks for; BadRequest when it is malformed."""
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        if body.get("stream"):
            raise BadRequest("streaming is not supported by the local model server", "unsupported_parameter")
        if body.get("n", 1) != 1:
            raise BadRequest("n must be 1", "unsupported_parameter")
        tokens = self.engine.prompt(_messages(body.get("messages")))
        room = self.engine.context - len(tokens)
        if room < 1:
            raise BadRequest(
                f"the prompt has {len(tokens)} tokens; the context of {self.name} holds {self.engine.context}",
                "context_length_exceeded")
        asked = body.get("max_completion_tokens", body.get("max_tokens"))
        if asked is None:
            asked = self.max_tokens  # the operator's cap (COLLAB_LOCAL_MODEL_MAX_TOKENS): collab asks for none
        elif not _is_int(asked) or asked < 1:
            raise BadRequest("max_tokens must be a positive integer")
        job = Job(tokens, max_tokens=min(asked, self.max_tokens, room))
        job.temperature = _number(body, "temperature", 0.0, 0.0, 2.0)
        job.top_p = _number(body, "top_p", 1.0, 0.0, 1.0)
        job.frequency_penalty = _number(body, "frequency_penalty", 0.0, -2.0, 2.0)
        job.presence_penalty = _number(body, "presence_penalty", 0.0, -2.0, 2.0)
        seed = body.get("seed")
        if seed is not None and not _is_int(seed):
            raise BadRequest("seed must be an integer")
        job.seed = (seed if seed is not None else int.from_bytes(os.urandom(4), "little")) & 0xFFFFFFFF
        job.stop_strings = _stop(body.get("stop"))
        job.grammar = self._grammar(body.get("response_format"))
        return job

    def _grammar(self, response_format: Any) -> str | None:
        if response_format is None:
            return None
        if not isinstance(response_format, dict):
            raise BadRequest("response_format must be an object")
        kind = response_format.get("type")
        if kind == "json_object":
            return self.engine.grammar({"type": "object"})
        if kind != "json_schema":
            return None
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise BadRequest("response_format.json_schema.schema must be a JSON schema object")
        return self.engine.grammar(schema)


async def _body(request: Request) -> Any:
    """The request's JSON body, at most MAX_BODY bytes."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        raise BadRequest(f"the request body must be at most {MAX_BODY} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BadRequest(f"the request body must be at most {MAX_BODY} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        raise BadRequest("the request body is not valid JSON") from None


def _messages(value: Any) -> list[dict[str, str]]:
    """`messages` as role/content strings (text parts joined); BadRequest when malformed."""
    if not isinstance(value, list) or not value:
        raise BadRequest("messages must be a non-empty array", "missing_messages")
    out = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest(f"messages[{i}] must be an object with a string role")
        content = message.get("content")
        if isinstance(content, list):
            if not all(
                    isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                    for p in content):
                raise BadRequest(f"messages[{i}].content: only text parts are supported")
            content = "".join(p["text"] for p in content)
        elif content is None and message["role"] == "assistant":
            content = ""
        if not isinstance(content, str):
            raise BadRequest(f"messages[{i}].content must be a string or an array of text parts")
        role = "system" if message["role"] == "developer" else message["role"]
        out.append({"role": role, "content": content})
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(body: dict, key: str, default: float, low: float, high: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadRequest(f"{key} must be a number from {low:g} to {high:g}")
    return float(value)


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > 4 or not all(isinstance(s, str) and s for s in value):
        raise BadRequest("stop must be a string or an array of at most 4 non-empty strings")
    return value


def load(name: str, *, models_dir: Path, threads: int | None = None) -> Engine:
    """Find (or assemble) the weights of `name` and load them; Unavailable, in one line, when they cannot run here."""
    models.check_runtime()
    spec = models.get(name)
    path = models.weights_path(name, models_dir)
    return Engine(path, context=spec.context, threads=min(threads or default_threads(), _cores()))


def serve(name: str, *, host: str = "127.0.0.1", port: int = 0, threads: int | None = None, queue: int = 4,
          max_tokens: int = 512, timeout_s: float = 120.0, models_dir: Path, nice: int = 10,
          announce: Callable[[str], None] | None = None) -> None:
    """Lower this process's priority by `nice`, load the model, listen on host:port (0: a free port) and serve until
    SIGINT or SIGTERM. Once it answers, `announce` gets the line `collab-localmodel listening on http://HOST:PORT`
    (by default printed to stdout, flushed). Unavailable before listening when the model cannot run here."""
    import uvicorn

    if nice:
        os.nice(nice)
    started = time.monotonic()
    engine = load(name, models_dir=models_dir, threads=threads)
    server = LocalModelServer(name, engine, queue=queue, max_tokens=max_tokens, timeout_s=timeout_s)
    server.log(f"collab-localmodel: {name} loaded in {time.monotonic() - started:.2f} s "
               f"({engine.context} tokens of context, {engine.ctx.n_threads()} threads)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    config = uvicorn.Config(server.app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=2)
    web = uvicorn.Server(config)

    async def run() -> None:
        serving = asyncio.ensure_future(web.serve(sockets=[sock]))
        while not web.started and not serving.done():
            await asyncio.sleep(0.01)
        if web.started:
            (announce or (lambda line: print(line, flush=True)))(f"{READY}http://{shown}:{bound}")
        await serving

    try:
        asyncio.run(run())
    finally:
        server.stop_all()
        sock.close()
