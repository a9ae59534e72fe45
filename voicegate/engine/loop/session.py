"""One open call: its memory, history, dialogue state, model port and running turn workers."""

from __future__ import annotations

import asyncio
import logging

from voicegate.engine.history import EventHistory, MemoryWritten
from voicegate.engine.llm.port import LLMPort
from voicegate.engine.loop.dialogue import DialogueState
from voicegate.engine.loop.messages import Conversation
from voicegate.engine.loop.stream import TurnChannel, TurnStream
from voicegate.engine.memory.fields import MemoryField
from voicegate.engine.memory.render import masked
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.memory.slice import MemorySlice, WriteObserver
from voicegate.engine.memory.state import MemoryState
from voicegate.engine.project.model import Project
from voicegate.engine.seam import CallInfo, MemorySet
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.context import ButtonCollector, ToolContext, ToolModelContext
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.engine.tools.turn_context import TurnContext

log = logging.getLogger(__name__)


class Session:
    """The engine's state for one call."""

    def __init__(
        self,
        call: CallInfo,
        project: Project,
        catalog: ToolCatalog,
        memory: MemoryState,
        llm: LLMPort,
        tool_loops: ToolLoops | None = None,
    ) -> None:
        self.call = call
        self.project = project
        self.catalog = catalog
        self.memory = memory
        self.llm = llm
        #: Where the project's ``@tool`` functions run (None: on the engine's own loop).
        self.tool_loops = tool_loops
        self.history = EventHistory()
        self.conversation = Conversation()
        self.dialogue = DialogueState()
        self.running: set[TurnStream] = set()
        self.turn_ids: set[str] = set()
        #: Speculative turns waiting to be confirmed, by turn id (loop/speculation.py).
        self.holds: dict[str, asyncio.Event] = {}
        #: Turns started so far; turn ids count on from here after a resume (issue 13).
        self.turns_started = 0
        #: Said at the start of the next turn: set when the call resumed on this node.
        self.resume_line: str | None = None
        # Tools see the same knowledge index search_knowledge reads (tools reference).
        self._model_context = ToolModelContext(project.llm_config, project.references)
        # current_turn_context().sender_id: the conversation the call's memory is kept under.
        self._turn_context = TurnContext(call.memory_key)

    @property
    def tool_timeout(self) -> float:
        """Seconds a local tool call may take (``agent.yml`` ``tool_timeout``)."""
        return self.project.agent.tool_timeout

    def next_turn_id(self) -> str:
        """A fresh turn id, unique within the call."""
        self.turns_started += 1
        turn_id = f"t{self.turns_started}"
        self.turn_ids.add(turn_id)
        return turn_id

    def tool_context(
        self,
        channel: TurnChannel,
        skill_id: str | None,
        *,
        hook: bool = False,
        buttons: ButtonCollector | None = None,
    ) -> ToolContext:
        """A fresh ``ToolContext`` for one invocation in ``channel``'s turn."""
        memory = MemorySlice(
            self.memory,
            skill_id,
            on_write=self.write_recorder(channel),
            skip_set_project_fields=hook,
        )
        return ToolContext(
            memory=memory,
            turn=channel,
            events=self.history.snapshot,
            model=self._model_context,
            buttons=buttons,
            turn_context=self._turn_context,
        )

    def write_recorder(self, channel: TurnChannel) -> WriteObserver:
        """Records each memory write in the history and as a MemorySet event of the turn."""

        def record(ref: FieldRef, value: object, declared: MemoryField) -> None:
            turn_id = channel.turn_id
            self.history.append(MemoryWritten(turn_id, ref.namespace, ref.entry, value))
            channel.emit(MemorySet(turn_id, ref.qualified, masked(value, declared)))

        return record

    @property
    def workers(self) -> set[asyncio.Task[None]]:
        """The tasks of turns still running (an interrupted turn may still be unwinding)."""
        return {stream.worker for stream in self.running if stream.worker is not None}

    async def settle(self, patience: float) -> None:
        """Cancel any turn still running and wait up to ``patience`` seconds for it to unwind."""
        workers = {worker for stream in list(self.running) if (worker := stream.interrupt())}
        if not workers:
            return
        _, pending = await asyncio.wait(workers, timeout=patience)
        for worker in pending:
            log.error("call %s: %s did not unwind after cancel", self.call.call_id, worker)
