"""The system prompt, rebuilt from live state for every model call (contract §7.2).

Sections in a fixed order, deploy-stable first so a provider's prefix cache stays warm;
conditional sections are left out, never rendered empty:

1. persona, then ``rules`` as a bullet list;
2. the skill glossary (every skill the project may run);
3. channel rules (``prompts.voice_rules``, or ``text_rules`` for a ``channel: text`` call);
4. acknowledgement guidance, only when ``prompts.ack_enabled`` and on the turn's first call;
5. guidance for the framework tools offered on this call (never one that is not offered);
6. out-of-scope handling, when ``cannot_help`` is offered;
7. the current date and time;
8. ``### Project Memory`` (set values, PII as ``[set]``);
9. exactly one turn-local branch: the answer-from-knowledge section after a search, the
   resume offer, the active skill's instructions (visible prose with ``@`` tokens rendered,
   the current block step, ``### Memory:``, ``### Already collected (do not re-ask)``, a
   pending confirmation, what was already said verbatim), or the routing catalogue.

The headings and wording are voicegate's (§11 question 30: the published templates are not
readable). ``@memory`` tokens become the current value (unset ones stay as written), and
``@block.``/``@skill.`` tokens become the ``activate`` call that follows them.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from voicegate.engine.llm.port import SystemMessage
from voicegate.engine.loop.dialogue import flow_id
from voicegate.engine.loop.flows import visible_paragraphs
from voicegate.engine.loop.framework.offer import (
    ACTIVATE,
    CANCEL_SKILL,
    CANNOT_HELP,
    COMPLETE_SKILL,
    CORRECT,
    LISTEN,
    RESOLVE_CONFIRMATION,
    SEARCH_KNOWLEDGE,
    SET_FIELDS,
    Offer,
)
from voicegate.engine.loop.toolbox import collect_entries, constraint, is_container
from voicegate.engine.loop.turn import Turn
from voicegate.engine.memory.fields import PROJECT, Visibility
from voicegate.engine.memory.render import mask_pii_in_text, project_memory_lines, render_value
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.model import Skill
from voicegate.engine.project.step_model import (
    CollectStep,
    ExecuteToolStep,
    InstructionsStep,
    Step,
)
from voicegate.engine.project.token_model import ProseToken, TokenKind

log = logging.getLogger(__name__)

Clock = Callable[[], datetime.datetime]

VOICE_RULES = (
    "Your replies are spoken aloud on a phone call: keep them short, one or two sentences, "
    "no lists, no markdown, no emoji. Spell out numbers the way they are said."
)
TEXT_RULES = "Your replies are shown as chat messages: short and plain."
ACK_RULE = "Begin your first sentence with a brief acknowledgement of what the user said."

_TOOL_GUIDANCE = {
    ACTIVATE: "Call activate with a flow id to start the skill that handles the request.",
    COMPLETE_SKILL: (
        "Call complete_skill once the user is done with the active skill's topic, after "
        "presenting any tool results; never together with a tool whose result you still need."
    ),
    CANCEL_SKILL: "Call cancel_skill when the user wants to stop what the active skill does.",
    SET_FIELDS: "Record values the user gives with set_fields, all at once.",
    CORRECT: "When the user corrects a value they gave, call correct.",
    RESOLVE_CONFIRMATION: (
        "When the user answers the pending confirmation, call resolve_tool_confirmation."
    ),
    SEARCH_KNOWLEDGE: "For questions the skills do not cover, call search_knowledge first.",
    CANNOT_HELP: "Call cannot_help to decline a request this agent cannot serve.",
    LISTEN: "Call listen alone to stay silent when you already asked something.",
}


def utc_now() -> datetime.datetime:
    """The current time (the prompt's date section)."""
    return datetime.datetime.now(datetime.UTC)


def build_prompt(turn: Turn, offer: Offer, first_call: bool, now: Clock = utc_now) -> SystemMessage:
    """The system message for the next model call."""
    sections = [_persona(turn), _glossary(turn), _channel(turn)]
    if first_call:
        sections.append(_acknowledgement(turn))
    sections += [_tool_guidance(offer), _out_of_scope(turn, offer)]
    sections.append(f"Current date and time: {now():%A %d %B %Y, %H:%M} UTC.")
    lines = project_memory_lines(turn.session.memory)
    if lines:  # rendered only when some project value is set (contract §4.6)
        sections.append("### Project Memory\n" + "\n".join(lines))
    sections.append(_turn_local(turn, offer))
    return SystemMessage("\n\n".join(section for section in sections if section))


def _persona(turn: Turn) -> str:
    agent = turn.session.project.agent
    parts = [agent.persona.strip()] if agent.persona.strip() else []
    if agent.rules:
        parts.append("\n".join(f"- {rule}" for rule in agent.rules))
    return "\n\n".join(parts)


def _glossary(turn: Turn) -> str:
    skills = [
        skill
        for skill in (turn.skill(skill_id) for skill_id in sorted(turn.session.project.skills))
        if not skill.frontmatter.disabled and not is_container(skill)
    ]
    if not skills:
        return ""
    lines = [f"- {skill.skill_id}: {skill.frontmatter.name or skill.skill_id}" for skill in skills]
    return "## Skills\n" + "\n".join(lines)


def _channel(turn: Turn) -> str:
    prompts = turn.session.project.agent.prompts
    if turn.session.call.metadata.get("channel") == "text":
        return str(prompts.get("text_rules") or TEXT_RULES)
    return str(prompts.get("voice_rules") or VOICE_RULES)


def _acknowledgement(turn: Turn) -> str:
    prompts = turn.session.project.agent.prompts
    if prompts.get("ack_enabled") is not True:
        return ""
    parts = [str(prompts.get("ack_rule") or ACK_RULE)]
    if prompts.get("ack_reminder"):
        parts.append(str(prompts["ack_reminder"]))
    for example in prompts.get("ack_examples") or ():
        parts.append(f'User: "{example.get("user", "")}" -> "{example.get("ack", "")}"')
    return "\n".join(parts)


def _tool_guidance(offer: Offer) -> str:
    lines = [f"- {text}" for name, text in _TOOL_GUIDANCE.items() if name in offer.names]
    return "## Engine tools\n" + "\n".join(lines) if lines else ""


def _out_of_scope(turn: Turn, offer: Offer) -> str:
    if CANNOT_HELP not in offer.names:
        return ""
    return (
        "## Out of scope\nIf the request is outside what this agent does and no skill fits, "
        "do not improvise an answer: call cannot_help."
    )


def _turn_local(turn: Turn, offer: Offer) -> str:
    dialogue = turn.dialogue
    if turn.searched:
        return (
            "## Answer from knowledge\nAnswer the user from the search results above, and "
            "only from them. If they do not answer the question, call cannot_help."
        )
    top = dialogue.top
    if dialogue.resume_offered and top is not None:
        return (
            f"## Paused skill\nThe user was asked whether to continue with {top.skill_id}. "
            f'If they want to, call activate(flow_id="{top.skill_id}"); if not, call '
            "cancel_skill."
        )
    frame = dialogue.active
    if frame is None:
        return _routing(turn, offer)
    return _active_skill(turn, turn.skill(frame.skill_id))


def _routing(turn: Turn, offer: Offer) -> str:
    parts = ["## Routing\nNo skill is active."]
    custom = turn.session.project.agent.prompts.get("routing_no_active_skill")
    if custom:
        parts.append(str(custom).strip())
    if offer.flows:
        parts.append("Start the skill that handles the user's request with activate:")
        parts.append("\n".join(f"- {flow.flow_id}: {flow.description}" for flow in offer.flows))
    return "\n".join(parts)


def _active_skill(turn: Turn, skill: Skill) -> str:
    parts = [f"## Active skill: {skill.skill_id} ({skill.frontmatter.name or skill.skill_id})"]
    prose = [render_prose(turn, skill, p.text, p.tokens) for p in visible_paragraphs(turn, skill)]
    if prose:
        parts.append("\n\n".join(prose))
    parts += [
        _current_step(turn, skill),
        _memory(turn, skill),
        _already_collected(turn, skill),
        _pending(turn),
        _said(turn),
    ]
    return "\n\n".join(part for part in parts if part)


def render_prose(turn: Turn, skill: Skill, text: str, tokens: tuple[ProseToken, ...]) -> str:
    """Prose with ``@memory`` tokens replaced by values and jumps by their activate call."""
    pieces = []
    position = 0
    for token in sorted(tokens, key=lambda item: item.start):
        replacement = _token_text(turn, skill, token)
        if replacement is None:
            continue
        pieces += [text[position : token.start], replacement]
        position = token.end
    pieces.append(text[position:])
    return "".join(pieces).strip()


def _token_text(turn: Turn, skill: Skill, token: ProseToken) -> str | None:
    if token.kind is TokenKind.BLOCK:
        return f'activate(flow_id="{flow_id(skill.skill_id, token.target)}")'
    if token.kind is TokenKind.SKILL:
        return f'activate(flow_id="{token.target}")'
    if token.ref is None:
        return None
    value = turn.session.memory.value(token.ref)
    if value is None:
        log.info("%s is unset; left as written", token.text)
        return None
    return render_value(value, turn.session.memory.schema.field(token.ref))


def _current_step(turn: Turn, skill: Skill) -> str:
    frame = turn.dialogue.active
    cursor = frame.cursor if frame is not None else None
    if cursor is None:
        return ""
    steps = skill.body.blocks[cursor.block_id].steps
    if cursor.index >= len(steps):
        return ""
    detail = _step_text(turn, skill, steps[cursor.index])
    header = f"### Current step (block {cursor.block_id}, step {steps[cursor.index].step_id})"
    return f"{header}\n{detail}" if detail else ""


def _step_text(turn: Turn, skill: Skill, step: Step) -> str:
    if isinstance(step, CollectStep):
        declared = turn.session.memory.schema.field(FieldRef(skill.skill_id, step.entry))
        about = step.description or (declared.description if declared else None)
        hint = f" ({about})" if about else ""
        return (
            f"Collect `{step.entry}`{hint} from the user's answer and record it with "
            "set_fields. If the answer does not give it, ask again."
        )
    if isinstance(step, InstructionsStep):
        return render_prose(turn, skill, step.instructions, step.tokens)
    if isinstance(step, ExecuteToolStep):
        gate = constraint(skill, step.tool)
        waiting = gate.requires.source if gate is not None and gate.requires else ""
        return f"The block waits to call {step.tool} until {waiting} holds."
    return ""


def _memory(turn: Turn, skill: Skill) -> str:
    memory = turn.session.memory
    schema = memory.schema
    lines = []
    own = schema.skills.get(skill.skill_id)
    for entry, declared in (own.fields if own is not None else {}).items():
        value = memory.value(FieldRef(skill.skill_id, entry))
        shown = "(not set)" if value is None else render_value(value, declared)
        lines.append(f"{skill.skill_id}.{entry}: {shown}")
    for ref, value in sorted(memory.set_values().items(), key=lambda item: item[0].qualified):
        other = schema.field(ref)
        other_public = ref.namespace not in (PROJECT, skill.skill_id)
        if other_public and other is not None and other.visibility is Visibility.PUBLIC:
            lines.append(f"{ref.qualified}: {render_value(value, other)}")
    return "### Memory:\n" + "\n".join(lines) if lines else ""


def _already_collected(turn: Turn, skill: Skill) -> str:
    memory = turn.session.memory
    lines = []
    for entry in collect_entries(skill):
        ref = FieldRef(skill.skill_id, entry)
        value = memory.value(ref)
        if value is not None:
            lines.append(f"- {entry}: {render_value(value, memory.schema.field(ref))}")
    return "### Already collected (do not re-ask)\n" + "\n".join(lines) if lines else ""


def _pending(turn: Turn) -> str:
    pending = turn.dialogue.pending
    if pending is None:
        return ""
    arguments = ", ".join(f"{key}={value!r}" for key, value in pending.arguments.items())
    return (
        f"### Pending confirmation\nThe call {pending.tool}({arguments}) waits for the user's "
        "approval. Ask for it if it was not asked yet; when the user answers, call "
        "resolve_tool_confirmation with confirmed true or false."
    )


def _said(turn: Turn) -> str:
    if not turn.said:
        return ""
    lines = mask_pii_in_text("\n".join(f'- "{text}"' for text in turn.said), turn.session.memory)
    return f"### Already said to the user this turn (do not repeat)\n{lines}"
