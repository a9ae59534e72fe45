"""Helpers of the execution-loop tests: projects, a scripted conversation, what it produced."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

from voicegate.engine.history import Event, FlowEvent, ToolExecuted
from voicegate.engine.llm.port import LLMPort, Message, StreamItem, SystemMessage
from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.model import Project
from voicegate.engine.seam import (
    Buttons,
    CallInfo,
    Say,
    ToolFinished,
    ToolStarted,
    Transcript,
    TurnEnded,
    TurnEvent,
    UserInput,
)
from voicegate.engine.tools.schema import ToolSpec

ROOT = Path(__file__).resolve().parents[2]
CARD_SERVICES = ROOT / "fixtures" / "projects" / "card_services"
#: The caller whose date of birth is 1990-04-01 in card_services' pretend bank.
ADA_PHONE = "+15550100"

AGENT = "agent:\n  persona: You help bank customers.\n"
TOOL_HEADER = (
    "import asyncio\n\n"
    "from rasa.mantle.tools.decorator import ToolContext, tool\n"
    "from rasa.mantle.tools.result import ToolResult\n\n\n"
)


def write_project(root: Path, files: dict[str, str]) -> Path:
    """Write a project (``agent.yml`` added unless given) and return its folder."""
    for relative, text in {"agent.yml": AGENT, **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def skill_md(front: str, body: str, *, name: str = "A skill", description: str = "") -> str:
    """A skill.md with ``name``/``description`` plus ``front`` frontmatter lines."""
    about = description or f"Does what {name} does."
    return f"---\nname: {name}\ndescription: {about}\n{front}---\n{body}"


class Recorder:
    """Wraps a model; keeps every request's messages and offered tools."""

    def __init__(self, inner: LLMPort) -> None:
        self.inner = inner
        self.requests: list[list[Message]] = []
        self.tool_log: list[list[ToolSpec]] = []

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        self.requests.append(list(messages))
        self.tool_log.append(list(tools))
        return self.inner.stream(messages, tools)


class Chat:
    """One call on an engine whose model plays ``turns`` (docs/scripted-llm.md)."""

    def __init__(
        self,
        project: Project | Path,
        turns: list[dict[str, Any]],
        *,
        llm: LLMPort | None = None,
        **metadata: Any,
    ) -> None:
        self.project = project if isinstance(project, Project) else load_project(project)
        model = llm or ScriptedLLM(parse_script({"turns": turns}, "<test>"))
        self.model = Recorder(model)
        self.engine = ProjectEngine(self.project, lambda call_id: self.model, InMemoryStore())
        self.metadata = metadata
        self.turns: list[list[TurnEvent]] = []

    async def open(self) -> Chat:
        """Open the call."""
        await self.engine.open(CallInfo("c1", conversation_id="conv", metadata=self.metadata))
        return self

    async def send(self, user: UserInput | str) -> list[TurnEvent]:
        """Run one turn to its end; the caller hears everything that was said."""
        entered = Transcript(user) if isinstance(user, str) else user
        events: list[TurnEvent] = []
        async with self.engine.turn("c1", entered) as stream:
            async for event in stream:
                events.append(event)
        self.turns.append(events)
        heard = " ".join(said(events))
        await self.engine.heard("c1", events[-1].turn_id, heard, interrupted=False)
        return events

    @property
    def session(self) -> Any:
        """The call's engine session."""
        return self.engine.session("c1")

    def memory(self, qualified: str) -> Any:
        """The value of ``<namespace>.<entry>``."""
        namespace, entry = qualified.split(".")
        return self.session.memory.value(FieldRef(namespace, entry))

    def history(self) -> list[Event]:
        """The tracker events so far."""
        return list(self.session.history.snapshot())

    def flow_events(self) -> list[tuple[str, str, str]]:
        """``(kind, skill, block)`` of every skill/block lifecycle event."""
        flows = [event for event in self.history() if isinstance(event, FlowEvent)]
        return [(event.kind, event.skill_id, event.block_id) for event in flows]

    def results(self, name: str) -> list[Any]:
        """What the model read back from each recorded call of ``name``."""
        return [e.result for e in self.history() if isinstance(e, ToolExecuted) and e.name == name]

    @property
    def stack(self) -> list[str]:
        """Skill ids on the stack, bottom first."""
        return [frame.skill_id for frame in self.session.dialogue.stack]

    def tools(self, request: int = -1) -> list[str]:
        """Tool names offered on a model request (the last by default)."""
        return [spec.name for spec in self.model.tool_log[request]]

    def tool_spec(self, name: str, request: int = -1) -> ToolSpec:
        """One offered tool's schema."""
        return next(spec for spec in self.model.tool_log[request] if spec.name == name)

    def prompt(self, request: int = -1) -> str:
        """The system prompt of a model request (the last by default)."""
        first = self.model.requests[request][0]
        assert isinstance(first, SystemMessage)
        return first.text

    @property
    def requests(self) -> int:
        """How many model requests were made."""
        return len(self.model.requests)


def said(events: list[TurnEvent]) -> list[str]:
    """The texts spoken in a turn."""
    return [event.text for event in events if isinstance(event, Say)]


def spoken(events: list[TurnEvent], source: str) -> list[str]:
    """The texts of one source (``model``, ``tool``, ``response``)."""
    return [event.text for event in events if isinstance(event, Say) and event.source == source]


def started(events: list[TurnEvent]) -> list[str]:
    """Names of the tools that started in a turn."""
    return [event.name for event in events if isinstance(event, ToolStarted)]


def finished(events: list[TurnEvent]) -> list[tuple[str, str]]:
    """``(name, outcome)`` of the tools that finished in a turn."""
    return [(event.name, event.outcome) for event in events if isinstance(event, ToolFinished)]


def buttons(events: list[TurnEvent]) -> list[list[str]]:
    """Button titles offered in a turn."""
    return [[b.title for b in event.buttons] for event in events if isinstance(event, Buttons)]


def ended(events: list[TurnEvent]) -> TurnEnded:
    """The turn's last event."""
    last = events[-1]
    assert isinstance(last, TurnEnded)
    return last
