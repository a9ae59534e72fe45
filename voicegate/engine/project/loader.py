"""Loading an agent project folder (contract §1) into a :class:`Project`.

A minimal loader: ``agent.yml`` (persona, rules, ``tool_timeout``), ``integrations.yml`` (the
``llm`` settings tools see as ``context.model.llm_config``), the root ``memory.yml``, and per
skill ``skill.md`` (presence only for now), ``memory.yml`` and local tools. Issue 5 adds
skill.md parsing and the validation codes; every error already names its file (and line).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from voicegate.engine.memory.declarations import parse_project_memory, parse_skill_memory
from voicegate.engine.memory.fields import PROJECT, SYSTEM, MemoryField, SkillMemory
from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.project.model import AgentSettings, Project, Skill
from voicegate.engine.project.tool_modules import load_skill_tools, tool_loading
from voicegate.engine.tools.invoke import DEFAULT_TOOL_TIMEOUT
from voicegate.engine.yamlfile import line_of, load_yaml
from voicegate.errors import ProjectError

_SKILL_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")


def load_project(root: Path) -> Project:
    """Load the project in folder ``root``; raises ProjectError naming the bad file."""
    root = root.resolve()
    if not root.is_dir():
        raise ProjectError("not a project folder", path=str(root))
    agent_file = root / "agent.yml"
    if not agent_file.is_file():
        raise ProjectError("agent.yml is missing (every project needs one)", path=str(agent_file))
    agent = parse_agent(load_yaml(agent_file), str(agent_file))
    skill_ids = _skill_ids(root)
    project_memory = _project_memory(root / "memory.yml")
    skill_memory = {skill_id: _skill_memory(root, skill_id) for skill_id in skill_ids}
    with tool_loading(root):
        skills = {
            skill_id: Skill(skill_id, load_skill_tools(root, skill_id), root / "skills" / skill_id)
            for skill_id in skill_ids
        }
    return Project(
        agent=agent,
        memory=MemorySchema(project_memory, skill_memory),
        skills=skills,
        llm_config=_llm_config(root / "integrations.yml"),
        root=root,
    )


def parse_agent(data: Any, path: str) -> AgentSettings:
    """The parts of ``agent.yml`` the engine uses; unknown keys are ignored (contract §2.1)."""
    document = _mapping(data, path, "agent.yml must be a mapping")
    agent = _mapping(document.get("agent") or {}, path, "'agent' must be a mapping")
    persona = agent.get("persona") or ""
    if not isinstance(persona, str):
        raise ProjectError("'agent.persona' must be text", path=path, line=line_of(agent))
    return AgentSettings(
        persona=persona.strip(),
        rules=_rules(document.get("rules"), path),
        tool_timeout=_tool_timeout(document.get("tool_timeout", DEFAULT_TOOL_TIMEOUT), path),
    )


def _rules(raw: Any, path: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ProjectError("'rules' must be a list of sentences", path=path)
    for rule in raw:
        if not isinstance(rule, str):
            raise ProjectError(
                f"rule {rule!r} is not text; quote a rule that contains ': ' (YAML reads it as "
                "a mapping)",
                path=path,
                line=line_of(rule),
            )
    return tuple(raw)


def _tool_timeout(raw: Any, path: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
        raise ProjectError(
            f"'tool_timeout' must be a positive number of seconds, got {raw!r}", path=path
        )
    return float(raw)


def _skill_ids(root: Path) -> list[str]:
    folder = root / "skills"
    if not folder.is_dir():
        return []
    ids = []
    for entry in sorted(folder.iterdir()):
        if not entry.is_dir() or entry.name.startswith((".", "__")):
            continue
        if not (entry / "skill.md").is_file():
            raise ProjectError("a skill folder needs a skill.md", path=str(entry))
        if not _SKILL_ID.match(entry.name) or entry.name in (PROJECT, SYSTEM):
            raise ProjectError(
                f"{entry.name!r} cannot be a skill id (reserved or not a plain name)",
                path=str(entry),
            )
        ids.append(entry.name)
    return ids


def _project_memory(path: Path) -> dict[str, MemoryField]:
    return parse_project_memory(load_yaml(path), str(path)) if path.is_file() else {}


def _skill_memory(root: Path, skill_id: str) -> SkillMemory:
    path = root / "skills" / skill_id / "memory.yml"
    if not path.is_file():
        return SkillMemory(skill_id)
    return parse_skill_memory(skill_id, load_yaml(path), str(path))


def _llm_config(path: Path) -> Mapping[str, Any]:
    if not path.is_file():
        return {}
    document = _mapping(load_yaml(path) or {}, str(path), "integrations.yml must be a mapping")
    return {key: document[key] for key in ("llm", "model_groups") if key in document}


def _mapping(data: Any, path: str, message: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise ProjectError(message, path=path, line=line_of(data))
    return data
