"""`collab api` as a real subprocess beside the session's in-process API: a second process, or one to restart."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from collab.config import Settings


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment that makes `collab` read these settings (COLLAB_* variables, JSON for structured values)."""
    env = {}
    for name, value in settings.model_dump(mode="json").items():
        if value is None:
            continue
        text = json.dumps(value) if isinstance(value, (dict, list, bool)) else str(value)
        env[f"COLLAB_{name.upper()}"] = text
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ApiProcess:
    """One `collab api --workers 1` process on a fixed 127.0.0.1 port (kept across restarts)."""

    def __init__(self, settings: Settings, **overrides):
        self.settings = settings.model_copy(update=overrides) if overrides else settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "ApiProcess":
        """Start the process and return once /readyz answers 200."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
        env.update(settings_env(self.settings))
        env["COLLAB_LOG_LEVEL"] = "WARNING"
        command = [
            sys.executable, "-m", "collab.cli", "api", "--host", "127.0.0.1", "--port",
            str(self.port), "--workers", "1"
        ]
        self.process = subprocess.Popen(command, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"collab api exited with {self.process.returncode} before it was ready")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)  # polling for readiness, not waiting out a behaviour
        self.stop()
        raise RuntimeError(f"collab api on port {self.port} was not ready within {timeout} s")

    def stop(self, *, kill: bool = False) -> None:
        """Stop the process: SIGTERM (a graceful shutdown), or SIGKILL (a crash) with `kill`."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self, *, kill: bool = False) -> "ApiProcess":
        """Stop, then start again on the same port (clients reconnect to the same URL)."""
        self.stop(kill=kill)
        return self.start()
