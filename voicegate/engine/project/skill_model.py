"""A parsed ``skill.md``: frontmatter properties and body (contract §2.5, §2.6)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from voicegate.engine.conditions import Condition
from voicegate.engine.project.step_model import OrderedBlock
from voicegate.engine.project.token_model import ProseToken


@dataclass(frozen=True, slots=True)
class Completion:
    """``complete_when``: a condition, natural-language criteria, or both (contract §2.5)."""

    condition: Condition | None = None
    criteria: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolImport:
    """One ``import_tools`` entry: a shared tool name, or ``mcp/<server>:<tool>``."""

    entry: str
    name: str
    server: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Confirmation:
    """``requires_confirmation``: pause the call for approval, optionally with fixed wording."""

    enabled: bool
    utter_for_confirmation: str | None = None
    utter_on_user_denial: str | None = None


@dataclass(frozen=True, slots=True)
class ToolConstraint:
    """One ``tool_constraints`` entry, keyed by the tool's bare name."""

    tool: str
    requires: Condition | None = None
    confirmation: Confirmation | None = None
    on_success: str | None = None
    on_failure: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class UtterTrigger:
    """One ``utter`` entry: a response fired on activation and/or when a condition turns true."""

    response: str
    on_activate: bool = False
    when: Condition | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """The frontmatter properties of ``skill.md``; unknown keys were ignored (contract §2.5).

    ``engine_managed`` is None when ``routing.engine_managed`` is not written (a default-skill
    override then inherits the bundled value).
    """

    name: str = ""
    description: str = ""
    requires: Condition | None = None
    complete_when: Completion | None = None
    import_tools: tuple[ToolImport, ...] = ()
    tool_constraints: Mapping[str, ToolConstraint] = field(default_factory=dict)
    utter: tuple[UtterTrigger, ...] = ()
    disabled: bool = False
    engine_managed: bool | None = None
    key_lines: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Paragraph:
    """One blank-line-separated prose paragraph; ``condition`` is its ``if:`` marker."""

    text: str
    line: int
    condition: Condition | None = None
    tokens: tuple[ProseToken, ...] = ()


class BodyShape(enum.Enum):
    """What the body holds, which decides routability (contract §2.6, §6.6)."""

    PROSE = "prose"  # one routable prose flow
    HYBRID = "hybrid"  # prose routable; blocks internal, entered via @block.<id>
    BLOCKS = "blocks"  # blocks routable; the block ``main`` is the entry point


@dataclass(frozen=True, slots=True)
class SkillBody:
    """The markdown body: prose paragraphs and ordered blocks, in file order.

    ``entry_block`` is the block a blocks-only skill starts with: ``main``, or the only block
    when there is just one (voicegate's choice: a lone block needs no special id). A
    blocks-only skill with several blocks and none called ``main`` has no entry block; each of
    its blocks is a routable flow of its own (contract §2.6: "blocks are routable").
    """

    paragraphs: tuple[Paragraph, ...] = ()
    blocks: Mapping[str, OrderedBlock] = field(default_factory=dict)
    shape: BodyShape = BodyShape.PROSE
    entry_block: str | None = None
