"""Checks that need the whole project: what a skill's files refer to must exist and be readable.

Run after every file parsed (contract §9.2): memory referenced by conditions, ``@memory``
tokens, step parameters and ``collect``/``set_memory`` steps; blocks and skills named by
``@block``/``@skill`` tokens and ``call``/``link`` steps; tools named by ``tool_constraints``
and ``execute_tool`` steps (engine tools cannot be targeted); responses named by ``utter``,
``on_success``/``on_failure``, confirmation names, ``action`` and ``utterance``; post-write
hooks named after a settable or collected field of their skill.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass

from voicegate.engine.conditions import Condition
from voicegate.engine.memory.fields import PROJECT
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project import codes
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.response_model import ButtonSource, Response
from voicegate.engine.project.scope import UNDECLARED, ReadScope
from voicegate.engine.project.skill_files import SkillSource
from voicegate.engine.project.skill_model import BodyShape
from voicegate.engine.project.step_model import (
    ACTION_LISTEN,
    ActionStep,
    CallStep,
    CollectStep,
    ExecuteToolStep,
    InstructionsStep,
    LinkStep,
    SetMemoryStep,
    Step,
)
from voicegate.engine.project.token_model import ProseToken, TokenKind
from voicegate.engine.project.tool_resolution import Toolset
from voicegate.engine.tools.decorator import Tool
from voicegate.engine.tools.reserved import FRAMEWORK_TOOL_NAMES, HOOK_PREFIX
from voicegate.errors import MemoryWriteError


@dataclass(frozen=True, slots=True)
class ProjectFacts:
    """What the checks compare against: skill ids and response names (None: not all known)."""

    skill_ids: frozenset[str]
    responses: frozenset[str] | None


class SkillChecks:
    """The cross-reference checks of one skill."""

    def __init__(
        self,
        skill_id: str,
        path: str,
        source: SkillSource,
        toolset: Toolset,
        scope: ReadScope,
        facts: ProjectFacts,
        problems: Problems,
    ) -> None:
        self.skill_id = skill_id
        self.path = path
        self.source = source
        self.toolset = toolset
        self.scope = scope
        self.facts = facts
        self.problems = problems

    def run(self) -> None:
        """Run every check, recording problems."""
        for condition, line in self._conditions():
            self._check_condition(condition, line)
        for token in self._tokens():
            self._check_token(token)
        self._check_constraints()
        self._check_responses()
        for step in self._steps():
            self._check_step(step)
        self._check_completion()
        self._check_hooks()

    def _steps(self) -> Iterator[Step]:
        for block in self.source.body.blocks.values():
            yield from block.steps

    def _conditions(self) -> Iterator[tuple[Condition, int | None]]:
        front = self.source.frontmatter
        if front.requires:
            yield front.requires, front.key_lines.get("requires")
        if front.complete_when and front.complete_when.condition:
            yield front.complete_when.condition, front.key_lines.get("complete_when")
        for constraint in front.tool_constraints.values():
            if constraint.requires:
                yield constraint.requires, constraint.line
        for trigger in front.utter:
            if trigger.when:
                yield trigger.when, trigger.line
        for paragraph in self.source.body.paragraphs:
            if paragraph.condition:
                yield paragraph.condition, paragraph.line
        for step in self._steps():
            if isinstance(step, InstructionsStep) and step.complete_when:
                yield step.complete_when, step.line
            for branch in getattr(step, "next", ()):
                if branch.condition:
                    yield branch.condition, branch.line or step.line

    def _check_condition(self, condition: Condition, line: int | None) -> None:
        for ref in condition.references():
            complaint = self.scope.complaint(ref)
            if complaint:
                kind, message = complaint
                code = (
                    codes.CONDITION_UNDECLARED_MEMORY
                    if kind == UNDECLARED
                    else codes.CONDITION_UNREADABLE_MEMORY
                )
                self.problems.add(
                    code, f"condition {condition.source!r}: {message}", self.path, line
                )

    def _tokens(self) -> Iterator[ProseToken]:
        for paragraph in self.source.body.paragraphs:
            yield from paragraph.tokens
        for step in self._steps():
            if isinstance(step, InstructionsStep):
                yield from step.tokens

    def _check_token(self, token: ProseToken) -> None:
        if token.kind is TokenKind.MEMORY and token.ref is not None:
            complaint = self.scope.complaint(token.ref)
            if complaint:
                self.problems.add(
                    codes.MEMORY_TOKEN_INVALID,
                    f"{token.text}: {complaint[1]}",
                    self.path,
                    token.line,
                )
        elif token.kind is TokenKind.BLOCK and token.target not in self.source.body.blocks:
            self.problems.add(
                codes.UNKNOWN_BLOCK_REFERENCE,
                f"{token.text}: this skill.md declares no block {token.target!r}",
                self.path,
                token.line,
            )
        elif token.kind is TokenKind.SKILL and token.target not in self.facts.skill_ids:
            self.problems.add(
                codes.UNKNOWN_SKILL_REFERENCE,
                f"{token.text}: there is no skills/{token.target}/ folder",
                self.path,
                token.line,
            )

    def _check_tool(self, name: str, line: int | None, where: str) -> None:
        if name in self.toolset.tools:
            return
        if name in FRAMEWORK_TOOL_NAMES:
            detail = f"{name!r} is a framework tool, which {where} cannot target"
        elif not self.toolset.complete:
            return  # a module failed to import; its tools are unknown
        else:
            detail = "no matching @tool function was found (local, or shared/MCP in import_tools)"
        self.problems.add(
            codes.UNRESOLVED_TOOL,
            f"Skill '{self.skill_id}' references tool '{name}' in {where}, but {detail}",
            self.path,
            line,
        )

    def _check_constraints(self) -> None:
        for constraint in self.source.frontmatter.tool_constraints.values():
            self._check_tool(constraint.tool, constraint.line, "tool_constraints")

    def _response_names(self) -> Iterator[tuple[str, int | None, str]]:
        front = self.source.frontmatter
        for trigger in front.utter:
            yield trigger.response, trigger.line, "utter"
        for constraint in front.tool_constraints.values():
            confirmation = constraint.confirmation
            named = [constraint.on_success, constraint.on_failure]
            if confirmation:
                named += [confirmation.utter_for_confirmation, confirmation.utter_on_user_denial]
            for name in named:
                if name:
                    yield name, constraint.line, f"tool_constraints of {constraint.tool!r}"
        for step in self._steps():
            if isinstance(step, ActionStep) and step.action != ACTION_LISTEN:
                yield step.action, step.line, f"action step {step.step_id!r}"
            if isinstance(step, CollectStep) and step.utterance:
                yield step.utterance, step.line, f"collect step {step.step_id!r}"

    def _check_responses(self) -> None:
        known = self.facts.responses
        if known is None:
            return
        for name, line, where in self._response_names():
            if name not in known:
                self.problems.add(
                    codes.RESPONSE_NOT_FOUND,
                    f"{where} names response {name!r}, which no responses.yml declares",
                    self.path,
                    line,
                )

    def _check_step(self, step: Step) -> None:
        if isinstance(step, ExecuteToolStep):
            self._check_tool(step.tool, step.line, f"execute_tool step {step.step_id!r}")
            self._check_parameters(step)
        elif isinstance(step, CollectStep):
            self._check_collect(step)
        elif isinstance(step, SetMemoryStep):
            self._check_set_memory(step)
        elif isinstance(step, CallStep | LinkStep) and not self._flow_exists(step.target):
            self.problems.add(
                codes.UNKNOWN_STEP_TARGET,
                f"step {step.step_id!r} targets {step.target!r}, which is neither a block of this "
                "skill nor a skill",
                self.path,
                step.line,
            )

    def _flow_exists(self, target: str) -> bool:
        skill, _, block = target.partition("__")
        if target in self.source.body.blocks or target in self.facts.skill_ids:
            return True
        return bool(block) and skill == self.skill_id and block in self.source.body.blocks

    def _check_parameters(self, step: ExecuteToolStep) -> None:
        resolved = self.toolset.tools.get(step.tool)
        properties = (
            resolved.tool.spec.parameters.get("properties", {})
            if resolved and resolved.tool
            else None
        )
        for name, value in step.parameters.items():
            if properties is not None and name not in properties:
                self.problems.add(
                    codes.TOOL_INVALID_PARAMETERS,
                    f"step {step.step_id!r}: tool {step.tool!r} has no parameter {name!r}",
                    self.path,
                    step.line,
                )
            complaint = self.scope.complaint(value.ref) if value.ref else None
            if complaint:
                self.problems.add(
                    codes.TOOL_INVALID_PARAMETERS,
                    f"step {step.step_id!r}: parameter {name!r}: {complaint[1]}",
                    self.path,
                    step.line,
                )

    def _check_collect(self, step: CollectStep) -> None:
        if self.skill_id in self.scope.unjudged:
            return
        if self.scope.schema.field(FieldRef(self.skill_id, step.entry)) is not None:
            return
        if step.entry in self.scope.schema.project:
            self.problems.add(
                codes.MEMORY_COLLECT_PROJECT_FIELD,
                f"collect step {step.step_id!r}: {step.entry!r} is a project field; collect "
                "targets a field of this skill",
                self.path,
                step.line,
            )
            return
        self.problems.add(
            codes.MEMORY_UNDECLARED,
            f"collect step {step.step_id!r}: {step.entry!r} is not declared in "
            f"skills/{self.skill_id}/memory.yml",
            self.path,
            step.line,
        )

    def _check_set_memory(self, step: SetMemoryStep) -> None:
        if self.scope.unjudged & {self.skill_id, PROJECT}:
            return
        for name, value in step.values.items():
            try:
                ref = self.scope.schema.writable(name, self.skill_id)
            except MemoryWriteError as error:
                self.problems.add(
                    codes.MEMORY_UNDECLARED,
                    f"set_memory step {step.step_id!r}: {error}",
                    self.path,
                    step.line,
                )
                continue
            declared = self.scope.schema.field(ref)
            problem = declared.value_problem(value) if declared else None
            if problem:
                self.problems.add(
                    codes.MEMORY_INVALID_VALUE,
                    f"set_memory step {step.step_id!r}: {ref.qualified}: {problem}",
                    self.path,
                    step.line,
                )

    def _check_completion(self) -> None:
        if self.source.frontmatter.complete_when and self.source.body.shape is BodyShape.BLOCKS:
            self.problems.add(
                codes.COMPLETE_WHEN_INVALID,
                "complete_when needs prose: a blocks-only skill completes when its block reaches "
                "END",
                self.path,
                self.source.frontmatter.key_lines.get("complete_when"),
            )

    def _check_hooks(self) -> None:
        if self.skill_id in self.scope.unjudged:
            return
        collected = {step.entry for step in self._steps() if isinstance(step, CollectStep)}
        for name, resolved in self.toolset.hooks.items():
            problem = hook_problem(name[len(HOOK_PREFIX) :], self.skill_id, self.scope, collected)
            if problem:
                path, line = _definition_site(resolved.tool)
                self.problems.add(
                    codes.TOOL_INVALID_HOOK, f"hook {name!r}: {problem}", path or self.path, line
                )


def _definition_site(tool: Tool | None) -> tuple[str | None, int | None]:
    """The file and line a Python tool is defined on, when known."""
    code = getattr(getattr(tool, "function", None), "__code__", None)
    if code is None:
        return None, None
    return code.co_filename, code.co_firstlineno


def hook_problem(
    entry: str, skill_id: str, scope: ReadScope, collected: Collection[str]
) -> str | None:
    """Why ``run_after_setting_<entry>`` is not a valid hook of ``skill_id``, or None."""
    declared = scope.schema.field(FieldRef(skill_id, entry))
    if declared is None:
        if entry in scope.schema.project:
            return (
                f"{entry!r} is a project field; the LLM never sets project memory, "
                "so no hook runs after it"
            )
        return f"skill {skill_id!r} declares no field {entry!r}"
    if not declared.llm_settable and entry not in collected:
        return f"{skill_id}.{entry} is neither llm_settable nor collected by a collect step"
    return None


def check_button_sources(
    responses: Mapping[str, Response],
    local_tools: Mapping[str, Collection[str]],
    problems: Problems,
) -> None:
    """A response's ``buttons: {source: <tool>}`` must name a local tool (contract §8.3)."""
    for response in responses.values():
        owners = [response.owner] if response.owner else sorted(local_tools)
        for variant in response.variants:
            source = variant.buttons
            if isinstance(source, ButtonSource) and not any(
                source.tool in local_tools.get(owner, ()) for owner in owners
            ):
                where = f"skill {response.owner!r}" if response.owner else "any skill"
                problems.add(
                    codes.RESPONSE_INVALID_BUTTONS,
                    f"response {response.name!r}: button source {source.tool!r} is not a local "
                    f"tool of {where}",
                    response.path,
                    variant.line,
                )
