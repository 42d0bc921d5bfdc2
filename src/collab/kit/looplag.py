"""Event-loop lag: how late the loop runs a periodic timer, and the stack of any callback that holds it too long.

Every API and worker process runs one `LoopLag` (kit/services.py starts it with the process's Services). A timer
every `interval_s` measures how late it fires (the figure `/readyz` reports, `loop` in its body). A watchdog
thread looks at the timer's last tick: when the loop is late by half of `stall_s`, it copies the stack of the
loop's thread once, so the stall that the next tick records says where the loop was held. A stall is logged as a
warning (at most one line every few seconds, with a count of the ones left out) and kept, the newest `keep`, for
`/readyz` and for the test suite's tripwire (tests/conftest.py), which fails the test that caused one.

A stall's `cpu_s` is the CPU time the loop's thread spent in it: a callback that computes (parsing, matching,
scoring) shows as cpu close to wall, while a loop that was merely starved (other processes on the cores, another
thread holding the interpreter lock) shows little CPU of its own. The tripwire judges by the CPU figure, so a
loaded machine cannot fail a test that does nothing wrong.
"""

import asyncio
import faulthandler
import gc
import logging
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass

log = logging.getLogger("collab.looplag")

_LOG_EVERY_S = 5.0  # at most one warning line per this many seconds (the rest are counted in the next one)
_STACK_FRAMES = 12  # the innermost frames of a stall's stack that are kept


@dataclass(frozen=True)
class Stall:
    """One time the loop did not run its timer for `wall_s` seconds, `cpu_s` of them in its own thread."""

    ended: float  # time.monotonic() when the loop ran its timer again
    wall_s: float
    cpu_s: float
    gc_s: float  # of cpu_s, the loop's thread collecting garbage (a large heap's full collection, not a callback)
    stack: str  # where the loop's thread was during the stall ("" when the watchdog could not look)


class LoopLag:
    """The lag of the running loop, measured by a periodic timer and a watchdog thread (see the module's text)."""

    def __init__(self, *, interval_s: float = 0.1, stall_s: float = 0.25, keep: int = 64):
        self.interval_s, self.stall_s = interval_s, stall_s
        self.stalls: deque[Stall] = deque(maxlen=keep)
        self.stall_count = 0
        self.lag_s = 0.0  # how late the latest tick ran
        self._window: deque[tuple[float, float]] = deque()  # (tick time, lag) of the last minute, for max_lag_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._thread_id = 0
        self._last = self._last_cpu = self._last_gc = 0.0
        self._tick_no = 0
        self._sample: tuple[int, str] | None = None  # (tick number it belongs to, stack) set by the watchdog
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._logged_at = 0.0
        self._unlogged = 0
        self._excused = -1  # the tick period whose stall is expected (excuse())
        self._gc_s = 0.0  # CPU the loop's thread spent collecting garbage, all told
        self._gc_started: float | None = None

    def start(self) -> "LoopLag":
        """Start measuring the running loop (call from inside it)."""
        self._loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()
        self._last, self._last_cpu = time.monotonic(), time.thread_time()
        self._handle = self._loop.call_at(self._loop.time() + self.interval_s, self._tick)
        self._watchdog = threading.Thread(target=self._watch, name="collab-looplag", daemon=True)
        self._watchdog.start()
        gc.callbacks.append(self._collecting)
        return self

    def stop(self) -> None:
        """Stop the timer and the watchdog."""
        self._stop.set()
        if self._collecting in gc.callbacks:
            gc.callbacks.remove(self._collecting)
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def excuse(self) -> None:
        """The loop is about to be held on purpose (start-up's own work, before the process serves): the stall that
        ends at the next tick is neither counted nor logged."""
        self._excused = self._tick_no

    def max_lag_s(self) -> float:
        """The largest lag of the last minute."""
        return max((lag for _, lag in self._window), default=0.0)

    def snapshot(self) -> dict[str, float | int]:
        """The figures `/readyz` reports: the latest lag, the last minute's largest, and the stalls counted."""
        return {
            "lagMs": round(self.lag_s * 1000, 1), "maxLagMs": round(self.max_lag_s() * 1000, 1),
            "stalls": self.stall_count
        }

    def since(self, started: float) -> list[Stall]:
        """The stalls that ended at or after `started` (time.monotonic())."""
        return [s for s in self.stalls if s.ended >= started]

    def _collecting(self, phase: str, info: dict) -> None:
        """gc's callback: time the collections that run in the loop's thread."""
        if threading.get_ident() != self._thread_id:
            return
        if phase == "start":
            self._gc_started = time.thread_time()
        elif self._gc_started is not None:
            self._gc_s += time.thread_time() - self._gc_started
            self._gc_started = None

    def _tick(self) -> None:
        now, cpu = time.monotonic(), time.thread_time()
        gap, cpu_gap, gc_gap = now - self._last, cpu - self._last_cpu, self._gc_s - self._last_gc
        self.lag_s = max(0.0, gap - self.interval_s)
        self._window.append((now, self.lag_s))
        while self._window and self._window[0][0] < now - 60:
            self._window.popleft()
        if self.lag_s >= self.stall_s and self._excused != self._tick_no:
            sample = self._sample
            stack = sample[1] if sample is not None and sample[0] == self._tick_no else ""
            self._record(Stall(now, self.lag_s, cpu_gap, gc_gap, stack), now)
        self._tick_no += 1
        self._last, self._last_cpu, self._last_gc, self._sample = now, cpu, self._gc_s, None
        if not self._stop.is_set() and self._loop is not None:
            self._handle = self._loop.call_at(self._loop.time() + self.interval_s, self._tick)

    def _record(self, stall: Stall, now: float) -> None:
        self.stalls.append(stall)
        self.stall_count += 1
        if now - self._logged_at < _LOG_EVERY_S:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more since the last report)" if self._unlogged else ""
        self._logged_at, self._unlogged = now, 0
        log.warning(
            "event loop held for %.0f ms (%.0f ms of it computing in the loop's thread, %.0f ms of those "
            "collecting garbage)%s%s", stall.wall_s * 1000, stall.cpu_s * 1000, stall.gc_s * 1000, more,
            f"; the loop was at:\n{stall.stack}" if stall.stack else "")

    def _watch(self) -> None:
        # It looks four times per stall bound and copies the stack once the loop is half a bound late: a stall just
        # over the bound still has its stack.
        while not self._stop.wait(min(self.interval_s, self.stall_s / 4)):
            tick, last = self._tick_no, self._last
            if self._sample is not None or time.monotonic() - last < self.interval_s + self.stall_s / 2:
                continue
            stack = _stack_of(self._thread_id)
            if self._tick_no == tick:  # still the same stall (else the sample is of a loop that moved on)
                self._sample = (tick, stack)


def _stack_of(thread_id: int) -> str:
    """The innermost frames of one thread, innermost first, as faulthandler writes them (it needs a real file):
    the standard library's public way to read another thread's stack."""
    with tempfile.TemporaryFile("w+") as out:
        faulthandler.dump_traceback(out, all_threads=True)
        out.seek(0)
        text = out.read()
    lines, mine = [], False
    for line in text.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")):
            mine = int(line.split("0x", 1)[1].split()[0], 16) == thread_id
            continue
        if mine and line.strip():
            lines.append(line)
    return "\n".join(lines[:_STACK_FRAMES])
