"""``voicegate validate``'s engine side: every problem of a project, or a summary of it.

:func:`validate_project` loads the project the way the engine does and collects all problems
(each with its code, file and line, contract §9). MCP imports are checked against
``integrations.yml`` only; no server is contacted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate.engine.project.loader import ProjectReport, inspect_project
from voicegate.engine.project.model import Project, ToolOrigin
from voicegate.engine.project.problems import Problem


def validate_project(root: Path) -> ProjectReport:
    """Every problem of the project in ``root`` (and the project itself when there is none)."""
    return inspect_project(root)


@dataclass(frozen=True, slots=True)
class ProjectSummary:
    """Counts that tell a reader what a valid project holds."""

    skills: int
    blocks: int
    local_tools: int
    shared_tools: int
    mcp_tools: int
    responses: int
    reference_files: int
    reference_chunks: int

    def describe(self) -> str:
        """One line of prose: "3 skills (2 blocks), 7 tools (...), 9 responses, ..."."""
        tools = self.local_tools + self.shared_tools + self.mcp_tools
        return (
            f"{_count(self.skills, 'skill')} ({_count(self.blocks, 'ordered block')}), "
            f"{_count(tools, 'tool')} ({self.local_tools} local, {self.shared_tools} shared, "
            f"{self.mcp_tools} MCP), {_count(self.responses, 'response')}, "
            f"{_count(self.reference_files, 'reference file')} "
            f"({_count(self.reference_chunks, 'chunk')})"
        )


def summarize(project: Project) -> ProjectSummary:
    """The counts of a loaded project."""
    chunks = list(project.references.chunks) if project.references is not None else []
    mcp = {
        (tool.server, tool.name)
        for skill in project.skills.values()
        for tool in skill.toolset.values()
        if tool.origin is ToolOrigin.MCP
    }
    return ProjectSummary(
        skills=len(project.skills),
        blocks=sum(len(skill.body.blocks) for skill in project.skills.values()),
        local_tools=sum(len(skill.tools) for skill in project.skills.values()),
        shared_tools=len(project.shared_tools),
        mcp_tools=len(mcp),
        responses=len(project.responses),
        reference_files=len({chunk.source for chunk in chunks}),
        reference_chunks=len(chunks),
    )


def problem_record(problem: Problem, root: Path) -> dict[str, Any]:
    """A problem as a JSON-ready object (``severity``: error or warning); ``path`` is relative
    to the project root."""
    path = problem.location(root).rsplit(":", 1)[0] if problem.line is not None else None
    return {
        "code": problem.code,
        "message": problem.message,
        "path": path if path is not None else problem.location(root),
        "line": problem.line,
        "severity": problem.severity,
    }


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
