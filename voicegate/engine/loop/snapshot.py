"""A call's resumable dialogue state as JSON, and back (issue 13).

What a call needs to go on on another node: the dialogue state (skill stack, block cursors,
pending confirmation, ``utter: when:`` truths), the event history (what the caller heard,
completed tool calls, flow events; the model's conversation is rebuilt from it) and the turn
counter, so turn ids stay unique. Memory is not here: it is written through to the store.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from voicegate.engine.history import (
    BotUttered,
    Event,
    FlowEvent,
    MemoryWritten,
    ToolExecuted,
    UserUttered,
)
from voicegate.engine.loop.dialogue import (
    BlockCursor,
    DialogueState,
    Parked,
    PendingConfirmation,
    SkillFrame,
)
from voicegate.errors import StoreError

#: Bumped when the layout changes; a state of another version is not resumed.
VERSION = 1

_EVENTS: dict[str, type[Event]] = {
    cls.__name__: cls for cls in (UserUttered, BotUttered, ToolExecuted, MemoryWritten, FlowEvent)
}


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything of a session that must survive the loss of its node."""

    dialogue: DialogueState
    history: list[Event]
    turns_started: int


def dumps(snapshot: Snapshot) -> str:
    """The snapshot as JSON text (values the tools produced are JSON already)."""
    record = {
        "version": VERSION,
        "turns_started": snapshot.turns_started,
        "dialogue": _dialogue_record(snapshot.dialogue),
        "history": [{"type": type(e).__name__, **_fields(e)} for e in snapshot.history],
    }
    return json.dumps(record, default=str)


def loads(text: str) -> Snapshot:
    """A snapshot from :func:`dumps`'s text; ``StoreError`` when it cannot be read."""
    try:
        record = json.loads(text)
        if record.get("version") != VERSION:
            raise StoreError(f"saved call state has version {record.get('version')!r}")
        history = [_event(item) for item in record["history"]]
        return Snapshot(_dialogue(record["dialogue"]), history, int(record["turns_started"]))
    except (ValueError, KeyError, TypeError) as error:
        raise StoreError(f"saved call state cannot be read: {error}") from None


def _fields(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


def _event(item: dict[str, Any]) -> Event:
    cls = _EVENTS[item.pop("type")]
    return cls(**item)


def _dialogue_record(state: DialogueState) -> dict[str, Any]:
    pending = state.pending
    waiting = None if pending is None else _fields(pending) | {"arguments": dict(pending.arguments)}
    return {
        "stack": [_frame_record(frame) for frame in state.stack],
        "pending": waiting,
        "step_decision": state.step_decision,
        "resume_offered": state.resume_offered,
        "utter_truth": [[skill, name, truth] for (skill, name), truth in state.utter_truth.items()],
        "utter_fired": sorted([skill, name] for skill, name in state.utter_fired),
    }


def _frame_record(frame: SkillFrame) -> dict[str, Any]:
    return {
        "skill_id": frame.skill_id,
        "blocks": [_fields(cursor) for cursor in frame.blocks],
        "parked": None if frame.parked is None else frame.parked.value,
    }


def _dialogue(record: dict[str, Any]) -> DialogueState:
    pending = record["pending"]
    return DialogueState(
        stack=[_frame(frame) for frame in record["stack"]],
        pending=None if pending is None else PendingConfirmation(**pending),
        step_decision=record["step_decision"],
        resume_offered=bool(record["resume_offered"]),
        utter_truth={(skill, name): bool(truth) for skill, name, truth in record["utter_truth"]},
        # Absent from snapshots written before the key existed.
        utter_fired={(skill, name) for skill, name in record.get("utter_fired", [])},
    )


def _frame(record: dict[str, Any]) -> SkillFrame:
    parked = record["parked"]
    return SkillFrame(
        skill_id=record["skill_id"],
        blocks=[BlockCursor(**cursor) for cursor in record["blocks"]],
        parked=None if parked is None else Parked(parked),
    )
