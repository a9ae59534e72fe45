"""Turns through the seam: streamed Say, tool dispatch, recording, heard-only history."""

import asyncio
import json
from collections.abc import AsyncGenerator, Sequence

import pytest

from tests.engine.engine_kit import (
    RecordingLLM,
    collect,
    engine_for,
    open_call,
    project_with,
    sample_schema,
    script_of,
)
from voicegate.engine.history import BotUttered, MemoryWritten, ToolExecuted, UserUttered
from voicegate.engine.llm.port import (
    AssistantMessage,
    Message,
    StreamItem,
    SystemMessage,
    TextDelta,
    ToolResultMessage,
    UserMessage,
)
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.loop.turn_runner import MAX_MODEL_STEPS
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.seam import (
    ButtonPress,
    Buttons,
    CallInfo,
    Dtmf,
    MemorySet,
    Say,
    SilenceTimeout,
    ToolCancelled,
    ToolFinished,
    ToolStarted,
    Transcript,
    TurnEnded,
    TurnEvent,
    event_record,
)
from voicegate.engine.tools.buttons import Button
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import tool
from voicegate.engine.tools.result import ToolResult
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import EngineError, LLMError

SEEN_EVENTS: list[list[object]] = []


@tool(description="Pick the first card")
async def pick_card(owner: str, context: ToolContext) -> ToolResult:
    SEEN_EVENTS.append(context.events)
    await context.send("Let me look.")
    context.memory.set("card_list", ["c-1", "c-2"])
    context.memory.set("project.phone", "+15550100")
    await asyncio.sleep(0)
    return ToolResult(llm_response={"card": "c-1", "owner": owner})


@tool(description="Never returns")
async def hang() -> ToolResult:
    await asyncio.Event().wait()
    return ToolResult()


@tool(description="Shared name from another skill")
async def noop() -> ToolResult:
    return ToolResult(llm_response="ok")


def card_engine(turns: list[dict[str, object]], **options: object) -> ProjectEngine:
    project = project_with({"pick_card": pick_card, "hang": hang}, schema=sample_schema())
    return engine_for(project, script_of({"turns": turns}), **options)  # type: ignore[arg-type]


PICK = {
    "steps": [
        {"say": "Sure.", "calls": [{"pick_card": {"owner": "Sam"}}]},
        {"say": "Found {pick_card.card} for {pick_card.owner}. Anything else?"},
    ]
}


async def test_a_tool_turn_yields_events_in_order() -> None:
    engine = card_engine([PICK])
    await open_call(engine)
    events = await collect(engine, "c1", Transcript("my card"))
    assert [type(event).__name__ for event in events] == [
        "Say",
        "ToolStarted",
        "Say",
        "MemorySet",
        "MemorySet",
        "ToolFinished",
        "Say",
        "Say",
        "TurnEnded",
    ]
    assert events[0] == Say("t1", "Sure.", "model")
    assert events[1] == ToolStarted("t1", "call-1-1-1", "pick_card", {"owner": "Sam"})
    assert events[2] == Say("t1", "Let me look.", "tool")
    assert events[3] == MemorySet("t1", "cards.card_list", ["c-1", "c-2"])
    assert events[4] == MemorySet("t1", "project.phone", "[set]")  # PII never leaves unmasked
    assert events[5] == ToolFinished(
        "t1", "call-1-1-1", "pick_card", "ok", {"card": "c-1", "owner": "Sam"}
    )
    assert [event.text for event in events[6:8]] == ["Found c-1 for Sam.", "Anything else?"]  # type: ignore[union-attr]
    assert events[-1] == TurnEnded("t1", "completed")


async def test_completed_calls_are_recorded_and_tools_get_a_copy_of_the_history() -> None:
    engine = card_engine([{"say": "Hello."}, PICK])
    await open_call(engine)
    await collect(engine, "c1", Transcript("hi"))
    await engine.heard("c1", "t1", "Hello.", interrupted=False)
    SEEN_EVENTS.clear()
    await collect(engine, "c1", Transcript("card"))
    history = engine.session("c1").history.snapshot()
    executed = [event for event in history if isinstance(event, ToolExecuted)]
    assert executed == [
        ToolExecuted(
            "t2", "call-2-1-1", "pick_card", {"owner": "Sam"}, "ok", {"card": "c-1", "owner": "Sam"}
        )
    ]
    assert [
        [UserUttered("t1", "hi"), BotUttered("t1", "Hello.", False), UserUttered("t2", "card")]
    ] == SEEN_EVENTS
    writes = [event for event in history if isinstance(event, MemoryWritten)]
    assert [(w.namespace, w.entry) for w in writes] == [
        ("cards", "card_list"),
        ("project", "phone"),
    ]


class SlowModel:
    """Says one sentence, then waits before finishing the next."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        yield TextDelta("First sentence. Sec")
        await self.release.wait()
        yield TextDelta("ond sentence.")


async def test_say_is_streamed_as_soon_as_a_sentence_is_ready() -> None:
    model = SlowModel()
    engine = ProjectEngine(project_with(), lambda call_id: model, InMemoryStore())
    await open_call(engine)
    async with engine.turn("c1", Transcript("go")) as stream:
        first = await anext(stream)
        assert first == Say("t1", "First sentence.", "model")
        assert not model.release.is_set()  # the model is still streaming
        model.release.set()
        rest = [event async for event in stream]
    assert rest == [Say("t1", "Second sentence.", "model"), TurnEnded("t1", "completed")]


async def test_history_holds_only_what_was_heard() -> None:
    recorder: list[RecordingLLM] = []
    engine = card_engine(
        [{"say": "One. Two. Three."}, {"say": "Okay."}, {"say": "Fine."}], recorder=recorder
    )
    await open_call(engine)
    await collect(engine, "c1", Transcript("first"))
    await engine.heard("c1", "t1", "One. Two.", interrupted=True)
    await collect(engine, "c1", Transcript("second"))
    await collect(engine, "c1", Transcript("third"))  # t2 was never reported as heard
    conversation = [m for m in recorder[0].requests[-1] if not isinstance(m, SystemMessage)]
    assert conversation == [
        UserMessage("first"),
        AssistantMessage("One. Two."),
        UserMessage("second"),
        UserMessage("third"),
    ]
    bot = [e for e in engine.session("c1").history.snapshot() if isinstance(e, BotUttered)]
    assert bot == [BotUttered("t1", "One. Two.", True)]


async def test_recorded_tool_calls_reach_the_model_on_later_turns() -> None:
    recorder: list[RecordingLLM] = []
    engine = card_engine([PICK, {"say": "Bye."}], recorder=recorder)
    await open_call(engine)
    await collect(engine, "c1", Transcript("card"))
    await collect(engine, "c1", Transcript("thanks"))
    later = recorder[0].requests[-1]
    results = [m for m in later if isinstance(m, ToolResultMessage)]
    assert results == [
        ToolResultMessage("call-1-1-1", "pick_card", '{"card": "c-1", "owner": "Sam"}')
    ]


async def test_system_message_has_persona_and_project_memory_with_pii_masked() -> None:
    recorder: list[RecordingLLM] = []
    engine = card_engine([PICK], recorder=recorder)
    await open_call(engine, phone="+15550100", authenticated="ignored: not a seed field")
    await collect(engine, "c1", Transcript("card"))
    system = recorder[0].requests[0][0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("Test persona.")
    assert "### Project Memory\nproject.phone: [set]" in system.text
    assert "+15550100" not in system.text
    assert "authenticated" not in system.text


async def test_offered_tools_are_the_skill_tools_without_hooks() -> None:
    @tool(description="A hook")
    async def run_after_setting_card_list() -> ToolResult:
        return ToolResult()

    recorder: list[RecordingLLM] = []
    tools = {"pick_card": pick_card, "run_after_setting_card_list": run_after_setting_card_list}
    project = project_with(tools, schema=sample_schema())
    engine = engine_for(project, script_of({"turns": [{"say": "Hi."}]}), recorder=recorder)
    await open_call(engine)
    await collect(engine, "c1", Transcript("hi"))
    # the skill's tools without its hook, then the framework tools this state offers (no
    # skill to route, no knowledge base: cannot_help and listen; contract §7.3)
    assert [spec.name for spec in recorder[0].tools] == ["pick_card", "cannot_help", "listen"]


async def test_an_unknown_or_hook_tool_call_is_a_reported_failure() -> None:
    engine = card_engine([{"steps": [{"calls": ["run_after_setting_x"]}, {"say": "Sorry."}]}])
    await open_call(engine)
    events = await collect(engine, "c1", Transcript("go"))
    finished = next(event for event in events if isinstance(event, ToolFinished))
    assert finished.outcome == "error"
    assert "there is no tool 'run_after_setting_x'" in finished.result["error"]
    assert events[-1] == TurnEnded("t1", "completed")


async def test_a_tool_timeout_is_reported_and_the_turn_goes_on() -> None:
    project = project_with({"hang": hang}, tool_timeout=0.01)
    script = script_of({"turns": [{"steps": [{"calls": ["hang"]}, {"say": "It failed."}]}]})
    engine = engine_for(project, script)
    await open_call(engine)
    events = await collect(engine, "c1", Transcript("go"))
    finished = next(event for event in events if isinstance(event, ToolFinished))
    assert finished.outcome == "timeout"
    assert finished.result == {"error": "tool 'hang' timed out after 0.01 s (tool_timeout)"}
    assert events[-2:] == [Say("t1", "It failed.", "model"), TurnEnded("t1", "completed")]
    executed = [e for e in engine.session("c1").history.snapshot() if isinstance(e, ToolExecuted)]
    assert [e.outcome for e in executed] == ["timeout"]


async def test_a_model_error_ends_the_turn_with_an_error() -> None:
    engine = card_engine([{"user": "hello", "say": "Hi."}])
    await open_call(engine)
    events = await collect(engine, "c1", Transcript("something else"))
    assert len(events) == 1
    assert events[0].reason == "error"  # type: ignore[union-attr]
    assert "expects user: 'hello'" in events[0].detail  # type: ignore[union-attr]


class LoopingModel:
    """Calls a tool forever."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        from voicegate.engine.llm.port import ToolCall

        yield ToolCall(f"call-{len(messages)}", "noop", {})


async def test_a_model_that_never_stops_calling_tools_is_stopped() -> None:
    engine = ProjectEngine(
        project_with({"noop": noop}), lambda call_id: LoopingModel(), InMemoryStore()
    )
    await open_call(engine)
    events = await collect(engine, "c1", Transcript("go"))
    assert sum(isinstance(event, ToolFinished) for event in events) == MAX_MODEL_STEPS
    assert events[-1].reason == "error"  # type: ignore[union-attr]


class FailingModel:
    """Fails at once."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        raise LLMError("provider unavailable")
        yield TextDelta("")  # pragma: no cover - makes this an async generator


async def test_llm_errors_end_the_turn_without_raising() -> None:
    engine = ProjectEngine(project_with(), lambda call_id: FailingModel(), InMemoryStore())
    await open_call(engine)
    assert await collect(engine, "c1", Transcript("go")) == [
        TurnEnded("t1", "error", "provider unavailable")
    ]


@pytest.mark.parametrize(
    ("user", "text"),
    [
        (Transcript("  hello  "), "hello"),
        (Dtmf("12#"), "/dtmf 12#"),
        (ButtonPress("plan_gold", "Gold"), "plan_gold"),
        (SilenceTimeout(), "/silence_timeout"),
    ],
)
async def test_every_kind_of_user_input_reaches_the_model_as_text(
    user: Transcript | Dtmf | ButtonPress | SilenceTimeout, text: str
) -> None:
    recorder: list[RecordingLLM] = []
    engine = card_engine([{"say": "Ok."}], recorder=recorder)
    await open_call(engine)
    await collect(engine, "c1", user)
    assert recorder[0].requests[0][-1] == UserMessage(text)


async def test_calls_are_independent() -> None:
    engine = card_engine([PICK])
    await open_call(engine, "a")
    await open_call(engine, "b")
    await collect(engine, "a", Transcript("card"))
    events_b = await collect(engine, "b", Transcript("card"))
    assert events_b[1] == ToolStarted("t1", "call-1-1-1", "pick_card", {"owner": "Sam"})


async def test_seam_misuse_raises_engine_errors() -> None:
    engine = card_engine([{"say": "Hi."}])
    await engine.open(CallInfo("c1"))
    with pytest.raises(EngineError, match="already open"):
        await engine.open(CallInfo("c1"))
    with pytest.raises(EngineError, match="not open"):
        engine.turn("nope", Transcript("x"))
    with pytest.raises(EngineError, match="no turn"):
        await engine.heard("c1", "t9", "text", interrupted=False)
    await engine.close("c1")
    await engine.close("c1")  # closing twice is harmless
    with pytest.raises(EngineError, match="not open"):
        await engine.heard("c1", "t1", "text", interrupted=False)


@pytest.mark.parametrize(
    ("event", "record"),
    [
        (Say("t1", "Hi."), {"event": "say", "turn_id": "t1", "text": "Hi.", "source": "model"}),
        (
            ToolStarted("t1", "c", "pick", {"a": 1}),
            {
                "event": "tool_started",
                "turn_id": "t1",
                "call_id": "c",
                "name": "pick",
                "arguments": {"a": 1},
            },
        ),
        (
            ToolFinished("t1", "c", "pick", "timeout", {"error": "x"}),
            {
                "event": "tool_finished",
                "turn_id": "t1",
                "call_id": "c",
                "name": "pick",
                "outcome": "timeout",
                "result": {"error": "x"},
            },
        ),
        (
            ToolCancelled("t1", "c", "pick"),
            {"event": "tool_cancelled", "turn_id": "t1", "call_id": "c", "name": "pick"},
        ),
        (
            Buttons("t1", (Button(title="Yes", value="y"),)),
            {
                "event": "buttons",
                "turn_id": "t1",
                "buttons": [{"title": "Yes", "value": "y", "ref": None}],
            },
        ),
        (
            MemorySet("t1", "project.phone", "[set]"),
            {"event": "memory_set", "turn_id": "t1", "name": "project.phone", "value": "[set]"},
        ),
        (
            TurnEnded("t1", "completed"),
            {"event": "turn_ended", "turn_id": "t1", "reason": "completed"},
        ),
        (
            TurnEnded("t1", "error", "boom"),
            {"event": "turn_ended", "turn_id": "t1", "reason": "error", "detail": "boom"},
        ),
    ],
)
def test_event_records_use_the_timeline_names(event: TurnEvent, record: dict[str, object]) -> None:
    assert event_record(event) == record
    json.dumps(record)  # ready for a JSON line
