"""A loaded agent project: the parts the engine needs so far.

Issue 5 grows this into the full model (skill.md, responses, conditions, validation codes);
for now it carries agent settings, memory declarations and each skill's local tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.decorator import Tool
from voicegate.engine.tools.invoke import DEFAULT_TOOL_TIMEOUT


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """What ``agent.yml`` says that the engine uses now (contract §2.1)."""

    persona: str = ""
    rules: tuple[str, ...] = ()
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT


@dataclass(frozen=True, slots=True)
class Skill:
    """One ``skills/<id>/`` folder: the id is the folder name (contract §1)."""

    skill_id: str
    tools: Mapping[str, Tool] = field(default_factory=dict)
    path: Path | None = None


@dataclass(frozen=True, slots=True)
class Project:
    """An agent project, loaded from a folder or built in code (tests)."""

    agent: AgentSettings = field(default_factory=AgentSettings)
    memory: MemorySchema = field(default_factory=MemorySchema)
    skills: Mapping[str, Skill] = field(default_factory=dict)
    llm_config: Mapping[str, Any] = field(default_factory=dict)
    root: Path | None = None

    def tool_catalog(self) -> ToolCatalog:
        """Every skill's local tools."""
        return ToolCatalog({skill_id: skill.tools for skill_id, skill in self.skills.items()})
