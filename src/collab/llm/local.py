"""The embedded local model of `COLLAB_LOCAL_MODEL` (ADR 0061): `collab run` starts it once per host as a child
process (collab.localmodel, an OpenAI-compatible server on loopback) and hands its URL to the API and workers as
the platform's `openai-compatible` provider. Off by default."""

import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from collab.config import Misconfigured

READY = "collab-localmodel listening on "


@dataclass
class LocalModel:
    """The running server: its process, its base URL (`…/v1`) and the model it answers with."""

    process: subprocess.Popen
    url: str
    model: str

    def env(self) -> dict[str, str]:
        """What the API and workers are told: the platform's OpenAI-compatible server is this one."""
        return {"COLLAB_OPENAI_COMPATIBLE_BASE_URL": self.url, "COLLAB_OPENAI_COMPATIBLE_MODEL": self.model}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextmanager
def serving(settings) -> Iterator[Any]:
    """An eval's `--model local`: the embedded model of COLLAB_LOCAL_MODEL, started for the eval's duration; the
    settings with it as the platform's OpenAI-compatible server."""
    if not settings.local_model:
        raise SystemExit("--model local: set COLLAB_LOCAL_MODEL to the embedded model to run (README, Use your own "
                         "models)")
    try:
        server = start(settings)
    except Misconfigured as exc:
        raise SystemExit(f"--model local: {exc}") from None
    try:
        yield settings.model_copy(
            update={"openai_compatible_base_url": server.url, "openai_compatible_model": server.model})
    finally:
        server.stop()


def start(settings, *, timeout_s: float = 300) -> LocalModel:
    """Start the embedded model and wait until it has loaded (weights assembled the first time); Misconfigured,
    in one line, when it cannot run here (no runtime wheel for this platform, weights not installed) or when a
    platform OpenAI-compatible server is configured as well."""
    if settings.openai_compatible_base_url:
        raise Misconfigured("Set COLLAB_LOCAL_MODEL or COLLAB_OPENAI_COMPATIBLE_BASE_URL, not both (the embedded model "
                            "is the platform's OpenAI-compatible server)")
    command = [
        sys.executable, "-m", "collab.localmodel", "--model", settings.local_model, "--host", "127.0.0.1", "--port",
        "0", "--threads",
        str(settings.local_model_threads), "--queue",
        str(settings.local_model_queue), "--max-tokens",
        str(settings.local_model_max_tokens), "--timeout-s",
        str(settings.local_model_timeout_s), "--models-dir",
        str(settings.models_dir)
    ]
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    log_path = settings.data_dir / "localmodel.log"  # its log: stderr, appended (a pipe nobody reads would fill)
    with open(log_path, "a") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True,
                                   env=dict(os.environ))
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as waiting:
        waiting.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not waiting.select(timeout=0.5):
                if process.poll() is not None:
                    break
                continue
            line = process.stdout.readline()
            if line.startswith(READY):
                base = line[len(READY):].strip().rstrip("/")
                threading.Thread(target=process.stdout.read, daemon=True).start()  # whatever else it prints
                return LocalModel(process, f"{base}/v1", settings.local_model)
            if not line and process.poll() is not None:
                break
    if process.poll() is None:
        process.kill()
        process.wait()
        raise Misconfigured(f"COLLAB_LOCAL_MODEL={settings.local_model}: the model did not load in {timeout_s:.0f} s")
    why = log_path.read_text(errors="replace").strip().splitlines()
    raise Misconfigured(f"COLLAB_LOCAL_MODEL={settings.local_model}: {why[-1] if why else 'the server exited'}")
