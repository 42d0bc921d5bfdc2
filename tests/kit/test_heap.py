"""A long-running process's start-up objects leave later garbage collections."""

import gc

from collab.kit import heap


def test_settle_freezes_what_start_up_made_and_later_garbage_is_still_collected():

    class Node:
        pass

    try:
        heap.settle()
        assert gc.get_freeze_count() > 1000  # the modules, classes and objects of start-up
        # What comes after is collected as before: a reference cycle made now is found by a full collection.
        cycle = Node()
        cycle.self = cycle
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()  # this test process goes on as it was
