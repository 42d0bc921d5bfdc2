"""The suite's loop-lag tripwire: a test during which the service's event loop was held fails, with the stack.

The session's service (API and worker in one loop, tests/conftest.py `live`) measures its loop with
kit/looplag.py. After every test that used it, `check` looks at the stalls that began during the test: one in
which the loop's own thread computed for `bound_s` or more (its CPU time, so a loaded machine that merely delays
the loop trips nothing; its garbage collections aside, since the test process's heap is the whole suite's) fails
the test, naming how long and where. A test that holds the loop on purpose says so
with `@pytest.mark.holds_loop("why")`.
"""

import os

from collab.kit.looplag import LoopLag, Stall

# The bound: one callback computing this long holds every tenant's requests and jobs in this process.
BOUND_S = float(os.environ.get("COLLAB_TEST_LOOP_STALL_MS", "250")) / 1000


class LoopHeld(AssertionError):
    """The loop was held during a test."""


def offences(lag: LoopLag, since: float, bound_s: float = BOUND_S) -> list[Stall]:
    """The stalls since `since` (time.monotonic()) in which the loop's thread computed at least `bound_s`, its
    garbage collections aside (the test process's heap is the whole suite's, not the service's)."""
    return [s for s in lag.since(since) if s.cpu_s - s.gc_s >= bound_s]


def check(lag: LoopLag, since: float, bound_s: float = BOUND_S) -> None:
    """Raise LoopHeld when the loop was held since `since`, with each stall's figures and stack."""
    found = offences(lag, since, bound_s)
    if not found:
        return
    lines = [
        f"the service's event loop was held {len(found)} time(s) during this test (bound {bound_s * 1000:.0f} "
        "ms of the loop's own CPU; kit/looplag.py): move the work off the loop (a thread or the sandbox) or "
        "bound it"
    ]
    for stall in found:
        lines.append(f"- held {stall.wall_s * 1000:.0f} ms, {stall.cpu_s * 1000:.0f} ms computing "
                     f"({stall.gc_s * 1000:.0f} ms of it collecting garbage), at:\n"
                     f"{stall.stack or '  (no stack: the loop held the interpreter lock throughout)'}")
    raise LoopHeld("\n".join(lines))
