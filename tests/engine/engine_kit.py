"""Helpers of the engine tests: memory schemas, fake turns, engines built in code."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.history import EventHistory
from voicegate.engine.llm.port import LLMPort, Message, StreamItem
from voicegate.engine.llm.script import Script, parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.fields import FieldType, MemoryField, SkillMemory, Visibility
from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.memory.slice import MemorySlice
from voicegate.engine.memory.state import MemoryState
from voicegate.engine.memory.store import InMemoryStore, MemoryStore
from voicegate.engine.project.model import AgentSettings, Project, Skill
from voicegate.engine.seam import CallInfo, TurnEvent, UserInput
from voicegate.engine.tools.context import ButtonCollector, ToolContext, ToolModelContext
from voicegate.engine.tools.decorator import Tool
from voicegate.engine.tools.schema import ToolSpec


def field_of(name: str, kind: FieldType = FieldType.ANY, **options: Any) -> MemoryField:
    """A declared field."""
    return MemoryField(name=name, type=kind, **options)


def sample_schema() -> MemorySchema:
    """Project fields plus two skills, ``cards`` (active in most tests) and ``profile``."""
    project = {
        "authenticated": field_of("authenticated", FieldType.BOOL),
        "customer_id": field_of("customer_id", FieldType.TEXT),
        "visits": field_of("visits", FieldType.INT, mutable=True),
        "phone": field_of("phone", FieldType.TEXT, seed=True, pii=True),
        "selected_card_id": field_of("selected_card_id", FieldType.TEXT),
    }
    cards = SkillMemory(
        "cards",
        {
            "selected_card_id": field_of("selected_card_id", FieldType.TEXT),
            "card_list": field_of("card_list", FieldType.LIST),
            "pin_attempts": field_of("pin_attempts", FieldType.INT, visibility=Visibility.PRIVATE),
            "color": field_of("color", FieldType.CATEGORICAL, enum_values=("red", "blue")),
        },
    )
    profile = SkillMemory(
        "profile",
        {
            "nickname": field_of("nickname", FieldType.TEXT),
            "secret": field_of("secret", FieldType.TEXT, visibility=Visibility.PRIVATE),
        },
    )
    return MemorySchema(project, {"cards": cards, "profile": profile})


class FakeTurn:
    """A turn a tool can see: records what it says, can be cancelled."""

    def __init__(self) -> None:
        self.cancelled = False
        self.said: list[str] = []

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled

    def say(self, text: str) -> None:
        if not self.cancelled:
            self.said.append(text)


@dataclass
class ContextKit:
    """A ToolContext and the parts behind it."""

    context: ToolContext
    turn: FakeTurn
    state: MemoryState
    history: EventHistory
    writes: list[tuple[str, Any]] = field(default_factory=list)


def context_builder(schema: MemorySchema) -> Callable[..., ContextKit]:
    """Build ToolContexts over an in-memory store."""

    def build(
        skill: str | None = "cards",
        *,
        buttons: ButtonCollector | None = None,
        llm_config: Mapping[str, Any] | None = None,
        store: MemoryStore | None = None,
    ) -> ContextKit:
        state = MemoryState(schema, store or InMemoryStore(), "conv")
        history = EventHistory()
        turn = FakeTurn()
        writes: list[tuple[str, Any]] = []
        memory = MemorySlice(
            state, skill, on_write=lambda ref, value, _: writes.append((ref.qualified, value))
        )
        context = ToolContext(
            memory=memory,
            turn=turn,
            events=history.snapshot,
            model=ToolModelContext(llm_config or {}, None),
            buttons=buttons,
        )
        return ContextKit(context, turn, state, history, writes)

    return build


def project_with(
    tools: Mapping[str, Tool] | None = None,
    *,
    schema: MemorySchema | None = None,
    skill: str = "cards",
    tool_timeout: float = 10.0,
) -> Project:
    """A project built in code whose skill ``skill`` owns ``tools``."""
    memory = schema or MemorySchema()
    skills = {skill: Skill(skill, dict(tools or {}))}
    for other in memory.skills:
        skills.setdefault(other, Skill(other, {}))
    return Project(
        agent=AgentSettings(persona="Test persona.", tool_timeout=tool_timeout),
        memory=memory,
        skills=skills,
        llm_config={"llm": {"model_group": "main"}},
    )


def script_of(text_or_data: Any) -> Script:
    """A script from a Python structure."""
    return parse_script(text_or_data, "<test>")


class RecordingLLM:
    """Wraps a model and keeps every request it got."""

    def __init__(self, inner: LLMPort) -> None:
        self.inner = inner
        self.requests: list[list[Message]] = []
        self.tools: list[ToolSpec] = []

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        self.requests.append(list(messages))
        self.tools = list(tools)
        return self.inner.stream(messages, tools)


def engine_for(
    project: Project,
    script: Script,
    store: MemoryStore | None = None,
    *,
    recorder: list[RecordingLLM] | None = None,
    **options: Any,
) -> ProjectEngine:
    """An engine with a scripted model; pass ``recorder`` to keep each call's requests."""

    def make(call_id: str) -> LLMPort:
        llm = RecordingLLM(ScriptedLLM(script))
        if recorder is not None:
            recorder.append(llm)
        return llm

    return ProjectEngine(project, make, store or InMemoryStore(), **options)


async def collect(engine: ProjectEngine, call_id: str, user: UserInput) -> list[TurnEvent]:
    """Run a turn to its end and return its events."""
    events: list[TurnEvent] = []
    async with engine.turn(call_id, user) as stream:
        async for event in stream:
            events.append(event)
    return events


async def open_call(engine: ProjectEngine, call_id: str = "c1", **metadata: Any) -> CallInfo:
    """Open a call on ``engine``."""
    call = CallInfo(call_id, conversation_id=f"conv-{call_id}", metadata=metadata)
    await engine.open(call)
    return call


async def settle_loop() -> None:
    """Let every ready callback run a few times."""
    for _ in range(5):
        await asyncio.sleep(0)
