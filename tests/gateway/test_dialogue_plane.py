"""The engine on a dialogue plane (issue 12): the turn seam crosses threads, the contract holds.

A real ``ProjectEngine`` with a scripted model runs on a :class:`DialoguePlane`; its tools on
:class:`ToolLoops`. The test's loop plays the media loop, driving ``ThreadedEngine``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest

from tests.engine.engine_kit import engine_for, project_with, sample_schema
from tests.engine.engine_kit import script_of as parse
from voicegate.engine.history import BotUttered, ToolExecuted
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.seam import (
    CallInfo,
    Say,
    ToolCancelled,
    ToolFinished,
    ToolStarted,
    Transcript,
    TurnEvent,
)
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import tool
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.engine.tools.result import ToolResult
from voicegate.errors import EngineError
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine

SCRIPT = {
    "turns": [
        {"steps": [{"say": "Sure.", "calls": [{"work": {}}]}, {"say": "Done: {work.status}."}]},
        {"steps": [{"calls": [{"work": {}}]}, {"say": "Again: {work.status}."}]},
    ]
}
CARDS = FieldRef("cards", "card_list")


class Backend:
    """The tool's backend: hangs until released (thread-safe), records what the tool saw."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        self.log: list[str] = []
        self.threads: set[str] = set()


@pytest.fixture
async def engines() -> AsyncIterator[tuple[ThreadedEngine, ProjectEngine, Backend]]:
    backend = Backend()

    @tool(description="Slow work")
    async def work(context: ToolContext) -> ToolResult:
        backend.threads.add(threading.current_thread().name)
        context.memory.set("cards.card_list", [f"attempt {len(backend.log) + 1}"])
        backend.reached.set()
        try:
            while not backend.release.is_set():  # noqa: ASYNC110 - set from another thread
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            backend.log.append("cancelled")
            raise
        backend.log.append("finished")
        return ToolResult(llm_response={"status": "ok"})

    loops = ToolLoops(grace=0.3)
    plane = DialoguePlane()
    plane.start()
    inner = engine_for(
        project_with({"work": work}, schema=sample_schema()), parse(SCRIPT), tool_loops=loops
    )
    threaded = ThreadedEngine(inner, plane)
    await threaded.open(CallInfo("c1"))
    yield threaded, inner, backend
    await threaded.close("c1")
    plane.stop()
    loops.close()


async def wait_for(event: threading.Event) -> None:
    assert await asyncio.get_running_loop().run_in_executor(None, event.wait, 5.0)


async def test_a_turn_streams_its_events_across_the_plane(
    engines: tuple[ThreadedEngine, ProjectEngine, Backend],
) -> None:
    threaded, _, backend = engines
    backend.release.set()
    events: list[TurnEvent] = []
    async with threaded.turn("c1", Transcript("go")) as stream:
        assert stream.turn_id == "t1"
        events.extend([event async for event in stream])
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "Say"
    assert "ToolStarted" in kinds
    assert [e.outcome for e in events if isinstance(e, ToolFinished)] == ["ok"]
    assert [e.text for e in events if isinstance(e, Say)] == ["Sure.", "Done: ok."]
    assert backend.threads
    assert all(name.startswith("voicegate-tools-") for name in backend.threads)


async def test_cancelling_the_media_side_turn_keeps_the_cancellation_contract(
    engines: tuple[ThreadedEngine, ProjectEngine, Backend],
) -> None:
    threaded, inner, backend = engines
    stream = threaded.turn("c1", Transcript("go"))
    received: list[TurnEvent] = []

    async def consume() -> None:
        async with stream:
            async for event in stream:
                received.append(event)

    task = asyncio.create_task(consume())
    await wait_for(backend.reached)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert backend.log == ["cancelled"]  # CancelledError at the tool's await
    assert any(isinstance(e, ToolCancelled) for e in stream.undelivered())
    session = inner.session("c1")
    assert not [e for e in session.history.snapshot() if isinstance(e, ToolExecuted)]
    assert session.memory.value(CARDS) == ["attempt 1"]  # memory written before is kept
    # what was heard is recorded before the next turn starts, which runs the pending step again
    await threaded.heard("c1", stream.turn_id, "Sure.", interrupted=True)
    backend.release.set()
    async with threaded.turn("c1", Transcript("again")) as again:
        events = [event async for event in again]
    assert any(isinstance(e, ToolStarted) for e in events)
    assert backend.log == ["cancelled", "finished"]
    uttered = [e for e in session.history.snapshot() if isinstance(e, BotUttered)]
    assert uttered[0].text == "Sure."
    assert uttered[0].interrupted


async def test_a_turn_for_a_call_that_is_not_open_is_refused(
    engines: tuple[ThreadedEngine, ProjectEngine, Backend],
) -> None:
    threaded, _, _ = engines
    with pytest.raises(EngineError):
        threaded.turn("nobody", Transcript("hello"))
