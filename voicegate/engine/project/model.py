"""A loaded agent project: the typed model the execution loop consumes.

Everything here is a frozen dataclass holding what the files say, parsed and checked; nothing
here behaves. :class:`Project` and :class:`Skill` can also be built in code (tests), where the
parsed parts default to empty.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.project.config_model import Integrations, ReferenceSettings
from voicegate.engine.project.references import ReferenceIndex
from voicegate.engine.project.response_model import Response
from voicegate.engine.project.skill_model import Frontmatter, SkillBody
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.decorator import Tool
from voicegate.engine.tools.invoke import DEFAULT_TOOL_TIMEOUT


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """What ``agent.yml`` says (contract §2.1); unknown keys were ignored.

    ``agent_id`` stays empty when the file has none: voicegate never writes into a project,
    so it does not generate and write back an id the way Mantle does.
    """

    persona: str = ""
    rules: tuple[str, ...] = ()
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    agent_id: str = ""
    language: str = "en"
    voice: Mapping[str, Any] | None = None
    prompts: Mapping[str, Any] = field(default_factory=dict)
    references: ReferenceSettings = field(default_factory=ReferenceSettings)
    before_end: tuple[str, ...] = ()
    session_config: Mapping[str, Any] = field(default_factory=dict)


class ToolOrigin(enum.Enum):
    """Where a skill's tool comes from (tools reference, "Where tools are discovered")."""

    LOCAL = "local"  # skills/<id>/tools.py or skills/<id>/tools/*.py
    SHARED = "shared"  # tools/*.py at the root, listed in import_tools
    MCP = "mcp"  # mcp/<server>:<tool> in import_tools


@dataclass(frozen=True, slots=True)
class ResolvedTool:
    """A tool a skill may use, by the bare name the LLM and ``tool_constraints`` see.

    ``tool`` is the Python ``@tool`` for local and shared tools; ``server`` names the MCP server
    of a remote tool, whose schema is only known once the server is connected.
    """

    name: str
    origin: ToolOrigin
    tool: Tool | None = None
    server: str | None = None


@dataclass(frozen=True, slots=True)
class Skill:
    """One ``skills/<id>/`` folder: the id is the folder name (contract §1).

    ``tools`` are the skill's own ``@tool`` functions (post-write hooks included);
    ``toolset`` is every tool the skill may use after resolution (local, imported shared,
    imported MCP), by bare name, hooks excluded; ``hooks`` are the post-write hooks
    (``run_after_setting_<entry>``, local or imported) by tool name.
    """

    skill_id: str
    tools: Mapping[str, Tool] = field(default_factory=dict)
    path: Path | None = None
    frontmatter: Frontmatter = field(default_factory=Frontmatter)
    body: SkillBody = field(default_factory=SkillBody)
    toolset: Mapping[str, ResolvedTool] = field(default_factory=dict)
    hooks: Mapping[str, ResolvedTool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Project:
    """An agent project, loaded from a folder or built in code (tests).

    ``llm_config`` is the ``llm`` and ``model_groups`` sections tools see as
    ``context.model.llm_config``; ``references`` is the knowledge index, None when the
    project ships no reference text.
    """

    agent: AgentSettings = field(default_factory=AgentSettings)
    memory: MemorySchema = field(default_factory=MemorySchema)
    skills: Mapping[str, Skill] = field(default_factory=dict)
    llm_config: Mapping[str, Any] = field(default_factory=dict)
    root: Path | None = None
    integrations: Integrations = field(default_factory=Integrations)
    responses: Mapping[str, Response] = field(default_factory=dict)
    shared_tools: Mapping[str, Tool] = field(default_factory=dict)
    references: ReferenceIndex | None = None

    def tool_catalog(self) -> ToolCatalog:
        """Every skill's local tools."""
        return ToolCatalog({skill_id: skill.tools for skill_id, skill in self.skills.items()})
