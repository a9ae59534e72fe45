"""Helpers of the project-loading tests: tiny projects written into a temporary folder."""

from __future__ import annotations

from pathlib import Path

from voicegate.engine.project.loader import inspect_project

AGENT = "agent:\n  persona: You help with cards.\n"
TOOL_HEADER = (
    "from rasa.mantle.tools.decorator import ToolContext, tool\n"
    "from rasa.mantle.tools.result import ToolResult\n\n\n"
)
INTEGRATIONS = (
    "llm: {model_group: main}\n"
    "model_groups:\n  - id: main\n    models:\n      - {provider: openai, model: m}\n"
    "mcp_servers:\n  - name: banking\n    url: https://banking.example.com/mcp\n"
)


def skill_md(front: str = "", body: str = "Help the customer.\n") -> str:
    """A skill.md with the required properties plus ``front``."""
    return f"---\nname: Cards\ndescription: Help with cards.\n{front}---\n{body}"


def tool_source(name: str, body: str = "    return ToolResult()\n", args: str = "") -> str:
    """One ``@tool`` function."""
    return (
        f'@tool(description="The {name} tool")\n'
        f"async def {name}({args}context: ToolContext = None) -> ToolResult:\n{body}\n\n"
    )


def write(root: Path, files: dict[str, str]) -> Path:
    """Write a project: ``agent.yml`` and a ``cards`` skill unless ``files`` replaces them."""
    files = {"agent.yml": AGENT, "skills/cards/skill.md": skill_md(), **files}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def problems(root: Path) -> list[tuple[str, str, int | None]]:
    """``(code, path relative to root, line)`` of every problem of the project in ``root``."""
    report = inspect_project(root)
    resolved = root.resolve()
    return [
        (problem.code, Path(problem.path).relative_to(resolved).as_posix(), problem.line)
        for problem in report.problems
    ]


def codes(root: Path) -> list[str]:
    """The codes of every problem of the project in ``root``."""
    return [code for code, _, _ in problems(root)]
