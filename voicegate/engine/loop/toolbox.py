"""Which of a skill's tools the model may call now, and which fields it may set.

Tools reference, "Gating a tool" and contract §7.3: while a skill is active the model sees the
skill's tools (local, imported shared, imported MCP) except post-write hooks, response button
sources, and tools whose ``tool_constraints`` ``requires`` does not hold. The same check runs
again at dispatch (:func:`callable_tool`).

A skill with neither prose nor blocks can only be built in code (the loader refuses it with
``skill.markdown.missing_instructions``). It has nothing to route on, so voicegate treats it as
a *tool container*: never routable, its tools offered in every state and run in its own
memory scope. Engine-level tests use such skills to exercise tools without routing.
"""

from __future__ import annotations

from voicegate.engine.conditions import holds
from voicegate.engine.loop.session import Session
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.model import Project, Skill
from voicegate.engine.project.response_model import ButtonSource
from voicegate.engine.project.skill_model import ToolConstraint
from voicegate.engine.project.step_model import CollectStep
from voicegate.engine.tools.catalog import BoundTool
from voicegate.engine.tools.reserved import is_hook


def is_container(skill: Skill) -> bool:
    """Whether a skill is a bare tool container (no prose, no blocks; built in code)."""
    return not skill.body.paragraphs and not skill.body.blocks


def containers(project: Project) -> list[Skill]:
    """The project's tool-container skills, in id order."""
    return [
        project.skills[skill_id]
        for skill_id in sorted(project.skills)
        if is_container(project.skills[skill_id])
    ]


def button_sources(project: Project) -> frozenset[str]:
    """Names of tools that supply a response's buttons; never offered to the model (§2.7)."""
    return frozenset(
        variant.buttons.tool
        for response in project.responses.values()
        for variant in response.variants
        if isinstance(variant.buttons, ButtonSource)
    )


def constraint(skill: Skill, tool_name: str) -> ToolConstraint | None:
    """The skill's ``tool_constraints`` entry for a tool, if any."""
    return skill.frontmatter.tool_constraints.get(tool_name)


def skill_tool(session: Session, skill_id: str, name: str) -> BoundTool | None:
    """A tool attached to a skill by bare name, as the engine can run it (hooks excluded)."""
    skill = session.project.skills.get(skill_id)
    if skill is None or is_hook(name):
        return None
    if skill.toolset and name not in skill.toolset:
        return None  # not attached to this skill (an undeclared shared tool, another skill's)
    bound = session.catalog.local(skill_id, name)
    if bound is not None:
        return bound
    resolved = skill.toolset.get(name)
    if resolved is not None and resolved.tool is not None:
        return BoundTool(resolved.tool, skill_id)  # an imported shared tool
    return None  # e.g. an MCP import whose server is not connected


def _names(skill: Skill) -> list[str]:
    return sorted(set(skill.toolset) | set(skill.tools))


def offered_tools(session: Session, skill_id: str | None) -> list[BoundTool]:
    """The tools the model sees: the active skill's visible tools, then tool containers'."""
    project = session.project
    hidden = button_sources(project)
    owners = (
        [project.skills[skill_id]] if skill_id is not None and skill_id in project.skills else []
    )
    owners += [skill for skill in containers(project) if skill.skill_id != skill_id]
    seen: set[str] = set()
    tools = []
    for skill in owners:
        for name in _names(skill):
            if name in seen or name in hidden:
                continue
            bound = callable_tool(session, skill.skill_id, name)
            if bound is not None:
                seen.add(name)
                tools.append(bound)
    return tools


def callable_tool(session: Session, skill_id: str, name: str) -> BoundTool | None:
    """The tool if it may be called now: attached, and its ``requires`` holds (fail closed)."""
    bound = skill_tool(session, skill_id, name)
    if bound is None:
        return None
    gate = constraint(session.project.skills[skill_id], name)
    if (
        gate is not None
        and gate.requires is not None
        and not holds(gate.requires, session.memory.value)
    ):
        return None
    return bound


def collect_entries(skill: Skill) -> list[str]:
    """Entries some collect step of the skill fills (they are settable, contract §4.3)."""
    entries: list[str] = []
    for block in skill.body.blocks.values():
        for step in block.steps:
            if isinstance(step, CollectStep) and step.entry not in entries:
                entries.append(step.entry)
    return entries


def settable_fields(session: Session, skill_id: str) -> list[FieldRef]:
    """The skill's fields the model may write: ``llm_settable`` or collect-owned (§4.3)."""
    declared = session.project.memory.skills.get(skill_id)
    if declared is None:
        return []
    owned = set(collect_entries(session.project.skills[skill_id]))
    return [
        FieldRef(skill_id, entry)
        for entry, spec in declared.fields.items()
        if spec.llm_settable or entry in owned
    ]
