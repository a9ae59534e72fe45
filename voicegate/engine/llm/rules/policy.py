"""The rules: what the orchestrator does with one request (see docs/rules-llm.md).

On a user's turn, in order: answer a pending confirmation (yes/no); answer a resume offer;
with no skill active, route by lexical similarity (else greet, say goodbye, search the
knowledge base or decline); with a skill active, record values read from the utterance
(``set_fields``), switch skills when the utterance clearly names another one, call a tool the
skill's prose names once its required arguments are known, else ask for what is missing.

After tool results in the same turn: go on with the work (the values the utterance gave for
the newly activated skill, the next tool), read out a knowledge snippet, and once a tool
succeeded with nothing left to do, finish the skill (``complete_skill``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.llm.rules.extract import (
    content_stems,
    value_for,
    wants_identifier,
    words,
    yes_or_no,
)
from voicegate.engine.llm.rules.reading import CallRecord, Request
from voicegate.engine.llm.rules.routing import best_flow, flow_scores
from voicegate.engine.llm.rules.speech import Speech
from voicegate.engine.tools.reserved import FRAMEWORK_TOOL_NAMES
from voicegate.engine.tools.schema import ToolSpec

#: The weight of shared topic words a skill switch needs (one word naming a single flow of
#: three weighs log(1 + 3) = 1.39).
SWITCH_SCORE = 1.0
#: Characters of a knowledge snippet read out.
SNIPPET_CHARS = 280

_GREETINGS = frozenset({"hi", "hello", "hey", "morning", "evening", "afternoon"})
_GOODBYES = frozenset({"bye", "goodbye", "that's all", "nothing else", "no thanks", "thank you"})
_MASKED = "[set]"


@dataclass
class Move:
    """What the orchestrator answers: text, then tool calls."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _call(name: str, **arguments: Any) -> Move:
    return Move(calls=[(name, arguments)])


class Policy:
    """Decides each model step from the request alone."""

    def __init__(self, speech: Speech) -> None:
        self.speech = speech

    def decide(self, request: Request) -> Move:
        """The next step."""
        if request.continuation:
            return self._after_tools(request)
        return self._on_user(request)

    # -- a new user turn ------------------------------------------------------------------

    def _on_user(self, r: Request) -> Move:
        answer = yes_or_no(r.user)
        if "resolve_tool_confirmation" in r.tools:
            if answer is None:
                return self._say(r, "utter_ask_yes_no")
            return _call("resolve_tool_confirmation", confirmed=answer)
        paused = r.paused_skill
        if paused is not None and answer is True:
            return _call("activate", flow_id=paused)
        if paused is not None and answer is False and "cancel_skill" in r.tools:
            return _call("cancel_skill")
        if r.active_skill is None:
            route = best_flow(r.user, r.flows()) if "activate" in r.tools else None
            if route is not None:
                return _call("activate", flow_id=route[0])
            return self._without_skill(r)
        return self._work(r, switch=True)

    def _without_skill(self, r: Request) -> Move:
        tokens = set(words(r.user))
        lowered = " ".join(words(r.user))
        if tokens & _GREETINGS and not content_stems(r.user):
            return self._say(r, "utter_greet")
        if any(phrase in lowered for phrase in _GOODBYES) or yes_or_no(r.user) is False:
            return self._say(r, "utter_goodbye")
        if "search_knowledge" in r.tools and not r.called("search_knowledge"):
            return _call("search_knowledge", query=r.user)
        if "cannot_help" in r.tools:
            return _call("cannot_help", in_domain=False)
        return self._say(r, "utter_ask_rephrase")

    def _work(self, r: Request, *, switch: bool) -> Move:
        values = self._values(r)
        if values:
            return _call("set_fields", **values)
        if switch:
            other = self._other_skill(r)
            if other is not None:
                return _call("activate", flow_id=other)
        move = self._tool_call(r)
        return move if move is not None else self._ask_or_finish(r)

    # -- after tool results in this turn ----------------------------------------------------

    def _after_tools(self, r: Request) -> Move:
        last = r.this_turn[-1]
        name, result = last.call.name, last.result
        if name in ("activate", "set_fields", "correct"):
            if _failed(result):
                return self._say(r, "utter_ask_rephrase")
            if name == "set_fields":
                entered = self._block_jump(r)
                if entered is not None:
                    return entered
            return self._work(r, switch=False) if r.active_skill else Move()
        if name == "search_knowledge":
            return self._answer_from(r, result)
        if name == "resolve_tool_confirmation":
            return self._after_skill_tool(r, result.get("result") if _confirmed(result) else None)
        if name in FRAMEWORK_TOOL_NAMES:
            return Move()
        return self._after_skill_tool(r, result)

    def _after_skill_tool(self, r: Request, result: Any) -> Move:
        if isinstance(result, Mapping) and result.get("status") == "awaiting_confirmation":
            return Move("Shall I go ahead?")
        if result is None or _failed(result):
            return Move() if r.said_this_turn else self._say(r, "utter_failed")
        move = self._tool_call(r)
        if move is not None:
            return move
        text = "" if r.said_this_turn else self.speech.say("utter_done", r.memory(), r.active_skill)
        if "complete_skill" in r.tools:
            return Move(text, [("complete_skill", {})])
        return Move(text)

    def _answer_from(self, r: Request, result: Any) -> Move:
        hits = result.get("results") if isinstance(result, Mapping) else None
        if hits:
            return Move(_snippet(str(hits[0].get("text", ""))))
        if "cannot_help" in r.tools:
            return _call("cannot_help", in_domain=True)
        return self._say(r, "utter_ask_rephrase")

    # -- values, tools, questions ---------------------------------------------------------

    def _values(self, r: Request) -> dict[str, Any]:
        """Values for ``set_fields`` read from the utterance (not twice in one turn)."""
        spec = r.tools.get("set_fields")
        if spec is None or r.called("set_fields"):
            return {}
        target = r.collect_target
        memory = r.memory()
        values = {}
        for name, schema in spec.parameters["properties"].items():
            is_target = name == target
            if not is_target and memory.get(f"{r.active_skill}.{name}") is not None:
                continue  # already known: a correction is not the rules' business
            closed = "enum" in schema or schema.get("type") in ("integer", "number")
            if not (is_target or closed or _identifier_field(name, schema)):
                continue
            value = value_for(name, schema, r.user, open_text=is_target)
            if value is not None:
                values[name] = value
        return values

    def _other_skill(self, r: Request) -> str | None:
        active = r.active_skill
        flows = [(flow, about) for flow, about in r.flows() if not flow.startswith(f"{active}__")]
        scores = flow_scores(r.user, flows)
        if scores.get(active or "", 0) > 0:
            return None
        best = max(scores.items(), key=lambda item: item[1], default=None)
        if best is None or best[0] == active or best[1] < SWITCH_SCORE:
            return None
        return best[0]

    def _block_jump(self, r: Request) -> Move | None:
        """Enter a block the prose names right after a value was recorded (@block.)."""
        active = r.active_skill
        for flow, _ in r.flows():
            if active is not None and flow.startswith(f"{active}__") and flow in r.instructions():
                return _call("activate", flow_id=flow)
        return None

    def _tool_call(self, r: Request) -> Move | None:
        prose = r.instructions()
        for name, spec in r.tools.items():
            if name in FRAMEWORK_TOOL_NAMES or not re.search(rf"\b{re.escape(name)}\b", prose):
                continue
            arguments = self._arguments(r, spec)
            if arguments is not None and not _already_made(r, name, arguments):
                return _call(name, **arguments)
        return None

    def _arguments(self, r: Request, spec: ToolSpec) -> dict[str, Any] | None:
        memory = r.memory()
        arguments = {}
        for name, schema in spec.parameters.get("properties", {}).items():
            value = value_for(name, schema, r.user, open_text=False)
            if value is None:
                value = _remembered(memory, r.active_skill, name)
            if value is not None:
                arguments[name] = value
            elif name in spec.parameters.get("required", []):
                return None
        return arguments

    def _ask_or_finish(self, r: Request) -> Move:
        target = r.collect_target
        if target is not None:
            return Move(self._question(r, target))
        missing = self._missing_argument(r) or self._unset_field(r)
        if missing is not None:
            return Move(self._question(r, missing))
        return self._say(r, "utter_ask_rephrase")

    def _unset_field(self, r: Request) -> str | None:
        """The first field ``set_fields`` may record that holds no value yet."""
        spec = r.tools.get("set_fields")
        memory = r.memory()
        for name in spec.parameters["properties"] if spec is not None else ():
            if memory.get(f"{r.active_skill}.{name}") is None:
                return str(name)
        return None

    def _missing_argument(self, r: Request) -> str | None:
        prose = r.instructions()
        memory = r.memory()
        for name, spec in r.tools.items():
            if name in FRAMEWORK_TOOL_NAMES or not re.search(rf"\b{re.escape(name)}\b", prose):
                continue
            for argument in spec.parameters.get("required", []):
                schema = spec.parameters["properties"][argument]
                known = value_for(argument, schema, r.user, open_text=False)
                if known is None and _remembered(memory, r.active_skill, argument) is None:
                    return str(argument)
        return None

    def _question(self, r: Request, entry: str) -> str:
        name = f"utter_ask_{entry}"
        if self.speech.has(name):
            return self.speech.say(name, r.memory(), r.active_skill)
        return f"What is the {entry.replace('_', ' ')}?"

    def _say(self, r: Request, name: str) -> Move:
        return Move(self.speech.say(name, r.memory(), r.active_skill))


def _failed(result: Any) -> bool:
    return isinstance(result, Mapping) and (
        result.get("error") is not None or result.get("ok") is False
    )


def _confirmed(result: Any) -> bool:
    return isinstance(result, Mapping) and result.get("confirmed") is True


def _identifier_field(name: str, schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "string" and wants_identifier(name, schema)


def _remembered(memory: Mapping[str, Any], skill: str | None, name: str) -> Any:
    for key in (f"{skill}.{name}", f"project.{name}"):
        value = memory.get(key)
        if value is not None and value != _MASKED:
            return value
    return None


def _already_made(r: Request, name: str, arguments: Mapping[str, Any]) -> bool:
    """Whether the same call was made since the skill became active (or one succeeded)."""
    records = _since_activation(r)
    return any(
        record.call.name == name
        and (dict(record.call.arguments) == dict(arguments) or not _failed(record.result))
        for record in records
    )


def _since_activation(r: Request) -> list[CallRecord]:
    records = [*r.earlier, *r.this_turn]
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        result = record.result if isinstance(record.result, Mapping) else {}
        if record.call.name == "activate" and result.get("activated") == r.active_skill:
            return records[index + 1 :]
    return records


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    cut = flat[:SNIPPET_CHARS]
    end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    return cut[: end + 1] if end > 0 else cut.rsplit(" ", 1)[0] + "…"
