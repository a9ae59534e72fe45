"""Loading an agent project folder (contract §1) into a :class:`Project`.

The layout: ``agent.yml`` (required), ``integrations.yml``, root ``memory.yml`` and
``responses.yml``, ``references/``, shared ``tools/``, ``lib/`` (importable from tool modules
while they load), and ``skills/<id>/`` with ``skill.md``, ``memory.yml``, ``responses.yml``,
``tools.py``, ``tools/*.py`` and ``references/``. The skill id is the folder name.

Files are read in the dependency order of contract §9 (integrations, agent, memory,
responses, skills) and every problem is collected: :func:`inspect_project` returns them all
(``voicegate validate``), :func:`load_project` raises the first error. Warnings (forms
voicegate accepts that the contract no longer documents) never stop a load; they are logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from voicegate.engine.memory.declarations import parse_project_memory, parse_skill_memory
from voicegate.engine.memory.fields import PROJECT, SYSTEM, SkillMemory
from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.project import codes
from voicegate.engine.project.agent_yml import parse_agent
from voicegate.engine.project.bm25 import Bm25Index
from voicegate.engine.project.checks import ProjectFacts, SkillChecks, check_button_sources
from voicegate.engine.project.config_model import Integrations, McpServer
from voicegate.engine.project.integrations_yml import parse_integrations
from voicegate.engine.project.memory_writes import (
    check_module_writes,
    check_shared_module_writes,
)
from voicegate.engine.project.model import AgentSettings, Project, Skill, ToolOrigin
from voicegate.engine.project.problems import Problem, Problems
from voicegate.engine.project.references import (
    ReferenceChunk,
    ReferenceIndex,
    chunk_file,
    reference_files,
)
from voicegate.engine.project.response_model import Response
from voicegate.engine.project.responses import parse_responses
from voicegate.engine.project.scope import ReadScope
from voicegate.engine.project.skill_files import SkillSource, read_skill_md
from voicegate.engine.project.skill_model import Frontmatter, SkillBody
from voicegate.engine.project.tool_modules import (
    LoadedTools,
    load_shared_tools,
    load_skill_tools,
    tool_loading,
)
from voicegate.engine.project.tool_resolution import resolve_tools
from voicegate.engine.yamlfile import load_yaml

T = TypeVar("T")

log = logging.getLogger(__name__)

_SKILL_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")


@dataclass(frozen=True, slots=True)
class ProjectReport:
    """Everything found wrong with a project (errors and warnings), and the project.

    ``project`` is set when no problem is an error. ``draft`` is the project as far as it
    could be built despite errors (None when there is no project folder or ``agent.yml``):
    ``voicegate chat --allow-invalid`` runs it to debug a project that does not validate.
    """

    root: Path
    problems: tuple[Problem, ...]
    project: Project | None
    draft: Project | None = None

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that stop the project from loading."""
        return tuple(problem for problem in self.problems if problem.is_error)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """The problems that do not."""
        return tuple(problem for problem in self.problems if not problem.is_error)


def load_project(root: Path) -> Project:
    """Load the project in folder ``root``; raises the first error as a ProjectError.

    (A ``@tool`` declared against the tools reference raises ToolDefinitionError instead.)
    Warnings are logged and do not stop the load.
    """
    report = inspect_project(root)
    if report.project is None:
        errors = report.errors
        raise errors[0].error(also=len(errors) - 1)
    for warning in report.warnings:
        log.warning("%s: %s [%s]", warning.location(), warning.message, warning.code)
    return report.project


def inspect_project(root: Path) -> ProjectReport:
    """Load the project in ``root`` and collect every problem instead of stopping at one."""
    root = root.resolve()
    problems = Problems()
    if not root.is_dir():
        problems.add(codes.PROJECT_LAYOUT, "not a project folder", root)
    elif not (root / "agent.yml").is_file():
        problems.add(
            codes.PROJECT_LAYOUT,
            "agent.yml is missing (every project needs one)",
            root / "agent.yml",
        )
    else:
        project = _Loader(root, problems).load()
        complete = project if not problems.errors else None
        return ProjectReport(root, tuple(problems.items), complete, project)
    return ProjectReport(root, tuple(problems.items), None)


class _Loader:
    """One load of one project folder.

    ``unjudged`` holds the memory namespaces whose ``memory.yml`` failed to load: references
    into them are not checked, so one broken file is reported once, not once per use.
    """

    def __init__(self, root: Path, problems: Problems) -> None:
        self.root = root
        self.problems = problems
        self.unjudged: set[str] = set()

    def load(self) -> Project:
        """Read every file; problems go to the collector, the project is built regardless."""
        integrations, integrations_data, servers_known = self._integrations()
        agent = self._agent()
        skill_ids = self._skill_ids()
        schema = self._memory(skill_ids)
        with tool_loading(self.root):
            shared = load_shared_tools(self.root, self.problems)
            local = {sid: load_skill_tools(self.root, sid, self.problems) for sid in skill_ids}
        responses, response_names = self._responses(schema, skill_ids)
        servers = integrations.mcp_servers if servers_known else None
        skills = self._skills(skill_ids, schema, local, shared, servers, response_names)
        local_names = {sid: set(loaded.tools) for sid, loaded in local.items()}
        check_button_sources(responses, local_names, self.problems)
        self._memory_writes(schema, skills, local, shared)
        self._hooks()
        return Project(
            agent=agent,
            memory=schema,
            skills=skills,
            llm_config=_llm_config(integrations_data),
            root=self.root,
            integrations=integrations,
            responses=responses,
            shared_tools=shared.tools,
            references=self._references(agent, skill_ids),
        )

    def _hooks(self) -> None:
        """Warn about hook modules: voicegate does not run them (contract §2.9).

        A project whose hooks redact or rewrite text must not lose them silently; the
        project still loads, and ``validate --strict`` fails on it.
        """
        folder = self.root / "hooks"
        found = [self.root / "hooks.py"] + (sorted(folder.rglob("*.py")) if folder.is_dir() else [])
        for path in (path for path in found if path.is_file()):
            self.problems.warn(
                codes.PROJECT_HOOKS_NOT_RUN,
                "voicegate does not run hooks (contract §2.9, under development): "
                "this module is not imported and its hooks never fire",
                path,
            )

    def _read(self, path: Path, code: str) -> tuple[bool, Any]:
        """``(ok, data)`` of a YAML file; a missing file reads as ``(True, None)``."""
        if not path.is_file():
            return True, None
        known = len(self.problems)
        data = self.problems.capture(code, path, lambda: load_yaml(path))
        return len(self.problems) == known, data

    def _integrations(self) -> tuple[Integrations, Any, bool]:
        """The integrations, the raw document, and whether its MCP servers are known."""
        path = self.root / "integrations.yml"
        if not path.is_file():
            return Integrations(), None, True
        ok, data = self._read(path, codes.INTEGRATIONS_INVALID)
        if not ok:
            return Integrations(), None, False
        return parse_integrations(data, str(path), self.problems), data, True

    def _agent(self) -> AgentSettings:
        path = self.root / "agent.yml"
        ok, data = self._read(path, codes.AGENT_INVALID)
        return parse_agent(data, str(path), self.problems) if ok else AgentSettings()

    def _skill_ids(self) -> list[str]:
        folder = self.root / "skills"
        ids = []
        for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
            if not entry.is_dir() or entry.name.startswith((".", "__")):
                continue
            if not (entry / "skill.md").is_file():
                self.problems.add(codes.PROJECT_LAYOUT, "a skill folder needs a skill.md", entry)
            elif not _SKILL_ID.match(entry.name) or entry.name in (PROJECT, SYSTEM):
                self.problems.add(
                    codes.PROJECT_LAYOUT,
                    f"{entry.name!r} cannot be a skill id (reserved or not a plain name)",
                    entry,
                )
            else:
                ids.append(entry.name)
        return ids

    def _memory(self, skill_ids: list[str]) -> MemorySchema:
        project = self._memory_file(self.root / "memory.yml", PROJECT, parse_project_memory)
        skills = {}
        for skill_id in skill_ids:
            path = self.root / "skills" / skill_id / "memory.yml"
            parsed = self._memory_file(path, skill_id, partial(parse_skill_memory, skill_id))
            skills[skill_id] = parsed or SkillMemory(skill_id)
        return MemorySchema(project or {}, skills)

    def _memory_file(self, path: Path, namespace: str, parse: Callable[[Any, str], T]) -> T | None:
        ok, data = self._read(path, codes.MEMORY_INVALID)
        if ok:
            parsed = self.problems.capture(
                codes.MEMORY_INVALID, path, lambda: parse(data, str(path))
            )
            if parsed is not None:
                return parsed
        self.unjudged.add(namespace)
        return None

    def _responses(
        self, schema: MemorySchema, skill_ids: list[str]
    ) -> tuple[dict[str, Response], frozenset[str]]:
        files: list[tuple[Path, str | None]] = [(self.root / "responses.yml", None)]
        files += [(self.root / "skills" / sid / "responses.yml", sid) for sid in skill_ids]
        registry: dict[str, Response] = {}
        declared: set[str] = set()
        for path, owner in files:
            _, data = self._read(path, codes.RESPONSE_INVALID)
            declared |= _declared_names(data)
            scope = ReadScope(schema, owner, frozenset(self.unjudged))
            for name, response in parse_responses(data, str(path), scope, self.problems).items():
                if name in registry:
                    first = registry[name]
                    self.problems.add(
                        codes.RESPONSE_DUPLICATE_NAME,
                        f"response {name!r} is also declared in "
                        f"{Path(first.path).relative_to(self.root)}:{first.line}",
                        path,
                        response.line,
                    )
                    continue
                registry[name] = response
        return registry, frozenset(declared)

    def _skills(
        self,
        skill_ids: list[str],
        schema: MemorySchema,
        local: Mapping[str, LoadedTools],
        shared: LoadedTools,
        servers: Mapping[str, McpServer] | None,
        responses: frozenset[str],
    ) -> dict[str, Skill]:
        facts = ProjectFacts(frozenset(skill_ids), responses)
        skills = {}
        for skill_id in skill_ids:
            folder = self.root / "skills" / skill_id
            path = str(folder / "skill.md")
            read = read_skill_md(folder / "skill.md", skill_id, self.problems)
            source = read or SkillSource(Frontmatter(), SkillBody())
            imports = source.frontmatter.import_tools
            toolset = resolve_tools(local[skill_id], shared, imports, servers, path, self.problems)
            scope = ReadScope(schema, skill_id, frozenset(self.unjudged))
            SkillChecks(skill_id, path, source, toolset, scope, facts, self.problems).run()
            if read is None:
                continue  # reported; left out of a draft (a body-less skill is a container)
            skills[skill_id] = Skill(
                skill_id,
                local[skill_id].tools,
                folder,
                source.frontmatter,
                source.body,
                toolset.tools,
                toolset.hooks,
            )
        return skills

    def _memory_writes(
        self,
        schema: MemorySchema,
        skills: Mapping[str, Skill],
        local: Mapping[str, LoadedTools],
        shared: LoadedTools,
    ) -> None:
        if PROJECT in self.unjudged:
            return
        for skill_id, loaded in local.items():
            if skill_id not in self.unjudged:
                for module in loaded.modules:
                    check_module_writes(module.path, schema, [skill_id], self.problems)
        for module in shared.modules:
            importers = {
                tool: [
                    skill_id
                    for skill_id, skill in skills.items()
                    if skill_id not in self.unjudged and _imports(skill, tool)
                ]
                for tool in module.tools
            }
            check_shared_module_writes(module.path, schema, importers, self.problems)

    def _references(self, agent: AgentSettings, skill_ids: list[str]) -> ReferenceIndex | None:
        settings = agent.references
        chunks: list[ReferenceChunk] = []
        for path, scope in reference_files(self.root, skill_ids):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                self.problems.add(
                    codes.REFERENCE_UNREADABLE, f"cannot read this reference file: {error}", path
                )
                continue
            source = path.relative_to(self.root).as_posix()
            chunks += chunk_file(text, source, scope, settings.chunk_size, settings.chunk_overlap)
        return Bm25Index(chunks) if chunks else None


def _imports(skill: Skill, tool: str) -> bool:
    """Whether ``skill`` imports the shared tool ``tool`` (as a tool or a post-write hook)."""
    resolved = [*skill.toolset.values(), *skill.hooks.values()]
    return any(item.origin is ToolOrigin.SHARED and item.name == tool for item in resolved)


def _llm_config(document: Any) -> Mapping[str, Any]:
    if not isinstance(document, Mapping):
        return {}
    return {key: document[key] for key in ("llm", "model_groups") if key in document}


def _declared_names(document: Any) -> set[str]:
    """Every response name a file declares, valid or not (so one bad variant does not
    cascade into "response not found" problems elsewhere)."""
    entries = document.get("responses") if isinstance(document, Mapping) else None
    return {str(name) for name in entries} if isinstance(entries, Mapping) else set()
