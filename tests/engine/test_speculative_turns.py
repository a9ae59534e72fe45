"""Speculative turns (issue 14): a turn started at the caller's pause holds every effect until
confirmed, and one cancelled before that leaves no trace (engine/loop/speculation.py)."""

import asyncio

from tests.engine.engine_kit import (
    open_call,
    project_with,
    sample_schema,
    script_of,
    settle_loop,
)
from voicegate.engine.history import ToolExecuted, UserUttered
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.seam import CallInfo, Say, ToolStarted, Transcript, TurnEnded, TurnEvent
from voicegate.engine.simple import Conversation, FunctionEngine
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import Tool, tool
from voicegate.engine.tools.result import ToolResult

SCRIPT = {
    "turns": [
        {"steps": [{"say": "Sure.", "calls": [{"lookup": {}}]}, {"say": "It is {lookup.n}."}]},
        {"say": "Goodbye."},
    ]
}
CARDS = FieldRef("cards", "card_list")


def lookup_tool(ran: list[str], *, run_early: bool = False) -> Tool:
    @tool(description="Look the cards up", run_early=run_early)
    async def lookup(context: ToolContext) -> ToolResult:
        ran.append("lookup")
        if not run_early:
            context.memory.set("cards.card_list", ["looked up"])
        return ToolResult(llm_response={"n": 1})

    return lookup


def engine_with(lookup: Tool) -> ProjectEngine:
    project = project_with({"lookup": lookup}, schema=sample_schema())
    script = script_of(SCRIPT)
    return ProjectEngine(project, lambda call_id: ScriptedLLM(script), InMemoryStore())


async def until_say(
    engine: ProjectEngine, received: list[TurnEvent], until: type[TurnEvent] = Say
) -> asyncio.Task[None]:
    """Start a speculative turn; return its consuming task once an ``until`` event arrived."""
    first = asyncio.Event()

    async def consume() -> None:
        async with engine.turn("c1", Transcript("my cards", speculative=True)) as stream:
            async for event in stream:
                received.append(event)
                if isinstance(event, until):
                    first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    return task


async def test_a_cancelled_speculative_turn_leaves_no_trace() -> None:
    ran: list[str] = []
    engine = engine_with(lookup_tool(ran))
    await open_call(engine)
    received: list[TurnEvent] = []
    task = await until_say(engine, received)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert received == [Say("t1", "Sure.", "model")]  # the answer was ready, nothing ran
    assert ran == []
    session = engine.session("c1")
    assert session.memory.value(CARDS) is None
    assert not [e for e in session.history.snapshot() if isinstance(e, UserUttered)]
    # The model's script went back too: the real turn gets the same first answer and runs.
    events = []
    async with engine.turn("c1", Transcript("my cards please")) as stream:
        events = [event async for event in stream]
    assert events[0] == Say("t2", "Sure.", "model")
    assert events[-1] == TurnEnded("t2", "completed")
    assert ran == ["lookup"]
    history = session.history.snapshot()
    assert [e.text for e in history if isinstance(e, UserUttered)] == ["my cards please"]
    assert [e.turn_id for e in history if isinstance(e, ToolExecuted)] == ["t2"]


async def test_a_confirmed_speculative_turn_runs_its_tools_then_ends() -> None:
    ran: list[str] = []
    engine = engine_with(lookup_tool(ran))
    await open_call(engine)
    received: list[TurnEvent] = []
    task = await until_say(engine, received)
    await settle_loop()
    assert ran == []  # held at the tool until the caller's turn is confirmed over
    await engine.confirm("c1", "t1")
    await task
    assert ran == ["lookup"]
    assert isinstance(received[1], ToolStarted)
    assert received[-2:] == [Say("t1", "It is 1.", "model"), TurnEnded("t1", "completed")]
    assert engine.session("c1").memory.value(CARDS) == ["looked up"]


async def test_a_tool_marked_run_early_runs_before_the_confirmation() -> None:
    ran: list[str] = []
    engine = engine_with(lookup_tool(ran, run_early=True))
    await open_call(engine)
    received: list[TurnEvent] = []
    task = await until_say(engine, received, until=TurnEnded)
    assert ran == ["lookup"]
    assert received[-2:] == [Say("t1", "It is 1.", "model"), TurnEnded("t1", "completed")]
    assert not task.done()  # the stream stays open until confirmed: it can still be undone
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    history = engine.session("c1").history.snapshot()
    assert not [e for e in history if isinstance(e, UserUttered | ToolExecuted)]


async def test_a_function_engine_runs_a_speculative_reply_only_once_confirmed() -> None:
    replied: list[str] = []

    async def reply(text: str, conversation: Conversation) -> str:
        replied.append(text)
        return f"you said {text}"

    engine = FunctionEngine(reply)
    await engine.open(CallInfo("c1"))
    overridden = engine.turn("c1", Transcript("check my", speculative=True))
    await overridden.aclose()  # the caller went on: cancelled before it was confirmed
    confirmed = engine.turn("c1", Transcript("check my balance", speculative=True))
    await engine.confirm("c1", confirmed.turn_id)
    async with confirmed as stream:
        events = [event async for event in stream]
    assert replied == ["check my balance"]
    assert events[0] == Say("t1", "you said check my balance", "model")
    conversation = engine.conversation("c1")
    assert conversation is not None
    assert conversation.history == [("caller", "check my balance")]
