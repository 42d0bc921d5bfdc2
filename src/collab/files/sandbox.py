"""Run a parser script in a child process with a wall-clock timeout; the script caps its own memory and CPU."""

import subprocess
import sys
from pathlib import Path

from .common import DecodeError

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
