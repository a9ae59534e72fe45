"""Project tools on a tool loop thread (issue 12): the cancellation contract still holds.

The gateway runs ``@tool`` functions on :class:`ToolLoops`, so these tests use only what crosses
threads safely: ``threading.Event`` for the tool's backend, plain lists for its own record.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.engine.engine_kit import collect, engine_for, open_call, project_with, sample_schema
from tests.engine.engine_kit import script_of as parse
from voicegate.engine.history import ToolExecuted
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.seam import Say, ToolCancelled, ToolFinished, ToolStarted, Transcript
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import Tool, tool
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.engine.tools.rasa_compat import rasa_aliases
from voicegate.engine.tools.result import ToolResult

SCRIPT = {
    "turns": [
        {"steps": [{"say": "Sure.", "calls": [{"work": {}}]}, {"say": "Done: {work.status}."}]},
        {"steps": [{"calls": [{"work": {}}]}, {"say": "Again: {work.status}."}]},
    ]
}
CARDS = FieldRef("cards", "card_list")


@pytest.fixture
def tool_loops() -> Iterator[ToolLoops]:
    loops = ToolLoops(grace=0.2)
    yield loops
    loops.close()


def engine_with(
    work: Tool, loops: ToolLoops, store: InMemoryStore | None = None, **kw: Any
) -> ProjectEngine:
    project = project_with({"work": work}, schema=sample_schema(), **kw)
    return engine_for(project, parse(SCRIPT), store, tool_loops=loops)


async def until(condition: threading.Event, timeout_s: float = 5.0) -> None:
    """Wait on the test's loop for an event set on the tool's thread."""
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, condition.wait, timeout_s)


def recorded(engine: ProjectEngine) -> list[ToolExecuted]:
    return [e for e in engine.session("c1").history.snapshot() if isinstance(e, ToolExecuted)]


async def test_a_cancel_reaches_the_tool_at_its_await_and_its_memory_is_kept(
    tool_loops: ToolLoops,
) -> None:
    log: list[str] = []
    awaiting = threading.Event()

    @tool(description="Slow work")
    async def work(context: ToolContext) -> ToolResult:
        context.memory.set("cards.card_list", ["written before the await"])
        await context.send("Hold on.")
        awaiting.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            log.append(f"cancelled on {threading.current_thread().name}")
            await context.send("never spoken")
            raise
        return ToolResult(llm_response={"status": "ok"})

    store = InMemoryStore()
    engine = engine_with(work, tool_loops, store)
    await open_call(engine)
    stream = engine.turn("c1", Transcript("go"))
    received: list[Any] = []

    async def consume() -> None:
        async with stream:
            async for event in stream:
                received.append(event)

    task = asyncio.create_task(consume())
    await until(awaiting)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log
    assert log[0].startswith("cancelled on voicegate-tools-")
    assert recorded(engine) == []
    assert any(isinstance(e, ToolCancelled) for e in stream.undelivered())
    spoken = [e.text for e in [*received, *stream.undelivered()] if isinstance(e, Say)]
    assert "never spoken" not in spoken
    assert engine.session("c1").memory.value(CARDS) == ["written before the await"]
    assert store.load("conv-c1")[("cards", "card_list")] == '["written before the await"]'
    # the step stayed pending: the next turn runs the tool again
    awaiting.clear()
    again = asyncio.create_task(collect(engine, "c1", Transcript("again")))
    await until(awaiting)
    again.cancel()
    with pytest.raises(asyncio.CancelledError):
        await again
    assert len(log) == 2


async def test_a_tool_that_returned_before_the_cancel_arrived_is_recorded(
    tool_loops: ToolLoops,
) -> None:
    @tool(description="Quick work")
    async def work() -> ToolResult:
        return ToolResult(llm_response={"status": "sent"})

    engine = engine_with(work, tool_loops)
    await open_call(engine)
    started = asyncio.Event()
    stream = engine.turn("c1", Transcript("go"))

    async def consume() -> None:
        async with stream:
            async for event in stream:
                if isinstance(event, ToolStarted):
                    started.set()
                    await asyncio.sleep(3600)

    task = asyncio.create_task(consume())
    await started.wait()
    # Hold the engine's loop (synchronously) while the tool returns on its thread, so its result
    # is still in flight when the barge-in cancels the turn.
    threading.Event().wait(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [e.result for e in recorded(engine)] == [{"status": "sent"}]


async def test_tool_calls_share_one_loop_so_loop_bound_clients_keep_working(
    tool_loops: ToolLoops,
) -> None:
    loops_seen: list[int] = []
    lock_box: list[asyncio.Lock] = []

    @tool(description="Uses a client made on first use")
    async def work() -> ToolResult:
        if not lock_box:
            lock_box.append(asyncio.Lock())  # a loop-bound object kept between calls
        async with lock_box[0]:
            await asyncio.sleep(0)
        loops_seen.append(id(asyncio.get_running_loop()))
        return ToolResult(llm_response={"status": "ok"})

    engine = engine_with(work, tool_loops)
    await open_call(engine)
    await collect(engine, "c1", Transcript("one"))
    await collect(engine, "c1", Transcript("two"))
    assert len(loops_seen) == 2
    assert len(set(loops_seen)) == 1
    assert loops_seen[0] != id(asyncio.get_running_loop())


async def test_a_blocked_tool_times_out_and_the_next_call_runs_on_a_fresh_loop(
    tool_loops: ToolLoops, caplog: pytest.LogCaptureFixture
) -> None:
    unblock = threading.Event()
    calls: list[str] = []

    @tool(description="Blocks its thread the first time")
    async def work(context: ToolContext) -> ToolResult:
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            unblock.wait(10)  # synchronous: the tool loop cannot run anything else
            context.memory.set("cards.card_list", ["too late"])
        return ToolResult(llm_response={"status": "ok"})

    engine = engine_with(work, tool_loops, tool_timeout=0.3)
    await open_call(engine)
    first = await collect(engine, "c1", Transcript("one"))
    finished = [e for e in first if isinstance(e, ToolFinished)]
    assert [(e.name, e.outcome) for e in finished] == [("work", "timeout")]
    second = await collect(engine, "c1", Transcript("two"))
    assert [e.outcome for e in second if isinstance(e, ToolFinished)] == ["ok"]
    assert calls[0] != calls[1]  # the stalled loop was replaced
    unblock.set()
    await asyncio.sleep(0.3)
    # the abandoned call's late write was discarded, and how it ended is logged
    assert engine.session("c1").memory.value(CARDS) is None
    messages = [record.getMessage() for record in caplog.records]
    discarded = "tool 'work' was abandoned; its memory write to 'cards.card_list' is discarded"
    assert discarded in messages
    assert "abandoned tool 'work' ended normally (its result is discarded)" in messages


async def test_a_tool_that_calls_sys_exit_fails_its_call_and_later_calls_still_run(
    tool_loops: ToolLoops,
) -> None:
    # asyncio re-raises SystemExit out of the loop running the task: before, one published
    # tool's sys.exit() (argparse does it too) stopped the shared tool loop and then the
    # engine's loop, so every later tool call failed and the gateway process exited.
    calls: list[int] = []

    @tool(description="Exits the first time")
    async def work() -> ToolResult:
        calls.append(1)
        if len(calls) == 1:
            raise SystemExit(3)
        return ToolResult(llm_response={"status": "ok"})

    engine = engine_with(work, tool_loops)
    await open_call(engine)
    first = await collect(engine, "c1", Transcript("one"))
    failed = [e for e in first if isinstance(e, ToolFinished)]
    assert [(e.outcome, e.result) for e in failed] == [
        ("error", {"error": "tool 'work' failed: SystemExit: 3"})
    ]
    second = await collect(engine, "c1", Transcript("two"))
    assert [e.outcome for e in second if isinstance(e, ToolFinished)] == ["ok"]


async def test_current_turn_context_names_the_conversation_on_the_tool_thread(
    tool_loops: ToolLoops,
) -> None:
    # contract §1 lists rasa.mantle.orchestration.turn_context.current_turn_context() [ex]:
    # published tools key their backend records by its sender_id
    with rasa_aliases():
        module = importlib.import_module("rasa.mantle.orchestration.turn_context")
    senders: list[str] = []

    @tool(description="Who is this for")
    async def work() -> ToolResult:
        senders.append(module.current_turn_context().sender_id)
        return ToolResult(llm_response={"status": "ok"})

    engine = engine_with(work, tool_loops)
    await open_call(engine)
    await collect(engine, "c1", Transcript("one"))
    assert senders == ["conv-c1"]
    with pytest.raises(RuntimeError, match="only available while a tool runs"):
        module.current_turn_context()
