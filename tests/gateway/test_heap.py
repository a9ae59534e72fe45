"""The startup heap: garbage collected first, what lives on frozen out of full GC passes."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from voicegate.gateway.heap import freeze_startup_heap


class Node:
    """A reference cycle's member (only the cyclic collector can free it)."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """The test process's heap goes back to normal collection afterwards."""
    assert gc.get_freeze_count() == 0
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
def test_objects_alive_at_startup_leave_the_collected_generations() -> None:
    kept = [Node()]
    frozen = freeze_startup_heap()
    # Not ==: another thread of the test process may free a frozen object meanwhile.
    assert frozen > 0
    assert gc.get_freeze_count() > 0
    assert not any(tracked is kept for tracked in gc.get_objects())
    later = [Node()]  # made after startup: still collected as usual
    assert any(tracked is later for tracked in gc.get_objects())


@pytest.mark.usefixtures("unfrozen")
def test_startup_garbage_is_collected_not_frozen() -> None:
    gc.disable()  # no automatic pass may free the cycle before the helper runs
    try:
        first, second = Node(), Node()
        first.other, second.other = second, first
        gone = weakref.ref(first)
        del first, second
        freeze_startup_heap()
    finally:
        gc.enable()
    assert gone() is None
