"""Drain on SIGTERM: `/readyz` says 503 at once, the process keeps serving for COLLAB_DRAIN_S (the load balancer
takes it out meanwhile, and requests in flight or arriving finish), then its sockets close with 1001 and it exits.

One API process is one uvicorn server, so the draining state is the process's (`draining()`); the app registers
what to close at the end (`at_end`).
"""

import asyncio
import logging
import signal
from types import FrameType
from typing import Awaitable, Callable

import uvicorn

log = logging.getLogger("collab.serving")
_state = {"draining": False}
_at_end: list[Callable[[], Awaitable[None]]] = []


def draining() -> bool:
    """Whether this process was asked to stop and is draining (`/readyz` answers 503)."""
    return _state["draining"]


def at_end(close: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Run `close()` when the drain ends, before the server stops (the app's sockets); returns its removal."""
    _at_end.append(close)
    return lambda: _at_end.remove(close) if close in _at_end else None


async def end() -> None:
    """What was registered with `at_end`, each once (a failure in one does not keep the others from closing)."""
    for close in list(_at_end):
        try:
            await close()
        except Exception:  # noqa: BLE001 - stopping anyway; say what did not close cleanly
            log.exception("closing at the end of the drain failed")


class DrainingServer(uvicorn.Server):
    """uvicorn's server, whose first SIGTERM drains for `drain_s` before uvicorn's own stop (public: handle_exit)."""

    def __init__(self, config: uvicorn.Config, *, drain_s: float):
        super().__init__(config)
        self.drain_s = drain_s

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A second signal, Ctrl-C, or no drain asked for: uvicorn's stop now (it finishes what is in flight).
        if sig != signal.SIGTERM or self.drain_s <= 0 or _state["draining"]:
            super().handle_exit(sig, frame)
            return
        _state["draining"] = True
        log.warning("SIGTERM: not ready; serving %.0f s more, then closing", self.drain_s)
        loop = asyncio.get_running_loop()  # a signal handler runs on the main thread, inside the server's loop
        loop.call_soon_threadsafe(lambda: loop.create_task(self._drain(sig)))

    async def _drain(self, sig: int) -> None:
        await asyncio.sleep(self.drain_s)
        await end()
        super().handle_exit(sig, None)
