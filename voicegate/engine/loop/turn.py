"""One running turn: the session, the turn's event channel, and what happened in it so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from voicegate.engine.conditions import Condition, holds
from voicegate.engine.history import FlowEvent, FlowEventKind
from voicegate.engine.loop.dialogue import DialogueState
from voicegate.engine.loop.session import Session
from voicegate.engine.loop.stream import TurnChannel
from voicegate.engine.project.model import Skill


@dataclass
class Turn:
    """The turn being run: the session and channel, plus turn-local facts.

    ``searched`` is set once ``search_knowledge`` ran (the tool list collapses, contract §7.3);
    ``said`` holds the verbatim responses delivered so far; ``wait`` is set by anything that
    ends the turn waiting for the user (contract §7.6); ``model_calls`` counts model steps;
    ``offered`` names the tools of the latest model request (a call of any other is refused
    with this list, so the model reads what it may call); ``unspoken_results`` is set from a
    tool call whose result no response presented until the model's next request, which
    reads it (a ``complete_when`` that would move on without the model waits for that one);
    ``words`` is set when the turn's input is words for the model (not a ``set:`` tap, a
    silence timeout or ``/session_start``).
    """

    session: Session
    channel: TurnChannel
    searched: bool = False
    said: list[str] = field(default_factory=list)
    wait: bool = False
    model_calls: int = 0
    offered: tuple[str, ...] = ()
    unspoken_results: bool = False
    words: bool = False

    @property
    def words_unanswered(self) -> bool:
        """Whether the caller's words of this turn have not reached the model yet."""
        return self.words and self.model_calls == 0

    @property
    def turn_id(self) -> str:
        """The turn's id."""
        return self.channel.turn_id

    @property
    def dialogue(self) -> DialogueState:
        """The call's dialogue state."""
        return self.session.dialogue

    def holds(self, condition: Condition | None) -> bool:
        """Whether ``condition`` holds on current memory (None holds; errors fail closed)."""
        return condition is None or holds(condition, self.session.memory.value)

    def skill(self, skill_id: str) -> Skill:
        """A skill of the project."""
        return self.session.project.skills[skill_id]

    def record(
        self, kind: FlowEventKind, skill_id: str, block_id: str = "", step: str = ""
    ) -> None:
        """Add a skill or block lifecycle event to the tracker (contract §6.5)."""
        self.session.history.append(FlowEvent(self.turn_id, kind, skill_id, block_id, step))
