"""Which framework tools a model call is offered, and their schemas (contract §7.3).

| Tool | Offered when |
| - | - |
| ``activate`` | at least one flow is startable (or a paused skill is offered back) |
| ``complete_skill`` | a skill's prose is in control (never inside an ordered block, never for a
  blocks-only skill) |
| ``cancel_skill`` | a skill is active, inside blocks too; or a resume is offered (to decline) |
| ``set_fields`` | the active skill has settable entries (``llm_settable`` or collect-owned) |
| ``correct`` | one of those entries already holds a value |
| ``resolve_tool_confirmation`` | a tool confirmation is pending |
| ``search_knowledge`` | the project has a knowledge index |
| ``cannot_help`` | immediately without a knowledge index; with one, after a search this turn |
| ``listen`` | except on guided-collect calls, post-search answer calls and while a
  confirmation is pending |

Once ``search_knowledge`` ran in the turn the list collapses to ``activate``,
``search_knowledge`` and ``cannot_help`` (plus ``resolve_tool_confirmation`` when pending).

Argument shapes are voicegate's (§11 question 10): ``activate(flow_id)`` with the startable flows
as an enum and their descriptions in the tool description; ``set_fields`` takes one property
per settable field, typed from ``memory.yml``; ``correct(field, value)``;
``resolve_tool_confirmation(confirmed)``; ``search_knowledge(query)``; ``cannot_help(in_domain)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voicegate.engine.loop.flows import Flow, skill_flows, startable
from voicegate.engine.loop.toolbox import is_container, settable_fields
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.fields import FieldType, MemoryField
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.skill_model import BodyShape
from voicegate.engine.project.step_model import CollectStep
from voicegate.engine.tools.schema import ToolSpec

ACTIVATE = "activate"
COMPLETE_SKILL = "complete_skill"
CANCEL_SKILL = "cancel_skill"
SET_FIELDS = "set_fields"
CORRECT = "correct"
RESOLVE_CONFIRMATION = "resolve_tool_confirmation"
SEARCH_KNOWLEDGE = "search_knowledge"
CANNOT_HELP = "cannot_help"
LISTEN = "listen"


@dataclass(frozen=True, slots=True)
class Offer:
    """The framework tools of one model call, and the facts they were chosen from."""

    specs: tuple[ToolSpec, ...]
    flows: tuple[Flow, ...]
    guided_collect: bool

    @property
    def names(self) -> frozenset[str]:
        """The offered tool names."""
        return frozenset(spec.name for spec in self.specs)


def framework_offer(turn: Turn) -> Offer:
    """The framework tools offered on the next model call."""
    flows = tuple(activatable(turn))
    pending = turn.dialogue.pending is not None
    guided = guided_collect(turn)
    specs: list[ToolSpec] = []
    if flows:
        specs.append(activate_spec(flows))
    if not turn.searched:
        specs += _skill_tools(turn)
    if pending:
        specs.append(_spec(RESOLVE_CONFIRMATION, _RESOLVE, {"confirmed": _BOOL}, ["confirmed"]))
    knowledge = turn.session.project.references is not None
    if knowledge:
        specs.append(_spec(SEARCH_KNOWLEDGE, _SEARCH, {"query": _STRING}, ["query"]))
    if not knowledge or turn.searched:
        specs.append(_spec(CANNOT_HELP, _CANNOT_HELP, {"in_domain": _BOOL}, ["in_domain"]))
    if not (turn.searched or pending or guided):
        specs.append(_spec(LISTEN, _LISTEN, {}, []))
    return Offer(tuple(specs), flows, guided)


def activatable(turn: Turn) -> list[Flow]:
    """Startable flows, plus the paused skill while its resume is offered."""
    flows = startable(turn)
    top = turn.dialogue.top
    if turn.dialogue.resume_offered and top is not None:
        known = {flow.flow_id for flow in flows}
        flows += [
            flow for flow in skill_flows(turn.skill(top.skill_id)) if flow.flow_id not in known
        ]
    return flows


def guided_collect(turn: Turn) -> bool:
    """Whether the running block waits on a collect step that asked (a guided-collect call)."""
    frame = turn.dialogue.active
    cursor = frame.cursor if frame is not None else None
    if frame is None or cursor is None or not cursor.engaged:
        return False
    steps = turn.skill(frame.skill_id).body.blocks[cursor.block_id].steps
    return cursor.index < len(steps) and isinstance(steps[cursor.index], CollectStep)


def _skill_tools(turn: Turn) -> list[ToolSpec]:
    dialogue = turn.dialogue
    frame = dialogue.active
    specs = []
    if frame is not None and prose_in_control(turn):
        specs.append(_spec(COMPLETE_SKILL, _COMPLETE, {}, []))
    if frame is not None or dialogue.resume_offered:
        specs.append(_spec(CANCEL_SKILL, _CANCEL, {}, []))
    if frame is None:
        return specs
    settable = settable_fields(turn.session, frame.skill_id)
    if settable:
        specs.append(set_fields_spec(turn, settable))
    correctable = [ref for ref in settable if turn.session.memory.value(ref) is not None]
    if correctable:
        specs.append(correct_spec(correctable))
    return specs


def prose_in_control(turn: Turn) -> bool:
    """Whether the active skill's prose runs (so ``complete_skill`` may be offered)."""
    frame = turn.dialogue.active
    if frame is None or frame.cursor is not None:
        return False
    skill = turn.skill(frame.skill_id)
    return skill.body.shape is not BodyShape.BLOCKS and not is_container(skill)


def activate_spec(flows: tuple[Flow, ...]) -> ToolSpec:
    """``activate`` with the startable flows as an enum and a line per flow."""
    catalogue = "\n".join(f"- {flow.flow_id}: {flow.description}".rstrip() for flow in flows)
    flow_id = {"type": "string", "enum": [flow.flow_id for flow in flows]}
    return _spec(ACTIVATE, f"{_ACTIVATE}\n{catalogue}", {"flow_id": flow_id}, ["flow_id"])


def set_fields_spec(turn: Turn, settable: list[FieldRef]) -> ToolSpec:
    """``set_fields`` with one optional property per settable field."""
    properties = {}
    for ref in settable:
        declared = turn.session.memory.schema.field(ref)
        if declared is not None:
            properties[ref.entry] = field_schema(declared)
    return _spec(SET_FIELDS, _SET_FIELDS, properties, [])


def correct_spec(correctable: list[FieldRef]) -> ToolSpec:
    """``correct`` naming the fields that hold a value."""
    field = {"type": "string", "enum": [ref.entry for ref in correctable]}
    value = {"description": "The corrected value, in the field's type."}
    return _spec(CORRECT, _CORRECT, {"field": field, "value": value}, ["field", "value"])


def field_schema(declared: MemoryField) -> dict[str, Any]:
    """The JSON schema of a memory field for the model (type, enum, description)."""
    schema: dict[str, Any] = dict(_FIELD_TYPES.get(declared.type, {}))
    if declared.type is FieldType.CATEGORICAL and declared.enum_values:
        schema = {"enum": list(declared.enum_values)}
    if declared.description:
        schema["description"] = declared.description
    return schema


def _spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return ToolSpec(name, description, parameters)


_STRING = {"type": "string"}
_BOOL = {"type": "boolean"}
_FIELD_TYPES: dict[FieldType, dict[str, Any]] = {
    FieldType.TEXT: {"type": "string"},
    FieldType.BOOL: {"type": "boolean"},
    FieldType.INT: {"type": "integer"},
    FieldType.FLOAT: {"type": "number"},
    FieldType.LIST: {"type": "array"},
}

_ACTIVATE = "Start or switch to one of these flows (or resume a paused one):"
_COMPLETE = "Mark the active skill finished once the user is done with its topic."
_CANCEL = "Abandon the active skill (or decline resuming a paused one)."
_SET_FIELDS = "Record one or more values the user gave, in a single call."
_CORRECT = "Change a value the user gave earlier and now corrects."
_RESOLVE = "Record whether the user approved the tool call waiting for confirmation."
_SEARCH = "Search the knowledge base for information that answers the user."
_CANNOT_HELP = (
    "Politely decline a request this agent cannot serve; in_domain tells whether it is "
    "related to what the agent does."
)
_LISTEN = "Stay silent and wait for the user (only when there is nothing to say)."
