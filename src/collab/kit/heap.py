"""The garbage collector in a long-running process: what start-up made is left out of later collections."""

import gc

from collab.kit.looplag import LoopLag


def settle(lag: LoopLag | None = None) -> None:
    """Collect what start-up left behind, then move every object that remains out of future collections.

    A full collection walks every tracked object. A worker holds ~150k of them once started (modules, pydantic
    models, the tokenizer), and a full collection there took 84-214 ms (measured): any search or request it lands
    in waits that long. Start-up objects live as long as the process, so walking them again finds nothing; once
    frozen, a full collection walks only what came after. Call once, after start-up; `lag`, the process's loop-lag
    measure, is told that the loop is held on purpose (start-up's last step, before any request or job).
    """
    if lag is not None:
        lag.excuse()
    gc.collect()
    gc.freeze()
