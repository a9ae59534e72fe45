"""``ProjectEngine``: runs an agent project behind the streaming turn interface (design §4)."""

from __future__ import annotations

import asyncio
import functools
import logging

from voicegate.engine.history import BotUttered, MemoryWritten
from voicegate.engine.llm.port import LLMFactory
from voicegate.engine.loop.flows import SESSION_START
from voicegate.engine.loop.persistence import (
    Checkpoint,
    CheckpointedStream,
    ResumeOptions,
    claim,
    resumable_turn,
)
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.speculation import speculative_turn
from voicegate.engine.loop.stream import DEFAULT_UNWIND_GRACE, TurnBody, TurnStream
from voicegate.engine.memory.render import mask_pii_in_text
from voicegate.engine.memory.state import MemoryState
from voicegate.engine.memory.store import MemoryStore
from voicegate.engine.project.model import Project
from voicegate.engine.seam import CallInfo, Transcript, UserInput
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.errors import EngineError, StoreError

log = logging.getLogger(__name__)

#: How long ``close`` waits for a turn that does not unwind after being cancelled.
CLOSE_PATIENCE = 5.0


class ProjectEngine:
    """A dialogue engine for one loaded project; serves many calls at once."""

    def __init__(
        self,
        project: Project,
        llm: LLMFactory,
        store: MemoryStore,
        *,
        unwind_grace: float = DEFAULT_UNWIND_GRACE,
        catalog: ToolCatalog | None = None,
        tool_loops: ToolLoops | None = None,
        resume: ResumeOptions | None = None,
    ) -> None:
        self.project = project
        self._llm = llm
        self._store = store
        self._grace = unwind_grace
        # A catalog built outside (the MCP runtime adds each skill's imported remote tools)
        # replaces the project's own local-tools catalog.
        self._catalog = catalog if catalog is not None else project.tool_catalog()
        self._sessions: dict[str, Session] = {}
        # With ``tool_loops`` (the gateway always passes them), project tools run on a tool
        # loop thread so one that blocks cannot stall the engine (issue 12). Without, they run
        # on the caller's loop: handy for embedding and for tests that share asyncio objects.
        self._tool_loops = tool_loops
        # With ``resume``, each call's dialogue state is checkpointed and a call opened again
        # with the same id (on this node or another) goes on where it stopped (issue 13).
        self._resume = resume
        self._resume_line = "" if resume is None else resume.line
        self._checkpoints: dict[str, Checkpoint] = {}

    @property
    def catalog(self) -> ToolCatalog:
        """Every tool the engine can dispatch (local, shared and MCP)."""
        return self._catalog

    def speaks_first(self, call_id: str) -> bool:
        """Whether a call opens with ``/session_start``: the project overrides that skill.

        Contract §5.7: the bundled ``default_session_start`` says nothing; a project that
        replaces it (to greet, or to load a profile first) has the channel send
        ``/session_start``. A voice call's session starts when it connects.
        """
        return SESSION_START in self.project.skills

    async def open(self, call: CallInfo) -> None:
        """Start a session: load its memory, resume its saved state or seed it, claim it."""
        if call.call_id in self._sessions:
            raise EngineError(f"call {call.call_id!r} is already open")
        store: MemoryStore = self._store
        claimed = None
        if self._resume is not None:
            # Claimed before memory is touched: every write of this call carries its epoch.
            claimed = claim(self._resume.store, call.memory_key)
            store = claimed.memory(self._store)
        memory = MemoryState(self.project.memory, store, call.memory_key)
        session = Session(
            call, self.project, self._catalog, memory, self._llm(call.call_id), self._tool_loops
        )
        checkpoint = None if claimed is None else claimed.checkpoint(session, self._resume_line)
        for ref in memory.start_session(call.metadata):
            session.history.append(MemoryWritten("", ref.namespace, ref.entry, memory.value(ref)))
        if checkpoint is not None:
            checkpoint.save()
            self._checkpoints[call.call_id] = checkpoint
        self._sessions[call.call_id] = session

    def turn(self, call_id: str, user: UserInput) -> TurnStream | CheckpointedStream:
        """Run one turn; a turn still running for the call is cancelled before this one starts."""
        session = self.session(call_id)
        turn_id = session.next_turn_id()
        body: TurnBody = functools.partial(resumable_turn, session, user)
        hold = None
        if isinstance(user, Transcript) and user.speculative:
            hold = session.holds[turn_id] = asyncio.Event()
            body = functools.partial(speculative_turn, session, hold, body)
        stream = TurnStream(
            turn_id,
            body,
            running=session.running,
            before_start=functools.partial(session.settle, self._grace),
            unwind_grace=self._grace,
            hold=hold,
        )
        checkpoint = self._checkpoints.get(call_id)
        return stream if checkpoint is None else CheckpointedStream(stream, checkpoint.save)

    async def heard(self, call_id: str, turn_id: str, heard_text: str, interrupted: bool) -> None:
        """Record what the caller heard of a turn; only this bot text enters the history."""
        session = self.session(call_id)
        if turn_id not in session.turn_ids:
            raise EngineError(f"call {call_id!r} has no turn {turn_id!r}")
        if heard_text.strip():
            text = mask_pii_in_text(heard_text.strip(), session.memory)
            session.history.append(BotUttered(turn_id, text, interrupted))
            if (checkpoint := self._checkpoints.get(call_id)) is not None:
                checkpoint.save()

    async def confirm(self, call_id: str, turn_id: str) -> None:
        """A speculative turn may go on: the caller's turn has ended (no-op for other turns)."""
        hold = self.session(call_id).holds.get(turn_id)
        if hold is not None:
            hold.set()

    async def close(self, call_id: str) -> None:
        """End a session, cancelling a turn that still runs; its memory stays in the store."""
        session = self._sessions.pop(call_id, None)
        checkpoint = self._checkpoints.pop(call_id, None)
        if session is not None:
            await session.settle(CLOSE_PATIENCE)
        if checkpoint is not None:
            try:
                checkpoint.save()  # kept until its TTL: the stream may reconnect elsewhere
            except StoreError as error:  # stale, or the store failed: the call is over anyway
                log.warning("call %s: final state not saved: %s", call_id, error)

    def session(self, call_id: str) -> Session:
        """The open session of a call (for tests and the chat command's inspection)."""
        try:
            return self._sessions[call_id]
        except KeyError:
            raise EngineError(f"call {call_id!r} is not open") from None
