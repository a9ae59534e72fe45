"""Delivering a named response verbatim (contract §2.7, §7.7).

Variant selection: walk the variants in file order, skipping unconditioned ones, and take the
first whose ``condition`` holds; else the single default (the unconditioned variant); when no
variant is conditioned, the first. A condition that cannot be evaluated does not match.
Placeholders ``{session.<ns>.<entry>}`` and bare ``{entry}`` (the skill's field first, then
project) take the current value; one without a value stays as written. A template is the
author's explicit wording, so a PII value in it is spoken (unlike prompts, which mask it).

The text is spoken sentence by sentence (``Say`` with ``source="response"``). Static buttons are
offered after it; a variant with ``buttons: {source: <tool>}`` first runs that tool, which sets
the buttons. A few engine responses are bundled (:data:`BUNDLED`); a project response of the
same name replaces the wording (contract §5.7).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from voicegate.engine.loop.framework_calls import run_button_source
from voicegate.engine.loop.sentences import SentenceSplitter
from voicegate.engine.loop.turn import Turn
from voicegate.engine.project.response_model import (
    END_CALL,
    ENGINE_PLACEHOLDERS,
    TRANSFER_TO,
    ButtonSource,
    Placeholder,
    Response,
    StaticButton,
    Variant,
)
from voicegate.engine.project.scope import ReadScope
from voicegate.engine.tools.buttons import Button

log = logging.getLogger(__name__)

#: Completion of the last skill on the stack: the bundled ``default_completed`` question.
ANYTHING_ELSE = "utter_anything_else"
#: The resume offer after a digression ended (name observed on real builds [ex R-BENCH]).
ASK_TO_CONTINUE = "utter_ask_wants_to_continue"
#: ``cannot_help``: the bundled unsupported-request decline.
CANNOT_HELP = "utter_cannot_help"
#: A stale or invalid ``set:`` button tap.
BUTTON_SKIPPED = "utter_set_memory_button_skipped"

#: voicegate's wording of the engine's own responses (the bundled texts are not published).
BUNDLED = {
    ANYTHING_ELSE: "Is there anything else I can help you with?",
    ASK_TO_CONTINUE: "Would you like to continue with {skill}?",
    CANNOT_HELP: "Sorry, I can't help with that.",
    BUTTON_SKIPPED: "That option is no longer available. What would you like to do?",
}


async def deliver(turn: Turn, name: str, skill_id: str | None, **engine_values: str) -> str | None:
    """Speak response ``name`` and offer its buttons; returns the text, None if none was said.

    ``engine_values`` fill ``{name}`` placeholders of a bundled text (e.g. ``{skill}``).
    """
    response = turn.session.project.responses.get(name)
    if response is None:
        return _deliver_bundled(turn, name, engine_values)
    variant = select_variant(turn, response)
    if variant is None:
        log.warning("response %r: no variant applies; nothing delivered (fails closed)", name)
        return None
    text = fill_placeholders(turn, variant, skill_id or response.owner)
    text = _fill_engine_values(text, name, engine_values).strip()
    if not text:
        return None
    if isinstance(variant.buttons, ButtonSource):
        owner = source_owner(turn, response.owner or skill_id, variant.buttons.tool)
        if owner is not None:
            await run_button_source(turn.session, turn.channel, owner, variant.buttons.tool)
    speak(turn, text)
    if isinstance(variant.buttons, tuple) and variant.buttons:
        turn.channel.offer_buttons(tuple(_button(turn, item, skill_id) for item in variant.buttons))
    _end_call(turn, variant)
    return text


def _end_call(turn: Turn, variant: Variant) -> None:
    """A response with ``end_call`` or ``transfer_to`` metadata ends the call and the turn.

    voicegate's hang-up and transfer actions (docs/contract-decisions.md): the contract stores
    metadata keys other than ``rephrase`` on the delivered bot message for the channel (§2.7).
    """
    transfer_to = variant.metadata.get(TRANSFER_TO) or ""
    if variant.metadata.get(END_CALL) is True or transfer_to:
        turn.channel.end_call(str(transfer_to))


def source_owner(turn: Turn, preferred: str | None, tool: str) -> str | None:
    """The skill whose local ``tool`` sources a response's buttons.

    A skill's own response runs its own tool. A project-root response (BTN-05: the seed
    merges every ``responses.yml`` into one registry) runs it as the skill delivering it,
    else as the active skill, else as the one skill defining it (``validate`` requires one).
    """
    frame = turn.dialogue.active
    skills = turn.session.project.skills
    candidates = [preferred, frame.skill_id if frame else None, *sorted(skills)]
    for skill_id in candidates:
        if skill_id is not None and skill_id in skills and tool in skills[skill_id].tools:
            return skill_id
    return None


def _deliver_bundled(turn: Turn, name: str, values: dict[str, str]) -> str | None:
    template = BUNDLED.get(name)
    if template is None:
        log.warning("response %r is not declared; nothing delivered", name)
        return None
    text = template.format_map(_Keep(values))
    speak(turn, text)
    return text


def _fill_engine_values(text: str, name: str, values: dict[str, str]) -> str:
    """A project's rewording of an engine response keeps the engine's placeholders."""
    for key in ENGINE_PLACEHOLDERS.get(name, ()):
        if key in values:
            text = text.replace("{" + key + "}", values[key])
    return text


class _Keep(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def speak(turn: Turn, text: str) -> None:
    """Say verbatim text sentence by sentence."""
    splitter = SentenceSplitter()
    for sentence in [*splitter.feed(text), *splitter.flush()]:
        turn.channel.say(sentence, source="response")
    turn.said.append(text)


def select_variant(turn: Turn, response: Response) -> Variant | None:
    """The variant to deliver now (contract §2.7 selection order)."""
    conditioned = [variant for variant in response.variants if variant.condition is not None]
    for variant in conditioned:
        if turn.holds(variant.condition):
            return variant
    defaults = [variant for variant in response.variants if variant.condition is None]
    if not defaults:
        return None
    return defaults[0]


def fill_placeholders(turn: Turn, variant: Variant, skill_id: str | None) -> str:
    """The variant's text with every placeholder that has a value replaced by it."""
    return _fill(turn, variant.text, variant.placeholders, skill_id)


def _fill(turn: Turn, text: str, placeholders: tuple[Placeholder, ...], skill: str | None) -> str:
    scope = ReadScope(turn.session.memory.schema, skill)
    for placeholder in placeholders:
        ref = placeholder.ref or scope.bare(placeholder.entry or "")
        value = turn.session.memory.value(ref) if ref is not None else None
        if value is not None:
            text = text.replace(placeholder.text, _spoken(value))
    return text


def _spoken(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _button(turn: Turn, item: StaticButton, skill_id: str | None) -> Button:
    title = _fill(turn, item.title, item.placeholders, skill_id)
    if item.set_payload is not None:
        ref = item.set_payload.ref
        return Button(title, item.set_payload.raw_value, f"session.{ref.namespace}.{ref.entry}")
    return Button(title, item.payload if item.payload is not None else title)
