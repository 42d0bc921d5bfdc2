"""Query encodes of one loop: the texts that come while a pass runs go in the next passes, those of like length
together, each caller gets its own vector, and a failed or abandoned caller never stalls the others."""

import asyncio
import threading

import pytest

from collab.embeddings.batching import MAX_BATCH, SPREAD, encode_query


class HeldModel:
    """A stand-in model whose passes wait for the test to let them go; each vector names its text."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[str]] = []
        self.started = threading.Semaphore(0)
        self.go = threading.Event()
        self.fail_on = fail_on

    def encode_queries(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.started.release()
        assert self.go.wait(10)
        if self.fail_on in texts:
            raise RuntimeError("the runtime failed")
        return [[float(len(t)), float(ord(t[0]))] for t in texts]


async def _first_pass_running(model: HeldModel, text: str) -> asyncio.Task:
    task = asyncio.ensure_future(encode_query(model, text))
    while not model.started.acquire(blocking=False):
        await asyncio.sleep(0)  # yields to the loop until the pass has started in its thread
    return task


def test_queries_that_come_while_one_encodes_go_together_in_the_next_pass():
    model = HeldModel()

    async def searches():
        first = await _first_pass_running(model, "a")
        rest = [asyncio.ensure_future(encode_query(model, t)) for t in ("bbbb", "ccccc", "dddddd")]
        await asyncio.sleep(0)
        model.go.set()
        return await first, await asyncio.gather(*rest)

    first, rest = asyncio.run(searches())
    assert model.calls == [["a"], ["bbbb", "ccccc", "dddddd"]]  # one waited for no batch; three shared one pass
    assert first == [1.0, 97.0] and rest == [[4.0, 98.0], [5.0, 99.0], [6.0, 100.0]]


def test_texts_of_unlike_length_go_in_separate_passes_oldest_first():
    model = HeldModel()
    short, long = "s" * 20, "l" * int(20 * SPREAD * 2)

    async def searches():
        first = await _first_pass_running(model, "a")
        rest = [asyncio.ensure_future(encode_query(model, t)) for t in (long, short, long + "x", short + "y")]
        await asyncio.sleep(0)
        model.go.set()
        await first
        return await asyncio.gather(*rest)

    vectors = asyncio.run(searches())
    # The oldest waiting text leads each pass; a batch pads its texts to its longest, so like lengths go together.
    assert model.calls == [["a"], [long, long + "x"], [short, short + "y"]]
    assert [v[0] for v in vectors] == [len(long), len(short), len(long) + 1, len(short) + 1]


def test_a_pass_holds_at_most_max_batch_texts():
    model = HeldModel()
    texts = [f"q{i}" for i in range(MAX_BATCH + 3)]

    async def searches():
        first = await _first_pass_running(model, "x")
        rest = [asyncio.ensure_future(encode_query(model, t)) for t in texts]
        model.go.set()
        await first
        return await asyncio.gather(*rest)

    vectors = asyncio.run(searches())
    assert [len(c) for c in model.calls] == [1, MAX_BATCH, 3]
    assert len(vectors) == len(texts)


def test_a_failed_pass_fails_its_callers_and_the_next_ones_are_served():
    model = HeldModel(fail_on="bad")

    async def searches():
        first = await _first_pass_running(model, "a")
        failing = [asyncio.ensure_future(encode_query(model, t)) for t in ("bad", "bab")]
        model.go.set()
        await first
        outcomes = await asyncio.gather(*failing, return_exceptions=True)
        return outcomes, await encode_query(model, "later")

    outcomes, later = asyncio.run(searches())
    assert all(isinstance(o, RuntimeError) for o in outcomes)
    assert later == [5.0, 108.0] and model.calls[-1] == ["later"]


def test_a_caller_that_gave_up_is_left_out_of_the_next_pass():
    model = HeldModel()

    async def searches():
        first = await _first_pass_running(model, "a")
        gone = asyncio.ensure_future(encode_query(model, "abandoned"))
        kept = asyncio.ensure_future(encode_query(model, "kept"))
        await asyncio.sleep(0)
        gone.cancel()  # its search timed out
        model.go.set()
        await first
        with pytest.raises(asyncio.CancelledError):
            await gone
        return await kept

    assert asyncio.run(searches()) == [4.0, 107.0]
    assert model.calls == [["a"], ["kept"]]


def test_texts_for_two_models_never_share_a_pass():
    old, new = HeldModel(), HeldModel()
    new.go.set()

    async def searches():
        first = await _first_pass_running(old, "a")
        mixed = [asyncio.ensure_future(encode_query(m, t)) for m, t in ((new, "n1"), (old, "o1"), (new, "n2"))]
        await asyncio.sleep(0)
        old.go.set()
        await first
        return await asyncio.gather(*mixed)

    assert asyncio.run(searches()) == [[2.0, 110.0], [2.0, 111.0], [2.0, 110.0]]
    assert old.calls == [["a"], ["o1"]] and new.calls == [["n1", "n2"]]
