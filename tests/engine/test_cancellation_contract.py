"""The cancellation contract of design §4, point by point.

Each test cancels the task that iterates a turn while a tool is suspended on an ``await``,
the way the gateway does on a barge-in.
"""

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.engine.engine_kit import (
    collect,
    engine_for,
    open_call,
    project_with,
    sample_schema,
    script_of,
)
from voicegate.engine.history import ToolExecuted, UserUttered
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import MemoryStore
from voicegate.engine.seam import (
    MemorySet,
    Say,
    ToolCancelled,
    ToolFinished,
    ToolStarted,
    Transcript,
    TurnEnded,
    TurnEvent,
    TurnEventStream,
)
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import Tool, tool
from voicegate.engine.tools.result import ToolResult

#: Turn 1 calls ``transfer`` then speaks; turn 2 says goodbye.
SCRIPT = {
    "turns": [
        {
            "steps": [
                {"say": "Sure.", "calls": [{"transfer": {"amount": 10.0}}]},
                {"say": "Done: {transfer.status}."},
            ]
        },
        {"say": "Goodbye."},
    ]
}


class Bank:
    """A pretend backend whose first calls hang until told otherwise."""

    def __init__(self, hanging_calls: int = 1) -> None:
        self.hanging_calls = hanging_calls
        self.attempts = 0
        self.log: list[str] = []
        self.in_call = asyncio.Event()
        self.release = asyncio.Event()

    async def transfer(self) -> str:
        self.attempts += 1
        self.in_call.set()
        if self.attempts <= self.hanging_calls:
            await self.release.wait()
        return "ok"


def transfer_tool(bank: Bank, *, send_before: str = "", send_after_cancel: str = "") -> Tool:
    @tool(description="Move money")
    async def transfer(amount: float, context: ToolContext) -> ToolResult:
        if send_before:
            await context.send(send_before)
        context.memory.set("cards.card_list", [f"attempt {bank.attempts + 1}"])
        try:
            status = await bank.transfer()
        except asyncio.CancelledError:
            bank.log.append(f"except (is_cancelled={context.is_cancelled})")
            if send_after_cancel:
                await context.send(send_after_cancel)
            raise
        finally:
            bank.log.append("finally")
        return ToolResult(llm_response={"status": status})

    return transfer


def make_engine(tool_: Tool, store: MemoryStore | None = None, **options: Any) -> ProjectEngine:
    project = project_with({"transfer": tool_}, schema=sample_schema())
    return engine_for(project, script_of(SCRIPT), store, **options)


OnEvent = Callable[[TurnEvent], Awaitable[None]]


async def consume(
    stream: TurnEventStream, received: list[TurnEvent], on_event: OnEvent | None = None
) -> None:
    """The gateway's turn task: iterate, close the stream however it ends."""
    async with stream:
        async for event in stream:
            received.append(event)
            if on_event is not None:
                await on_event(event)


async def cancel_while_in_tool(
    engine: ProjectEngine, bank: Bank, on_event: OnEvent | None = None
) -> tuple[TurnEventStream, list[TurnEvent]]:
    """Start a turn, wait until the tool awaits the bank, cancel the consuming task."""
    stream = engine.turn("c1", Transcript("send ten dollars"))
    received: list[TurnEvent] = []
    task = asyncio.create_task(consume(stream, received, on_event))
    await bank.in_call.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return stream, received


def recorded(engine: ProjectEngine) -> list[ToolExecuted]:
    history = engine.session("c1").history.snapshot()
    return [event for event in history if isinstance(event, ToolExecuted)]


def no_other_tasks() -> bool:
    return asyncio.all_tasks() == {asyncio.current_task()}


async def test_point1_the_tool_sees_cancelled_error_at_its_await() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    await cancel_while_in_tool(engine, bank)
    assert bank.log == ["except (is_cancelled=True)", "finally"]
    assert no_other_tasks()


async def test_point3_a_cancelled_call_is_not_recorded() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    stream, received = await cancel_while_in_tool(engine, bank)
    assert recorded(engine) == []
    assert received == [
        Say("t1", "Sure.", "model"),
        ToolStarted("t1", "call-1-1-1", "transfer", {"amount": 10.0}),
        MemorySet("t1", "cards.card_list", ["attempt 1"]),
    ]
    leftover = stream.undelivered()
    assert ToolCancelled("t1", "call-1-1-1", "transfer") in leftover
    assert leftover[-1] == TurnEnded("t1", "cancelled")
    assert not any(isinstance(event, ToolFinished) for event in leftover)


async def test_point3_the_next_turn_runs_the_same_tool_again_and_then_advances() -> None:
    bank = Bank(hanging_calls=1)
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    await cancel_while_in_tool(engine, bank)
    events = await collect(engine, "c1", Transcript("hello?"))
    assert events[:2] == [
        Say("t2", "Sure.", "model"),
        ToolStarted("t2", "call-1-1-1", "transfer", {"amount": 10.0}),
    ]
    assert events[-2:] == [Say("t2", "Done: ok.", "model"), TurnEnded("t2", "completed")]
    assert bank.attempts == 2
    assert [(event.turn_id, event.call_id) for event in recorded(engine)] == [("t2", "call-1-1-1")]
    assert await collect(engine, "c1", Transcript("thanks")) == [
        Say("t3", "Goodbye.", "model"),
        TurnEnded("t3", "completed"),
    ]


async def test_point4_memory_written_before_the_cancel_is_kept() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    _, received = await cancel_while_in_tool(engine, bank)
    memory = engine.session("c1").memory
    assert memory.value(FieldRef("cards", "card_list")) == ["attempt 1"]
    assert MemorySet("t1", "cards.card_list", ["attempt 1"]) in received


async def test_point4_memory_written_before_the_cancel_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    bank = Bank()
    engine = make_engine(transfer_tool(bank), SqliteMemoryStore(path))
    await open_call(engine)
    await cancel_while_in_tool(engine, bank)
    # the gateway restarts: a new store and a new engine on the same file, same conversation
    restarted = make_engine(transfer_tool(Bank(hanging_calls=0)), SqliteMemoryStore(path))
    await open_call(restarted)
    memory = restarted.session("c1").memory
    assert memory.value(FieldRef("cards", "card_list")) == ["attempt 1"]


async def test_point2_a_send_not_yet_consumed_when_the_turn_is_cancelled_is_dropped() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank, send_before="Hold on."))
    await open_call(engine)
    busy = asyncio.Event()

    async def gateway_busy_speaking(event: TurnEvent) -> None:
        if isinstance(event, ToolStarted):
            await busy.wait()  # e.g. synthesising speech; never reads the next event

    stream, received = await cancel_while_in_tool(engine, bank, gateway_busy_speaking)
    hold_on = Say("t1", "Hold on.", "tool")
    assert hold_on not in received
    assert hold_on in stream.undelivered()  # it was produced before the cancel, never delivered


async def test_point2_a_send_made_after_the_cancel_is_dropped() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank, send_after_cancel="Sorry, stopping."))
    await open_call(engine)
    stream, received = await cancel_while_in_tool(engine, bank)
    texts = [event.text for event in [*received, *stream.undelivered()] if isinstance(event, Say)]
    assert "Sorry, stopping." not in texts
    assert bank.log[0] == "except (is_cancelled=True)"


async def test_point3_a_tool_that_checks_is_cancelled_and_returns_early_is_recorded() -> None:
    gate = asyncio.Event()
    reached = asyncio.Event()

    @tool(description="Move money carefully")
    async def transfer(amount: float, context: ToolContext) -> ToolResult:
        reached.set()
        await gate.wait()
        if context.is_cancelled:  # checked right before the irreversible part
            return ToolResult(llm_response={"status": "skipped"})
        return ToolResult(llm_response={"status": "sent"})

    engine = make_engine(transfer)
    await open_call(engine)
    received: list[TurnEvent] = []
    task = asyncio.create_task(consume(engine.turn("c1", Transcript("send")), received))
    await reached.wait()
    gate.set()  # the backend answers ...
    task.cancel()  # ... in the same instant the caller barges in
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [(e.name, e.result) for e in recorded(engine)] == [("transfer", {"status": "skipped"})]
    # the step advanced: the next turn does not call the tool again
    events = await collect(engine, "c1", Transcript("ok"))
    assert not any(isinstance(event, ToolStarted) for event in events)
    assert no_other_tasks()


async def test_a_result_returned_from_a_swallowed_cancellation_is_not_recorded() -> None:
    reached = asyncio.Event()

    @tool(description="Swallows cancellation")
    async def transfer(amount: float) -> ToolResult:
        reached.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return ToolResult(llm_response={"status": "pretend it worked"})
        return ToolResult()

    engine = make_engine(transfer)
    await open_call(engine)
    received: list[TurnEvent] = []
    task = asyncio.create_task(consume(engine.turn("c1", Transcript("send")), received))
    await reached.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert recorded(engine) == []
    assert no_other_tasks()


async def test_point5_the_user_input_of_a_cancelled_turn_stays_and_heard_text_is_kept() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    await cancel_while_in_tool(engine, bank)
    await engine.heard("c1", "t1", "Sure.", interrupted=True)
    history = engine.session("c1").history.snapshot()
    assert history[0] == UserUttered("t1", "send ten dollars")
    assert [type(event).__name__ for event in history] == [
        "UserUttered",
        "MemoryWritten",
        "BotUttered",
    ]


async def test_closing_the_stream_early_cancels_the_tool() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    async with engine.turn("c1", Transcript("send")) as stream:
        async for event in stream:
            if isinstance(event, ToolStarted):
                await bank.in_call.wait()
                break
    assert bank.log == ["except (is_cancelled=True)", "finally"]
    assert recorded(engine) == []
    assert no_other_tasks()


async def test_a_tool_slow_to_unwind_stays_owned_until_the_session_closes() -> None:
    bank = Bank()
    unwinding = asyncio.Event()

    @tool(description="Slow to clean up")
    async def transfer(amount: float) -> ToolResult:
        try:
            await bank.transfer()
        except asyncio.CancelledError:
            await unwinding.wait()  # e.g. closing a connection politely
            bank.log.append("unwound")
            raise
        return ToolResult()

    engine = make_engine(transfer, unwind_grace=0.01)
    await open_call(engine)
    await cancel_while_in_tool(engine, bank)  # returns after the grace period
    assert bank.log == []
    assert len(engine.session("c1").workers) == 1
    unwinding.set()
    await engine.close("c1")
    assert bank.log == ["unwound"]
    assert no_other_tasks()


async def test_a_new_turn_first_cancels_a_turn_still_running() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    received: list[TurnEvent] = []
    never = asyncio.Event()

    async def stall(event: TurnEvent) -> None:
        if isinstance(event, ToolStarted):
            await never.wait()

    forgotten = asyncio.create_task(consume(engine.turn("c1", Transcript("one")), received, stall))
    await bank.in_call.wait()
    events = await collect(engine, "c1", Transcript("two"))  # t1 was never closed
    assert bank.log[:2] == ["except (is_cancelled=True)", "finally"]
    assert events[-1] == TurnEnded("t2", "completed")
    assert [event.turn_id for event in recorded(engine)] == ["t2"]
    forgotten.cancel()
    with pytest.raises(asyncio.CancelledError):
        await forgotten
    assert no_other_tasks()


async def test_closing_the_session_cancels_a_running_turn() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    received: list[TurnEvent] = []
    task = asyncio.create_task(consume(engine.turn("c1", Transcript("send")), received))
    await bank.in_call.wait()
    await engine.close("c1")
    await task
    assert bank.log == ["except (is_cancelled=True)", "finally"]
    assert received[-2:] == [
        ToolCancelled("t1", "call-1-1-1", "transfer"),
        TurnEnded("t1", "cancelled"),
    ]
    assert no_other_tasks()


async def test_cancelling_while_the_model_streams_records_nothing() -> None:
    bank = Bank()
    engine = make_engine(transfer_tool(bank))
    await open_call(engine)
    received: list[TurnEvent] = []
    task = asyncio.create_task(consume(engine.turn("c1", Transcript("send")), received))
    await asyncio.sleep(0)  # the worker starts and the model begins to stream
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert bank.attempts == 0
    assert recorded(engine) == []
    assert no_other_tasks()
