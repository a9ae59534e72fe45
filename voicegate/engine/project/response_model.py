"""``responses.yml``: named responses with variants, conditions and buttons (contract §2.7)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.conditions import Condition
from voicegate.engine.memory.schema import FieldRef


@dataclass(frozen=True, slots=True)
class Placeholder:
    """``{session.<ns>.<entry>}`` (``ref`` set) or bare ``{entry}`` in a template text."""

    text: str
    ref: FieldRef | None = None
    entry: str | None = None


@dataclass(frozen=True, slots=True)
class SetPayload:
    """A ``set:session.<ns>.<entry>=<value>`` button payload; ``value`` is already coerced."""

    ref: FieldRef
    raw_value: str
    value: Any


@dataclass(frozen=True, slots=True)
class StaticButton:
    """A button written in the file: its title, payload (default: the title) and ``set:`` form."""

    title: str
    payload: str | None = None
    set_payload: SetPayload | None = None
    placeholders: tuple[Placeholder, ...] = ()


@dataclass(frozen=True, slots=True)
class ButtonSource:
    """``buttons: {source: <tool>}``: a local tool supplies the buttons at delivery time."""

    tool: str


#: Response metadata that hangs up once the response was heard (voicegate's hang-up action).
END_CALL = "end_call"
#: Response metadata naming where to transfer the call once the response was heard.
TRANSFER_TO = "transfer_to"
#: Placeholders the engine fills in its own responses, also when a project rewords one
#: (contract §5.7): the resume offer names the paused skill.
ENGINE_PLACEHOLDERS: dict[str, frozenset[str]] = {
    "utter_ask_wants_to_continue": frozenset({"skill"}),
}


@dataclass(frozen=True, slots=True)
class Variant:
    """One variant: text, optional condition, metadata and buttons."""

    text: str
    condition: Condition | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    buttons: tuple[StaticButton, ...] | ButtonSource | None = None
    placeholders: tuple[Placeholder, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Response:
    """A named response and where it was declared (``owner`` is a skill id, None for root)."""

    name: str
    variants: tuple[Variant, ...]
    path: str = ""
    line: int | None = None
    owner: str | None = None
