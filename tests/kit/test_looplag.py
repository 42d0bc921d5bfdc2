"""The loop-lag tripwire (kit/looplag.py, tests/support/tripwire.py): a planted offender is caught with its stack,
`/readyz` reports the lag, and a loop that merely waits is not blamed."""

import asyncio
import gc
import time

import pytest

from support import tripwire


async def planted_offender(seconds: float) -> None:
    """What the review's findings did: compute on the event loop (a backtracking match, a parser) for seconds."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(1000))


async def blocking_wait(seconds: float) -> None:
    """A loop that is held without computing (a blocking call): logged, but not judged as computing."""
    time.sleep(seconds)


@pytest.mark.holds_loop("the planted offender")
def test_a_callback_that_computes_on_the_loop_is_caught_with_its_stack(live, client):
    lag = live.svc.loop_lag
    started = time.monotonic()
    live.run(planted_offender(0.6))
    # The stall is recorded by the timer's next tick, which runs right after the offender returns.
    live.run(asyncio.sleep(0.3))
    [stall] = tripwire.offences(lag, started)
    assert stall.cpu_s >= 0.5 and stall.wall_s >= 0.5
    assert "planted_offender" in stall.stack
    with pytest.raises(tripwire.LoopHeld) as caught:
        tripwire.check(lag, started)
    assert "planted_offender" in str(caught.value) and "held" in str(caught.value)
    loop = client.get("/readyz").json()["loop"]
    assert loop["stalls"] >= 1 and loop["maxLagMs"] >= 500


@pytest.mark.holds_loop("a blocking wait, to show it is not judged as computing")
def test_a_loop_that_waits_without_computing_is_recorded_but_not_an_offence(live):
    lag = live.svc.loop_lag
    started = time.monotonic()
    live.run(blocking_wait(0.5))
    live.run(asyncio.sleep(0.3))
    stalls = lag.since(started)
    assert stalls and stalls[0].wall_s >= 0.4 and stalls[0].cpu_s < 0.25
    assert tripwire.offences(lag, started) == []
    assert "blocking_wait" in stalls[0].stack


def test_readyz_reports_the_loop_lag(client):
    loop = client.get("/readyz").json()["loop"]
    assert set(loop) == {"lagMs", "maxLagMs", "stalls"}
    assert loop["lagMs"] >= 0 and loop["maxLagMs"] >= loop["lagMs"] - 1e-6


async def collect_garbage() -> None:
    gc.collect()


@pytest.mark.holds_loop("a full collection of a large heap, to show it is counted apart")
def test_a_garbage_collection_in_the_loop_is_counted_apart(live):
    lag = live.svc.loop_lag
    heap = [[i] for i in range(3_000_000)]  # a large heap: a full collection walks every object
    started = time.monotonic()
    live.run(collect_garbage())
    live.run(asyncio.sleep(0.3))
    held = [s for s in lag.since(started) if s.cpu_s >= 0.25]
    assert held and held[0].gc_s >= 0.8 * held[0].cpu_s
    assert tripwire.offences(lag, started) == []
    del heap
