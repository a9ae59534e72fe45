"""Routing: which flows ``activate`` may start now, and the prose the model sees (contract §5.1).

Eligible skills are those not ``disabled``, not engine-managed (bundled lifecycle skills and
their overrides), whose ``requires:`` holds now. A prose or hybrid skill is one flow (its id);
a blocks-only skill is one flow when it has an entry block (``main``, or its only block), else
each block is a flow ``<skill>__<block>``.

``activate`` also takes the jumps the active skill's *visible* prose names: ``@block.<id>``
enters that block of the skill (same-skill reference) and ``@skill.<id>`` delegates to that
skill when its own ``requires:`` holds (skill.md reference, "Jumps to blocks and skills").
A skill activated while the active skill's visible prose does not name it is a digression.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from voicegate.engine.loop.dialogue import flow_id
from voicegate.engine.loop.toolbox import is_container
from voicegate.engine.loop.turn import Turn
from voicegate.engine.project.model import Skill
from voicegate.engine.project.skill_model import BodyShape, Paragraph
from voicegate.engine.project.token_model import ProseToken, TokenKind

#: The known ids of the engine's bundled lifecycle skills (contract §5.7; the other two ids
#: are not published); a project folder with the id overrides one and inherits
#: ``routing.engine_managed: true`` unless it says otherwise.
SESSION_START = "default_session_start"
BUNDLED_SKILLS = frozenset(
    {
        SESSION_START,
        "default_completed",
        "default_customer_satisfaction",
        "default_unsupported_request_handler",
    }
)


@dataclass(frozen=True, slots=True)
class Flow:
    """A flow ``activate`` can start: a skill, or one block of it (``block_id``)."""

    flow_id: str
    skill_id: str
    block_id: str | None
    description: str
    jump: bool = False  # a @block./@skill. jump named by the active skill's prose


def engine_managed(skill: Skill) -> bool:
    """Whether the engine runs the skill itself (never on the routing menu)."""
    managed = skill.frontmatter.engine_managed
    return managed if managed is not None else skill.skill_id in BUNDLED_SKILLS


def eligible(turn: Turn, skill: Skill) -> bool:
    """Whether routing may start the skill now (contract §5.1, §5.3)."""
    if skill.frontmatter.disabled or engine_managed(skill) or is_container(skill):
        return False
    return turn.holds(skill.frontmatter.requires)


def skill_flows(skill: Skill) -> list[Flow]:
    """The routable flows of one skill, whatever its eligibility."""
    description = skill.frontmatter.description
    body = skill.body
    if body.shape is not BodyShape.BLOCKS or body.entry_block is not None:
        return [Flow(skill.skill_id, skill.skill_id, body.entry_block, description)]
    return [
        Flow(flow_id(skill.skill_id, block_id), skill.skill_id, block_id, description)
        for block_id in body.blocks
    ]


def startable(turn: Turn) -> list[Flow]:
    """Every flow ``activate`` accepts now: eligible skills, then the active skill's jumps."""
    flows = []
    for skill_id in sorted(turn.session.project.skills):
        skill = turn.skill(skill_id)
        if eligible(turn, skill):
            flows.extend(skill_flows(skill))
    known = {flow.flow_id for flow in flows}
    for jump in jumps(turn):
        if jump.flow_id not in known:
            flows.append(jump)
            known.add(jump.flow_id)
    return flows


def jumps(turn: Turn) -> list[Flow]:
    """The ``@block.``/``@skill.`` targets named in the active skill's visible prose."""
    frame = turn.dialogue.active
    if frame is None or frame.cursor is not None:
        return []
    skill = turn.skill(frame.skill_id)
    found = []
    for token in prose_tokens(turn, skill):
        if token.kind is TokenKind.BLOCK and token.target in skill.body.blocks:
            block = flow_id(skill.skill_id, token.target)
            found.append(Flow(block, skill.skill_id, token.target, f"block {token.target}", True))
        elif token.kind is TokenKind.SKILL and token.target in turn.session.project.skills:
            target = turn.skill(token.target)
            # A delegation target need not be on the menu (it may be engine-managed), but
            # its own requires: must hold (skill.md reference, "How the parent is parked").
            if not target.frontmatter.disabled and turn.holds(target.frontmatter.requires):
                found.extend(
                    Flow(flow.flow_id, flow.skill_id, flow.block_id, flow.description, True)
                    for flow in skill_flows(target)
                )
    return found


def visible_paragraphs(turn: Turn, skill: Skill) -> Iterator[Paragraph]:
    """The skill's prose paragraphs whose ``if:`` condition holds now."""
    for paragraph in skill.body.paragraphs:
        if turn.holds(paragraph.condition):
            yield paragraph


def prose_tokens(turn: Turn, skill: Skill) -> Iterator[ProseToken]:
    """The ``@`` tokens of the visible paragraphs."""
    for paragraph in visible_paragraphs(turn, skill):
        yield from paragraph.tokens


def delegates_to(turn: Turn, skill_id: str) -> bool:
    """Whether the active skill's visible prose names ``@skill.<skill_id>`` (delegation)."""
    frame = turn.dialogue.active
    if frame is None:
        return False
    return any(
        token.kind is TokenKind.SKILL and token.target == skill_id
        for token in prose_tokens(turn, turn.skill(frame.skill_id))
    )
