"""Run a parser in a child process with a wall-clock timeout; the child caps its own memory and CPU."""

import dataclasses
import json
import math
import resource
import subprocess
import sys
from pathlib import Path

from .common import Decoded, DecodeError, Limits, Skipped, Task

HERE = Path(__file__).parent


def run_child(script: str, args: list[str], data: bytes, *, timeout_s: float, what: str) -> bytes:
    """stdout of `python -I script args` fed data on stdin; DecodeError("limits") on timeout or a fatal signal."""
    command = [sys.executable, "-I", str(HERE / script), *args]
    try:
        # run() kills the child when the timeout expires, so a looping parser cannot outlive the request.
        done = subprocess.run(command, input=data, capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DecodeError("limits", f"reading the {what} took longer than {timeout_s:g}s") from exc
    except OSError as exc:
        raise DecodeError("unreadable", f"the {what} reader could not be started: {exc}") from exc
    if done.returncode < 0 or b"MemoryError" in done.stderr:
        # Killed by a signal: SIGXCPU from the CPU cap, or SIGKILL/SIGSEGV after exhausting memory.
        raise DecodeError("limits", f"reading the {what} exceeded the time or memory allowed")
    if done.returncode != 0:
        raise DecodeError("unreadable", f"the {what} reader failed on this file")
    return done.stdout


def cap_resources(*, memory_bytes: int, cpu_seconds: int) -> None:
    """Lower this process's address-space and CPU-time limits (never above the hard limits)."""
    for kind, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CPU, cpu_seconds)):
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, hard))


def decoded_to_json(decoded: Decoded) -> dict:
    """A Decoded as plain JSON values (what the decode child prints)."""
    return dataclasses.asdict(decoded)


def _decoded_from_json(value: dict) -> Decoded:
    return Decoded(
        tasks=[Task(text=str(t["text"]), category=t["category"], source=str(t["source"])) for t in value["tasks"]],
        skipped=[Skipped(originalText=str(s["originalText"]), reason=str(s["reason"])) for s in value["skipped"]],
        canonical_text=str(value["canonical_text"]), meta=dict(value["meta"]))


def decode_in_child(data: bytes, mime: str, *, limits: Limits, what: str) -> Decoded:
    """Decode in `_decode_child.py` under limits.text_timeout_s and text_memory_bytes, so no input can stall us."""
    args = [
        mime,
        str(limits.text_memory_bytes),
        str(math.ceil(limits.text_timeout_s) + 1),
        json.dumps(dataclasses.asdict(limits))
    ]
    output = run_child("_decode_child.py", args, data, timeout_s=limits.text_timeout_s, what=what)
    try:
        verdict = json.loads(output)
        if verdict.get("ok"):
            return _decoded_from_json(verdict["decoded"])
        kind = verdict.get("kind") if verdict.get("kind") in DecodeError.KINDS else "unreadable"
        message = str(verdict.get("message") or f"the {what} cannot be read")
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise DecodeError("unreadable", f"the {what} reader returned malformed output") from exc
    raise DecodeError(kind, message)
